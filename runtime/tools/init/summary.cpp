#include "summary.h"

#include "initrt/base/report.h"

#include <algorithm>
#include <cstdio>
#include <sys/resource.h>

namespace initrt::init {

std::vector<double> gatherStats(World &world, const RankStats &stats) {
  std::array<double, RankStats::kFields> mine = stats.fields();
  return world.gatherToRoot(std::vector<double>(mine.begin(), mine.end()));
}

std::string meshText(const Mesh &mesh) {
  std::string text;
  for (size_t i = 0; i < mesh.shape.size(); ++i)
    text += (i ? "," : "") + mesh.axisNames[i] + "=" + std::to_string(mesh.shape[i]);
  return text.empty() ? "(single device)" : text;
}

double peakRssBytes() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  return double(usage.ru_maxrss) * 1024.0; // Linux reports KiB
}

namespace {

std::string formatCount(double value) {
  std::string digits = std::to_string(int64_t(value));
  std::string text;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      text += ',';
    text += digits[i];
  }
  return text;
}

// The ranks whose stats field `field` is set, as ranges ("0-1, 3"), the first few of them.
std::string rankRanges(const std::vector<double> &stats, int ranks, int field) {
  auto set = [&](int r) { return stats[size_t(r) * RankStats::kFields + size_t(field)] != 0; };
  std::string list;
  int shown = 0;
  for (int r = 0; r < ranks; ++r) {
    if (!set(r))
      continue;
    int last = r;
    while (last + 1 < ranks && set(last + 1))
      ++last;
    if (shown++ == 8)
      return list + ", ...";
    list += (list.empty() ? "" : ", ") + std::to_string(r) +
            (last > r ? "-" + std::to_string(last) : "");
    r = last;
  }
  return list;
}

} // namespace

void printSummary(const Program &program, const Options &options, const std::vector<double> &stats,
                  int ranks, int threads, const CpuShare &cpuShare, double wallSeconds,
                  const std::string &kernelCpu) {
  double bytes = 0, written = 0, elements = 0, loaded = 0, slowest = 0, maxRss = 0;
  double maxShardBytes = 0;
  int slowestRank = 0, maxRssRank = 0, skipped = 0, rebased = 0, unchecked = 0, damaged = 0;
  // stats are indexed by the job's ranks; a lone --rank run is that one rank.
  auto rankName = [&](int r) { return std::to_string(options.rank >= 0 ? options.rank : r); };
  for (int r = 0; r < ranks; ++r) {
    const double *s = &stats[size_t(r) * RankStats::kFields];
    bytes += s[0];
    written += s[4] != 0 ? 0 : s[0];
    elements += s[4] != 0 ? 0 : s[1]; // a complete rank computed nothing
    loaded += s[4] != 0 ? 0 : s[5];
    if (s[2] > slowest) {
      slowest = s[2];
      slowestRank = r;
    }
    if (s[3] > maxRss) {
      maxRss = s[3];
      maxRssRank = r;
    }
    maxShardBytes = std::max(maxShardBytes, s[0]);
    skipped += s[4] != 0;
    rebased += s[6] != 0;
    unchecked += s[7] != 0;
    damaged += s[8] != 0;
  }
  double modelElements = 0;
  for (const Param &param : program.params)
    if (param.persistent)
      modelElements += double(param.numElements());
  auto row = [](const char *label, const std::string &value) {
    std::fprintf(stderr, "  %-15s %s\n", label, value.c_str());
  };
  std::fprintf(stderr, "%s: %s on mesh %s\n", programName.c_str(), program.modelName.c_str(),
               meshText(program.mesh).c_str());
  std::string rankText = std::to_string(ranks);
  if (options.rank >= 0)
    rankText = "1 (rank " + std::to_string(options.rank) + " of " +
               std::to_string(program.mesh.size()) + ")";
  // Which, in a job: a rerun's record of what it kept and what it computed again.
  if (skipped)
    rankText += ", " + std::to_string(skipped) + " already complete" +
                (options.rank < 0 ? " (" + rankRanges(stats, ranks, 4) + ")" : "");
  if (unchecked)
    rankText +=
        ", " +
        (unchecked == skipped ? std::string("none") : std::to_string(unchecked) + " of them") +
        " compared with their base checkpoint, which is absent";
  if (rebased)
    rankText += ", " + std::to_string(rebased) + " computed again, their base checkpoint changed" +
                (options.rank < 0 ? " (" + rankRanges(stats, ranks, 6) + ")" : "");
  // A file that was there, under its final name, and is not whole: the storage lost or changed
  // bytes since it was written, which whoever keeps checkpoints there wants to know.
  if (damaged)
    rankText += ", " + std::to_string(damaged) + " computed again over a damaged file" +
                (options.rank < 0 ? " (" + rankRanges(stats, ranks, 8) + ")" : "");
  row("ranks", rankText);
  row("parameters", std::to_string(program.params.size()));
  row("kernels", "compiled for " + kernelCpu + " (rank " + rankName(0) + ")");
  std::string why = ", one per CPU it may run on";
  if (options.threads > 0)
    why = ", --threads";
  else if (cpuShare.sharing > 1)
    why = ", its share of the " + std::to_string(cpuShare.cpus) + " CPU" +
          (cpuShare.cpus == 1 ? "" : "s") + " it may run on with " +
          std::to_string(cpuShare.sharing - 1) + " other rank" +
          (cpuShare.sharing == 2 ? "" : "s") + " of its host";
  row("threads", std::to_string(threads) + " (rank " + rankName(0) + why + ")");
  row("elements",
      formatCount(modelElements) + " in the model, " + formatCount(elements - loaded) +
          " computed" +
          (loaded > 0 ? ", " + formatCount(loaded) + " read from base checkpoints" : "") +
          // A layout that stores each element once (dcp, hf) computes no replica.
          (elements > modelElements ? " (replicas included)" : ""));
  if (options.discard)
    row("bytes computed", formatBytes(bytes) + " (--discard: nothing written)");
  else
    row("bytes written", formatBytes(written) + " to " + options.out +
                             (skipped ? " (" + formatBytes(bytes - written) + " already there)" : ""));
  char text[128];
  std::snprintf(text, sizeof(text), "%.3f s", wallSeconds);
  row("time", text);
  std::snprintf(text, sizeof(text), "%s/s",
                formatBytes(wallSeconds > 0 ? (options.discard ? bytes : written) / wallSeconds : 0)
                    .c_str());
  row("throughput", skipped == ranks ? "- (every rank was already complete)" : text);
  std::snprintf(text, sizeof(text), "rank %s, %.3f s", rankName(slowestRank).c_str(), slowest);
  row("slowest rank", text);
  row("peak memory", "max RSS " + formatBytes(maxRss) + " (rank " + rankName(maxRssRank) +
                         ") vs largest rank's shards " + formatBytes(maxShardBytes));
}

} // namespace initrt::init
