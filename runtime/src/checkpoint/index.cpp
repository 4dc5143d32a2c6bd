#include "checkpoint/index.h"

#include "checkpoint/records.h"
#include "initrt/base/checksum.h"
#include "initrt/base/files.h"
#include "initrt/base/json_text.h"
#include "checkpoint/shard_file.h"

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
//===----------------------------------------------------------------------===//
// index.json
//===----------------------------------------------------------------------===//

std::vector<size_t> replicatedParams(const Program &program) {
  std::vector<size_t> replicated;
  for (size_t index = 0; index < program.params.size(); ++index)
    if (program.params[index].persistent && isReplicated(program.mesh, program.params[index]))
      replicated.push_back(index);
  return replicated;
}

uint64_t shardDigest(const Program &program, const std::vector<std::string> &checksums) {
  StreamingChecksum sum;
  for (size_t index = 0; index < program.params.size() && index < checksums.size(); ++index)
    if (program.params[index].persistent)
      sum.update(checksums[index].data(), checksums[index].size());
  return sum.value();
}

RankReport makeRankReport(const Program &program, const std::vector<std::string> &checksums) {
  RankReport report;
  report.digest = shardDigest(program, checksums);
  for (size_t index : replicatedParams(program)) {
    uint64_t value = 0;
    if (index < checksums.size())
      parseChecksumHex(checksums[index], value);
    report.replicated.push_back(value);
  }
  return report;
}

bool writeIndex(const std::string &dir, const Program &program,
                const std::vector<RankReport> &reports, std::string &error) {
  std::string path = joinPath(dir, kIndexFile);
  const Mesh &mesh = program.mesh;
  int64_t worldSize = mesh.size();
  if (int64_t(reports.size()) != worldSize) {
    error = "cannot write " + path + ": reports of " + std::to_string(reports.size()) +
            " ranks given for a world of " + std::to_string(worldSize);
    return false;
  }
  std::vector<size_t> replicated = replicatedParams(program);
  for (int64_t rank = 0; rank < worldSize; ++rank) {
    if (reports[size_t(rank)].replicated.size() != replicated.size()) {
      error = "cannot write " + path + ": rank " + std::to_string(rank) + " reported " +
              std::to_string(reports[size_t(rank)].replicated.size()) +
              " replicated checksums for " + std::to_string(replicated.size()) + " parameters";
      return false;
    }
  }
  // Every copy of a slice must hold the same bytes: a difference is a rank-dependent result.
  for (size_t j = 0; j < replicated.size(); ++j) {
    const Param &param = program.params[replicated[j]];
    std::vector<int64_t> roots = replicaRoots(mesh, param);
    for (int64_t rank = 0; rank < worldSize; ++rank) {
      int64_t root = roots[size_t(rank)];
      uint64_t expected = reports[size_t(root)].replicated[j];
      uint64_t actual = reports[size_t(rank)].replicated[j];
      if (actual != expected) {
        error = "cannot write " + path + ": " +
                replicaMismatch(param.name, root, rank, expected, actual,
                                param.load ? param.load->file : "");
        return false;
      }
    }
  }

  OrderedJson files = OrderedJson::array();
  OrderedJson digests = OrderedJson::array();
  for (int64_t rank = 0; rank < worldSize; ++rank) {
    files.push_back(shardFileName(rank, worldSize));
    digests.push_back(checksumToHex(reports[size_t(rank)].digest));
  }
  OrderedJson params = OrderedJson::array();
  uint64_t totalBytes = 0, parameterCount = 0;
  for (const Param &param : program.params) {
    if (!param.persistent)
      continue;
    uint64_t elements = elementCount(param.shape);
    totalBytes += elements * uint64_t(dtypeBytes(param.dtype));
    if (!param.buffer)
      parameterCount += elements;

    OrderedJson sharding = OrderedJson::array();
    for (size_t d = 0; d < param.shape.size(); ++d) {
      OrderedJson axes = OrderedJson::array();
      if (d < param.splitAxes.size())
        for (int axis : param.splitAxes[d])
          axes.push_back(axis >= 0 && size_t(axis) < mesh.axisNames.size()
                             ? mesh.axisNames[size_t(axis)]
                             : std::to_string(axis));
      sharding.push_back(std::move(axes));
    }
    OrderedJson entry = OrderedJson::object();
    entry["name"] = param.name;
    entry["aliases"] = param.aliases;
    entry["dtype"] = dtypeName(param.dtype);
    entry["shape"] = param.shape;
    entry["sharding"] = std::move(sharding);
    if (param.stageAxis >= 0) // pipeline placement: only that stage's ranks hold it
      entry["stage"] = {{"axis", mesh.axisNames[size_t(param.stageAxis)]}, {"index", param.stage}};
    entry["buffer"] = param.buffer;
    params.push_back(std::move(entry));
  }

  OrderedJson index = OrderedJson::object();
  index["format"] = kIndexFormat;
  index["version"] = kIndexVersion;
  index["program_id"] = program.programId;
  index["model"] = program.modelName;
  index["seed"] = program.seed;
  index["mesh"] = {{"axes", mesh.axisNames}, {"shape", mesh.shape}};
  index["world_size"] = worldSize;
  index["files"] = std::move(files);
  index["shard_digests"] = std::move(digests);
  index["params"] = std::move(params);
  index["total_bytes"] = totalBytes;
  index["parameter_count"] = parameterCount;
  std::string text;
  try {
    // Compact: a large mesh lists tens of thousands of files and digests.
    index.dump(-1, ' ', false, Json::error_handler_t::strict); // names must be valid UTF-8
    index["checksum"] = indexChecksum(index);
    text = index.dump(-1, ' ', false, Json::error_handler_t::strict) + "\n";
  } catch (const Json::exception &e) {
    error = "cannot write " + path + ": a name is not valid UTF-8";
    return false;
  }
  // A rerun of a finished job has nothing to change: it leaves the index (and a read-only
  // checkpoint) as it is.
  std::string current, unused;
  if (readTextFile(path, current, unused) && current == text)
    return true;
  return writeFileAtomically(path, text, error);
}

} // namespace initrt
