// The run's summary: what each rank reports to rank 0, and the table rank 0 prints from it.
#pragma once

#include "options.h"
#include "world.h"

#include "executor/executor.h"
#include "initrt/base/program_io.h"

#include <array>
#include <string>
#include <vector>

namespace initrt::init {

// Statistics each rank sends to rank 0 for the summary.
struct RankStats {
  double bytes = 0;          // bytes of the rank's shards
  double elements = 0;
  double seconds = 0;        // compute + checksum + write
  double peakRssBytes = 0;
  double skipped = 0;        // 1 if the rank's file was already complete
  double loaded = 0;         // elements read from base checkpoints (init.load)
  double rebased = 0;        // 1 if a whole shard was rewritten: its base checkpoint changed
  double unchecked = 0;      // 1 if it was kept without its base checkpoint to compare with
  double damaged = 0;        // 1 if its file was there but not whole or not as recorded
  static constexpr int kFields = 9;
  std::array<double, kFields> fields() const {
    return {bytes, elements, seconds, peakRssBytes, skipped, loaded, rebased, unchecked, damaged};
  }
};

// Rank 0 gets every rank's stats, RankStats::kFields values per rank in rank order.
std::vector<double> gatherStats(World &world, const RankStats &stats);

// This process's peak resident memory.
double peakRssBytes();

// "tp=2,dp=4", or "(single device)".
std::string meshText(const Mesh &mesh);

// Rank 0 prints the table (to stderr) from `stats`, gathered from `ranks` ranks.
void printSummary(const Program &program, const Options &options, const std::vector<double> &stats,
                  int ranks, int threads, const CpuShare &cpuShare, double wallSeconds,
                  const std::string &kernelCpu);

} // namespace initrt::init
