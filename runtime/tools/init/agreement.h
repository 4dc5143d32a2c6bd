// How the ranks of a job agree on failing: one message for the whole job, one exit code.
#pragma once

#include "world.h"

#include <cstdint>
#include <string>

namespace initrt::init {

// Every rank reaches each of these points. When any rank failed, the lowest failing rank prints
// its message (once for the whole job) and every rank learns the exit code.
class Agreement {
public:
  Agreement(World &world, int64_t displayRank) : world(world), displayRank(displayRank) {}

  // Returns 0 when every rank succeeded, else the exit code all ranks should return.
  int settle(int code, const std::string &message);

private:
  World &world;
  int64_t displayRank;
};

} // namespace initrt::init
