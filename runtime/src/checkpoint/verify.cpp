#include "checkpoint/verify.h"

#include "checkpoint/records.h"
#include "initrt/base/checksum.h"
#include "initrt/base/files.h"
#include "initrt/base/json_text.h"
#include "checkpoint/shard_file.h"
#include "executor/executor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace initrt {

using namespace records;
namespace {
/// What verify finds in one rank's file.
struct RankCheck {
  std::vector<std::string> problems;
  std::vector<uint64_t> replicaSums; // of the replicated params, when the file is intact
  std::string otherId;               // the program id of a file that is another program's
};

/// Checks rank `rank`'s file against the index; `checked(bytes)` after each tensor's checksum.
RankCheck checkRankFile(const std::string &dir, const Index &index, int64_t rank,
                        const std::set<std::string> &listed, const std::vector<size_t> &replicated,
                        const std::function<void(uint64_t)> &checked) {
  RankCheck result;
  std::vector<std::string> &problems = result.problems;
  const std::string &file = index.files[size_t(rank)];
  std::string where = "rank " + std::to_string(rank) + " (" + file + ")";
  SafetensorsReader reader;
  std::string readError, why;
  if (!reader.open(joinPath(dir, file), readError)) {
    problems.push_back(where + ": " + readError + ": " + rerunHint(dir, rank));
    return result;
  }
  if (!shardMetadataMatches(reader, index.programId, rank, index.worldSize, why, &result.otherId)) {
    problems.push_back(where + ": " + why + ": " + rerunHint(dir, rank, !result.otherId.empty()));
    return result;
  }
  std::map<std::string, ShardTensorRecord> records;
  if (!parseShardTensors(reader, records, readError)) {
    problems.push_back(where + ": " + readError + ": " + rerunHint(dir, rank));
    return result;
  }

  // Each parameter's problem, if any: its entry first, then its bytes. The bytes are read in
  // the order they lie in the file, front to back, which is what lets the kernel read ahead.
  std::vector<std::string> trouble(index.params.size());
  std::vector<std::pair<const SafetensorsEntry *, size_t>> toRead; // entry, p
  std::vector<uint64_t> sums(index.params.size(), 0);
  for (size_t p = 0; p < index.params.size(); ++p) {
    if (!onParamStage(index.mesh, index.params[p].param, rank)) { // not in the file
      parseChecksumHex(emptyChecksum(), sums[p]);
      continue;
    }
    if (const SafetensorsEntry *entry =
            indexedEntry(reader, records, index, index.params[p], rank, trouble[p]))
      toRead.push_back({entry, p});
  }
  std::sort(toRead.begin(), toRead.end(),
            [](const auto &a, const auto &b) { return a.first->begin < b.first->begin; });
  for (const auto &[entry, p] : toRead) {
    std::string actual;
    bool readable = reader.checksum(*entry, actual, trouble[p]);
    checked(entry->bytes());
    if (readable && (actual != records.at(index.params[p].param.name).checksum ||
                     !parseChecksumHex(actual, sums[p])))
      trouble[p] = "checksum mismatch, the file is corrupt";
  }
  bool intact = true; // every listed tensor is there as the index expects it
  for (size_t p = 0; p < index.params.size(); ++p)
    if (!trouble[p].empty()) {
      problems.push_back(index.params[p].param.name + " on " + where + ": " + trouble[p] + ": " +
                         rerunHint(dir, rank));
      intact = false;
    }
  for (const SafetensorsEntry &entry : reader.tensors())
    if (!listed.count(entry.name))
      problems.push_back(entry.name + " on " + where + ": not listed in index.json: " +
                         rerunHint(dir, rank));
  uint64_t digest = 0;
  if (!intact)
    return result; // already reported
  if (!recordsDigest(index, records, rank, digest) || digest != index.digests[size_t(rank)]) {
    problems.push_back(where + ": " + kNotThisJobsFile + ": " + rerunHint(dir, rank));
    return result;
  }
  for (size_t p : replicated)
    result.replicaSums.push_back(sums[p]);
  return result;
}
} // namespace

bool holdsHfRecord(const std::string &dir) {
  struct stat record;
  return ::stat(joinPath(dir, "initc-checkpoint.json").c_str(), &record) == 0;
}

bool verifyCheckpoint(const std::string &dir, std::vector<std::string> &problems,
                      std::string &error, const ProgressFn &progress, int threads) {
  problems.clear();
  // Each layout's files name it.
  if (holdsDcpFiles(dir))
    return verifyDcpCheckpoint(dir, problems, error, progress, threads);
  if (holdsHfRecord(dir))
    return verifyHfCheckpoint(dir, problems, error, progress, threads);
  Index index;
  if (!readIndex(dir, index, error))
    return false;
  std::vector<size_t> replicated;
  for (size_t p = 0; p < index.params.size(); ++p)
    if (isReplicated(index.mesh, index.params[p].param))
      replicated.push_back(p);
  std::set<std::string> listed;
  for (const IndexParam &item : index.params)
    listed.insert(item.param.name);
  // Every rank's slices, replicas included: what reading all the files checks.
  uint64_t total = 0, checked = 0;
  if (progress)
    for (const IndexParam &item : index.params) {
      uint64_t elementBits = uint64_t(safetensorsDTypeBits(item.dtype));
      for (int64_t rank = 0; rank < index.worldSize; ++rank)
        total += sliceForRank(index.mesh, item.param, rank).numElements() * elementBits / 8;
    }

  // Workers take ranks in turn, each reading one file at a time, so memory stays a few file
  // headers whatever the mesh; the findings are reported in rank order.
  std::vector<RankCheck> checks(size_t(index.worldSize));
  std::atomic<int64_t> next{0};
  std::mutex progressLock;
  auto onChecked = [&](uint64_t bytes) {
    if (!progress)
      return;
    std::lock_guard<std::mutex> hold(progressLock);
    progress(checked += bytes, total);
  };
  auto work = [&] {
    for (int64_t rank; (rank = next++) < index.worldSize;)
      checks[size_t(rank)] = checkRankFile(dir, index, rank, listed, replicated, onChecked);
  };
  runOnThreads(int(std::min<int64_t>(resolveThreads(threads), index.worldSize)), work);

  // Every shard of one other program: the index and the shards are two checkpoints' (one side
  // copied over the other), and the job of whichever is wanted, with --overwrite, mends it.
  const std::string &firstId = checks.front().otherId;
  if (index.worldSize > 1 && firstId.size() > 1 &&
      std::all_of(checks.begin(), checks.end(),
                  [&](const RankCheck &c) { return c.otherId == firstId; })) {
    problems.push_back(joinPath(dir, kIndexFile) + " has program id " + index.programId +
                       ", but all " + std::to_string(index.worldSize) + " shards have program id " +
                       firstId +
                       ": the index or the shards were copied from another checkpoint; with "
                       "the prog/init of the one you want, " +
                       rerunJobHint(dir, /*overwrite=*/true));
    if (progress)
      progress(total, total);
    return false;
  }
  for (RankCheck &check : checks)
    for (std::string &problem : check.problems)
      problems.push_back(std::move(problem));
  for (size_t j = 0; j < replicated.size(); ++j) {
    const Param &param = index.params[replicated[j]].param;
    std::vector<int64_t> roots = replicaRoots(index.mesh, param);
    for (int64_t rank = 0; rank < index.worldSize; ++rank) {
      const std::vector<uint64_t> &mine = checks[size_t(rank)].replicaSums;
      const std::vector<uint64_t> &root = checks[size_t(roots[size_t(rank)])].replicaSums;
      if (!mine.empty() && !root.empty() && mine[j] != root[j])
        problems.push_back(replicaMismatch(param.name, roots[size_t(rank)], rank, root[j], mine[j]));
    }
  }
  if (progress)
    progress(total, total); // missing or unreadable files end the bar too
  return problems.empty();
}

} // namespace initrt
