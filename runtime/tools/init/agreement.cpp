#include "agreement.h"

#include "options.h"

#include <climits>
#include <cstdio>

namespace initrt::init {

int Agreement::settle(int code, const std::string &message) {
  int failing = world.minInt(code == kExitOk ? INT_MAX : world.rank());
  if (failing == INT_MAX)
    return kExitOk;
  if (failing == world.rank()) {
    std::string where = world.size() > 1 || displayRank > 0
                            ? " (rank " + std::to_string(displayRank) + ")"
                            : "";
    std::fprintf(stderr, "%s: error%s: %s\n", programName.c_str(), where.c_str(),
                 message.c_str());
  }
  return world.maxInt(code);
}

} // namespace initrt::init
