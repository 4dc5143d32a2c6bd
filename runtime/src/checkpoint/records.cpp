#include "checkpoint/records.h"

#include "checkpoint/shard_file.h"
#include "initrt/base/checksum.h"
#include "initrt/base/files.h"
#include "initrt/base/json_text.h"
#include "initrt/base/sharding.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace initrt::records {

std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// `overwrite`: the file is another program's, which prog/init replaces only when told to.
std::string rerunHint(const std::string &dir, int64_t rank, bool overwrite) {
  return "rerun `prog/init --layout ranks --rank " + std::to_string(rank) + " --out " + dir +
         (overwrite ? " --overwrite" : "") + "` to regenerate it";
}

// A lone `--rank` run never writes index.json: only the whole job (every rank) does.
std::string rerunJobHint(const std::string &dir, bool overwrite) {
  return "rerun the whole job (`mpirun -np N prog/init --layout ranks --out " + dir +
         (overwrite ? " --overwrite" : "") +
         "`): ranks already complete are skipped and index.json is written again";
}

bool parseRankFileName(const std::string &name, const std::string &prefix, int64_t &rank,
                       int64_t &worldSize) {
  auto digitsAt = [&](size_t &pos, int64_t &value) {
    size_t start = pos;
    value = 0;
    while (pos < name.size() && name[pos] >= '0' && name[pos] <= '9' && pos - start < 18)
      value = value * 10 + (name[pos++] - '0');
    return pos - start >= 5;
  };
  if (name.compare(0, prefix.size(), prefix) != 0)
    return false;
  size_t pos = prefix.size();
  if (!digitsAt(pos, rank) || name.compare(pos, 4, "-of-") != 0)
    return false;
  pos += 4;
  if (!digitsAt(pos, worldSize))
    return false;
  return name.compare(pos, std::string::npos, ".safetensors") == 0;
}

/// Parses "rank-00003-of-00004.safetensors" (5 or more digits each).
bool parseShardFileName(const std::string &name, int64_t &rank, int64_t &worldSize) {
  return parseRankFileName(name, "rank-", rank, worldSize);
}

std::string rankFileName(const std::string &prefix, int64_t rank, int64_t worldSize) {
  char digits[64];
  std::snprintf(digits, sizeof(digits), "%05lld-of-%05lld.safetensors", (long long)rank,
                (long long)worldSize);
  return prefix + digits;
}

std::string linkTargetInDir(const std::string &dir, const std::string &path) {
  std::string target = writtenPath(path);
  if (target == path)
    return "";
  size_t slash = target.rfind('/');
  std::string targetDir = slash == std::string::npos ? "." : target.substr(0, slash + 1);
  std::string targetName = slash == std::string::npos ? target : target.substr(slash + 1);
  char *here = ::realpath(dir.c_str(), nullptr), *there = ::realpath(targetDir.c_str(), nullptr);
  bool sameDir = here && there && std::strcmp(here, there) == 0;
  std::free(here);
  std::free(there);
  return sameDir ? targetName : "";
}

bool listDirectory(const std::string &dir, std::vector<std::string> &names, std::string &error) {
  names.clear();
  DIR *listing = ::opendir(dir.c_str());
  if (!listing) {
    error = "cannot list " + dir + ": " + std::strerror(errno);
    return false;
  }
  while (dirent *entry = ::readdir(listing))
    names.emplace_back(entry->d_name);
  ::closedir(listing);
  std::sort(names.begin(), names.end());
  return true;
}

bool parseShardTensors(const SafetensorsReader &reader,
                       std::map<std::string, ShardTensorRecord> &records, std::string &error) {
  const std::string *text = reader.metadataValue("initc.tensors");
  if (!text) {
    error = reader.path() + ": no initc.tensors metadata: not an initc shard file";
    return false;
  }
  Json json;
  std::string why;
  if (!parseJsonText(*text, json, why)) {
    error = reader.path() + ": malformed initc.tensors metadata: " + why;
    return false;
  }
  try {
    for (auto &[name, value] : json.items()) {
      ShardTensorRecord record;
      record.globalShape = value.at("global_shape").get<std::vector<int64_t>>();
      record.offset = value.at("offset").get<std::vector<int64_t>>();
      record.checksum = value.at("checksum").get<std::string>();
      records[name] = std::move(record);
    }
  } catch (const Json::exception &e) {
    error = reader.path() + ": malformed initc.tensors metadata: " + e.what();
    return false;
  }
  return true;
}

/// Checks the file-level metadata of a shard file; `why` says what is wrong, and `otherId` is
/// set to the program id of a file that is another program's ("-" for a file not initc's).
bool shardMetadataMatches(const SafetensorsReader &reader, const std::string &programId,
                          int64_t rank, int64_t worldSize, std::string &why,
                          std::string *otherId) {
  const std::string *id = reader.metadataValue("initc.program_id");
  const std::string *fileRank = reader.metadataValue("initc.rank");
  const std::string *fileWorld = reader.metadataValue("initc.world_size");
  if (!id || !fileRank || !fileWorld) {
    why = "not an initc shard file (no initc.program_id/rank/world_size metadata)";
    if (otherId)
      *otherId = "-";
    return false;
  }
  if (*id != programId) {
    why = "belongs to another program (program id " + *id + ", expected " + programId + ")";
    if (otherId)
      *otherId = *id;
    return false;
  }
  if (*fileRank != std::to_string(rank) || *fileWorld != std::to_string(worldSize)) {
    why = "records rank " + *fileRank + " of " + *fileWorld + ", expected " +
          std::to_string(rank) + " of " + std::to_string(worldSize);
    return false;
  }
  return true;
}

/// Rank `rank`'s entry for `item`, checked against its initc.tensors record and the index; null
/// with `why` saying what is wrong: missing, or what the file holds against what the index
/// expects ("the file holds F32 [2, 3] at [2, 0], the index expects ..."; the global shape is
/// named when it is what differs).
const SafetensorsEntry *indexedEntry(const SafetensorsReader &reader,
                                     const std::map<std::string, ShardTensorRecord> &records,
                                     const Index &index, const IndexParam &item, int64_t rank,
                                     std::string &why) {
  const SafetensorsEntry *entry = reader.find(item.param.name);
  auto record = records.find(item.param.name);
  if (!entry || record == records.end()) {
    why = entry ? "no initc.tensors entry" : "missing from the file";
    return nullptr;
  }
  Slice want = sliceForRank(index.mesh, item.param, rank);
  const ShardTensorRecord &has = record->second;
  if (entry->dtype == item.dtype && entry->shape == want.shape && has.offset == want.offset &&
      has.globalShape == item.param.shape)
    return entry;
  bool global = has.globalShape != item.param.shape;
  why = "the file holds " + entry->dtype + " " + shapeText(entry->shape) + " at " +
        shapeText(has.offset) +
        (global ? " of a tensor of shape " + shapeText(has.globalShape) : "") +
        ", the index expects " + item.dtype + " " + shapeText(want.shape) + " at " +
        shapeText(want.offset) +
        (global ? " of a tensor of shape " + shapeText(item.param.shape) : "");
  return nullptr;
}

/// index.json's text; `error` names the file and what it is instead when it cannot be read.
bool readTextFile(const std::string &path, std::string &text, std::string &error) {
  std::string why;
  ReadFileStatus status = readRegularFile(path, kMaxJsonFileBytes, text, why);
  if (status == ReadFileStatus::Ok)
    return true;
  if (status == ReadFileStatus::NotRegular)
    error = path + " is " + why + ", not a regular file";
  else if (status == ReadFileStatus::TooLarge)
    error = path + " is " + why;
  else
    error = path + ": " + why;
  return false;
}

/// `loadedFrom`: the base checkpoint the parameter is read from (init.load), or "".
std::string replicaMismatch(const std::string &name, int64_t root, int64_t rank, uint64_t a,
                            uint64_t b, const std::string &loadedFrom) {
  std::string what = name + ": ranks " + std::to_string(root) + " and " + std::to_string(rank) +
                     " hold the same slice with different bytes (checksums " + checksumToHex(a) +
                     ", " + checksumToHex(b) + "): ";
  if (!loadedFrom.empty())
    return what + "they read it from different versions of " + loadedFrom +
           " (init.load), changed during the run or not the same file where they ran: give "
           "every rank the same file, then rerun the job with --overwrite";
  return what + "the result depends on the rank, which is a bug; report it";
}

/// XXH3-64 (16 hex digits) of the index as written without its "checksum": compact JSON, keys in
/// the file's order.
std::string indexChecksum(OrderedJson document) {
  document.erase("checksum");
  std::string text = document.dump(-1, ' ', false, Json::error_handler_t::replace);
  return checksumHex(text.data(), text.size());
}

bool readIndex(const std::string &dir, Index &index, std::string &error) {
  struct stat dirInfo;
  if (::stat(dir.c_str(), &dirInfo) != 0) {
    error = "cannot read the checkpoint " + dir + ": " + std::strerror(errno) +
            " (a checkpoint is the directory `prog/init --out DIR` writes)";
    return false;
  }
  if (!S_ISDIR(dirInfo.st_mode)) {
    error = dir + " is " + (S_ISREG(dirInfo.st_mode) ? "a file" : fileKindText(dirInfo.st_mode)) +
            ", not a checkpoint: a checkpoint is the directory `prog/init --out DIR` writes";
    return false;
  }
  std::string path = joinPath(dir, kIndexFile);
  std::string text;
  if (!readTextFile(path, text, error)) {
    struct stat info;
    if (::stat(joinPath(dir, "program.json").c_str(), &info) == 0 &&
        ::stat(path.c_str(), &info) != 0) {
      error = dir + " is a program directory (it holds program.json), not a checkpoint: pass the "
                    "directory its init wrote with --out";
      return false;
    }
    if (::stat(path.c_str(), &info) == 0) // there, but not a file initc wrote
      error += ": " + rerunJobHint(dir, true);
    else
      error += ": not a finished checkpoint (index.json is written when every rank is done): " +
               rerunJobHint(dir, false);
    return false;
  }
  OrderedJson json;
  std::string why;
  if (!parseJsonText(text, json, why)) {
    error = path + " is malformed (" + why + "): " + rerunJobHint(dir, true);
    return false;
  }
  try {
    if (json.at("format").get<std::string>() != kIndexFormat)
      throw std::runtime_error("format is not \"" + std::string(kIndexFormat) + "\"");
    if (json.at("version").get<int>() != kIndexVersion)
      throw std::runtime_error("version " + json.at("version").dump() +
                               " is not supported (this runtime reads version " +
                               std::to_string(kIndexVersion) + ")");
    // Every field is covered: an edited seed, dtype, alias or digest is the index's damage, and
    // is reported as such, once, rather than blamed on every shard or passed as valid.
    std::string expected = indexChecksum(json);
    auto recorded = json.find("checksum");
    if (recorded == json.end() || !recorded->is_string() ||
        recorded->get<std::string>() != expected) {
      error = path + ": the contents do not match its \"checksum\" (" +
              (recorded == json.end() ? std::string("none") : recorded->dump()) +
              ", the contents give \"" + expected +
              "\"): index.json was edited or is damaged, the shards are not at fault: " +
              rerunJobHint(dir, true);
      return false;
    }
    index.programId = json.at("program_id").get<std::string>();
    index.worldSize = json.at("world_size").get<int64_t>();
    index.mesh.axisNames = json.at("mesh").at("axes").get<std::vector<std::string>>();
    index.mesh.shape = json.at("mesh").at("shape").get<std::vector<int64_t>>();
    if (index.mesh.axisNames.size() != index.mesh.shape.size())
      throw std::runtime_error("mesh axes and shape differ in length");
    int64_t meshSize = 1;
    for (int64_t size : index.mesh.shape) {
      if (size <= 0)
        throw std::runtime_error("mesh axis of size " + std::to_string(size));
      if (size > index.worldSize / meshSize) { // more ranks than world_size, without overflow
        meshSize = 0;
        break;
      }
      meshSize *= size;
    }
    if (index.worldSize <= 0 || meshSize != index.worldSize)
      throw std::runtime_error("the mesh does not have world_size ranks");
    index.files = json.at("files").get<std::vector<std::string>>();
    if (int64_t(index.files.size()) != index.worldSize)
      throw std::runtime_error("files does not list world_size files");
    // Files are read by these names: only the shard names of this directory are accepted.
    for (int64_t rank = 0; rank < index.worldSize; ++rank)
      if (index.files[size_t(rank)] != shardFileName(rank, index.worldSize))
        throw std::runtime_error("files[" + std::to_string(rank) + "] is \"" +
                                 index.files[size_t(rank)] + "\", not " +
                                 shardFileName(rank, index.worldSize));
    for (const auto &digest : json.at("shard_digests")) {
      uint64_t value;
      if (!parseChecksumHex(digest.get<std::string>(), value))
        throw std::runtime_error("shard digest " + digest.dump() + " is not 16 hex digits");
      index.digests.push_back(value);
    }
    if (int64_t(index.digests.size()) != index.worldSize)
      throw std::runtime_error("shard_digests does not list world_size digests");
    for (const auto &entry : json.at("params")) {
      IndexParam item;
      Param &param = item.param;
      param.name = entry.at("name").get<std::string>();
      param.aliases = entry.at("aliases").get<std::vector<std::string>>();
      item.dtype = entry.at("dtype").get<std::string>();
      param.shape = entry.at("shape").get<std::vector<int64_t>>();
      param.buffer = entry.at("buffer").get<bool>();
      DType written; // the dtypes a program can have: no sub-byte ones
      if (!parseDType(item.dtype, written))
        throw std::runtime_error(param.name + ": dtype " + item.dtype + " is not one initc writes");
      for (int64_t dim : param.shape)
        if (dim < 0)
          throw std::runtime_error(param.name + ": negative dimension");
      const auto &sharding = entry.at("sharding");
      if (sharding.size() != param.shape.size())
        throw std::runtime_error(param.name + ": sharding does not list every dim");
      std::vector<bool> used(index.mesh.shape.size(), false);
      for (const auto &dim : sharding) {
        std::vector<int> axes;
        for (const std::string &name : dim.get<std::vector<std::string>>()) {
          auto found = std::find(index.mesh.axisNames.begin(), index.mesh.axisNames.end(), name);
          if (found == index.mesh.axisNames.end())
            throw std::runtime_error(param.name + ": sharding names unknown mesh axis " + name);
          size_t axis = size_t(found - index.mesh.axisNames.begin());
          if (used[axis])
            throw std::runtime_error(param.name + ": mesh axis " + name + " splits two dims");
          used[axis] = true;
          axes.push_back(int(axis));
        }
        param.splitAxes.push_back(std::move(axes));
      }
      if (entry.contains("stage")) { // pipeline placement (ir-spec/sharding.md)
        const std::string name = entry.at("stage").at("axis").get<std::string>();
        auto found = std::find(index.mesh.axisNames.begin(), index.mesh.axisNames.end(), name);
        if (found == index.mesh.axisNames.end())
          throw std::runtime_error(param.name + ": stage names unknown mesh axis " + name);
        param.stageAxis = int(found - index.mesh.axisNames.begin());
        param.stage = entry.at("stage").at("index").get<int64_t>();
        if (used[size_t(param.stageAxis)] || param.stage < 0 ||
            param.stage >= index.mesh.shape[size_t(param.stageAxis)] || param.shape.empty())
          throw std::runtime_error(param.name + ": stage " + std::to_string(param.stage) +
                                   " of mesh axis " + name + " is not a stage it can be on");
      }
      index.params.push_back(std::move(item));
    }
  } catch (const std::exception &e) {
    error = path + " is malformed (" + e.what() + "): " + rerunJobHint(dir, true);
    return false;
  }
  return true;
}

/// A rank's shard digest from its file's records, in the index's param order; false when a
/// listed tensor has no record (reported separately).
bool recordsDigest(const Index &index, const std::map<std::string, ShardTensorRecord> &records,
                   int64_t rank, uint64_t &digest) {
  StreamingChecksum sum;
  const std::string empty = emptyChecksum();
  for (const IndexParam &item : index.params) {
    if (!onParamStage(index.mesh, item.param, rank)) {
      sum.update(empty.data(), empty.size());
      continue;
    }
    auto record = records.find(item.param.name);
    if (record == records.end())
      return false;
    sum.update(record->second.checksum.data(), record->second.checksum.size());
  }
  digest = sum.value();
  return true;
}

uint64_t elementCount(const std::vector<int64_t> &shape) {
  uint64_t count = 1;
  for (int64_t dim : shape)
    count *= uint64_t(dim);
  return count;
}

bool makeDirectories(const std::string &dir, std::string &error) {
  std::string path;
  size_t pos = 0;
  while (pos <= dir.size()) {
    size_t slash = dir.find('/', pos);
    if (slash == std::string::npos)
      slash = dir.size();
    path = dir.substr(0, slash);
    pos = slash + 1;
    if (path.empty())
      continue;
    // 0777 less the umask, as mkdir(1) does: a group-writable umask gives a shared directory.
    if (::mkdir(path.c_str(), 0777) != 0 && errno != EEXIST) {
      error = "cannot create directory " + path + ": " + std::strerror(errno) +
              ": choose another --out";
      return false;
    }
  }
  struct stat info;
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    error = dir + (::lstat(dir.c_str(), &info) == 0 && S_ISLNK(info.st_mode)
                       ? " is a symbolic link to nothing (or to a file): make it name a directory, "
                         "or choose another --out"
                       : " exists and is not a directory: choose another --out");
    return false;
  }
  return true;
}

/// The path a write to `path` replaces: a symbolic link's target (AtomicFile follows links).
std::string writtenPath(const std::string &path) {
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0 || !S_ISLNK(info.st_mode))
    return path;
  if (char *resolved = ::realpath(path.c_str(), nullptr)) {
    std::string target = resolved;
    std::free(resolved);
    return target;
  }
  std::string target(4096, '\0');
  ssize_t length = ::readlink(path.c_str(), target.data(), target.size());
  if (length <= 0)
    return path;
  target.resize(size_t(length));
  size_t slash = path.rfind('/');
  return target[0] == '/' || slash == std::string::npos ? target
                                                        : path.substr(0, slash + 1) + target;
}

} // namespace initrt::records
