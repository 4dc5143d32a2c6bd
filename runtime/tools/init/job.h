// The job itself: read the program, check that the ranks agree on it, compute this rank's
// shards and write them (and, on rank 0, index.json), then print the summary.
#pragma once

#include "options.h"
#include "world.h"

#include <cstdint>
#include <string>

namespace initrt::init {

// Runs this rank (`myRank` of the mesh; `launcher` names who started the job, empty if none:
// a Launch::launcher) and returns its
// exit code, the same on every rank. An exception ends the rank with a message, and, in a job of
// several ranks, the job (World::abortJob): the other ranks may wait in a collective.
int runGuarded(World &world, const Options &options, int64_t myRank,
               const std::string &launcher);

} // namespace initrt::init
