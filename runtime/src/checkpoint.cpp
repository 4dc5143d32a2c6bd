#include "initrt/checkpoint.h"

#include "initrt/checksum.h"
#include "initrt/executor.h"
#include "initrt/files.h"
#include "initrt/json_text.h"
#include "initrt/safetensors.h"

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

namespace {

using OrderedJson = nlohmann::ordered_json;
using Json = nlohmann::json;

constexpr const char *kIndexFile = "index.json";
constexpr const char *kIndexFormat = "initc-checkpoint";
// Version 3 added "checksum"; earlier versions are refused (a rerun of the job rewrites them).
constexpr int kIndexVersion = 3;
// Bounded scratch for streaming tensor bytes out of shard files.
constexpr uint64_t kReadChunk = 8ull << 20;
// The shard metadata key of the base checkpoints' versions (BaseCheckpoints::stamps()).
constexpr const char *kBaseStampsKey = "initc.base";
// A shard file whose tensors match their own checksums, but not the digest index.json recorded
// for the rank: the file was replaced or edited after the job wrote it.
constexpr const char *kNotThisJobsFile =
    "its tensors' checksums are not those index.json recorded for this rank (the file changed "
    "after the job wrote it)";

std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// `overwrite`: the file is another program's, which prog/init replaces only when told to.
std::string rerunHint(const std::string &dir, int64_t rank, bool overwrite = false) {
  return "rerun `prog/init --rank " + std::to_string(rank) + " --out " + dir +
         (overwrite ? " --overwrite" : "") + "` to regenerate it";
}

// A lone `--rank` run never writes index.json: only the whole job (every rank) does.
std::string rerunJobHint(const std::string &dir, bool overwrite) {
  return "rerun the whole job (`mpirun -np N prog/init --out " + dir +
         (overwrite ? " --overwrite" : "") +
         "`): ranks already complete are skipped and index.json is written again";
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// Parses "rank-00003-of-00004.safetensors" (5 or more digits each).
bool parseShardFileName(const std::string &name, int64_t &rank, int64_t &worldSize) {
  auto digitsAt = [&](size_t &pos, int64_t &value) {
    size_t start = pos;
    value = 0;
    while (pos < name.size() && name[pos] >= '0' && name[pos] <= '9' && pos - start < 18)
      value = value * 10 + (name[pos++] - '0');
    return pos - start >= 5;
  };
  size_t pos = 0;
  if (name.compare(0, 5, "rank-") != 0)
    return false;
  pos = 5;
  if (!digitsAt(pos, rank) || name.compare(pos, 4, "-of-") != 0)
    return false;
  pos += 4;
  if (!digitsAt(pos, worldSize))
    return false;
  return name.compare(pos, std::string::npos, ".safetensors") == 0;
}

/// What a shard file's "initc.tensors" metadata says about one tensor.
struct ShardTensorRecord {
  std::vector<int64_t> globalShape;
  std::vector<int64_t> offset;
  std::string checksum;
};

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
                          std::string *otherId = nullptr) {
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

//===----------------------------------------------------------------------===//
// index.json, as read back
//===----------------------------------------------------------------------===//

struct IndexParam {
  Param param;       // name, aliases, shape, splitAxes, buffer
  std::string dtype; // as safetensors names it
};

struct Index {
  std::string programId;
  Mesh mesh;
  int64_t worldSize = 0;
  std::vector<std::string> files;
  std::vector<uint64_t> digests; // shardDigest per rank
  std::vector<IndexParam> params;
};

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
                            uint64_t b, const std::string &loadedFrom = "") {
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
                   uint64_t &digest) {
  StreamingChecksum sum;
  for (const IndexParam &item : index.params) {
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

} // namespace

std::string shardFileName(int64_t rank, int64_t worldSize) {
  char name[96];
  std::snprintf(name, sizeof(name), "rank-%05lld-of-%05lld.safetensors", (long long)rank,
                (long long)worldSize);
  return name;
}

//===----------------------------------------------------------------------===//
// Shard files
//===----------------------------------------------------------------------===//

namespace {
// The safetensors contents and metadata of a rank's shard file. With `placeholders`, tensors
// without data get a checksum of 16 zeros, the width of a real one, so the header keeps its
// length when the real checksums replace them.
bool shardFileContents(const std::string &path, const Program &program, int64_t rank,
                       const std::vector<ShardTensor> &tensors, bool placeholders,
                       std::vector<SafetensorsTensor> &contents, SafetensorsMetadata &metadata,
                       std::string &error) {
  int64_t worldSize = program.mesh.size();
  OrderedJson records = OrderedJson::object();
  for (const ShardTensor &tensor : tensors) {
    if (!tensor.param) {
      error = "cannot write " + path + ": a shard tensor has no parameter";
      return false;
    }
    const Param &param = *tensor.param;
    if (!param.persistent)
      continue;
    if (tensor.slice.shape.size() != param.shape.size() ||
        tensor.slice.offset.size() != param.shape.size()) {
      error = "cannot write " + path + ": " + param.name + ": slice rank differs from the shape " +
              shapeText(param.shape);
      return false;
    }
    SafetensorsTensor content;
    content.name = param.name;
    content.dtype = dtypeName(param.dtype);
    content.shape = tensor.slice.shape;
    content.data = tensor.data;
    content.bytes = tensor.bytes;
    // Laying out a file whose data comes later: the header needs no bytes, only their size.
    static const char noDataYet = 0;
    if (!content.data && placeholders)
      content.data = &noDataYet;
    contents.push_back(std::move(content));
    std::string checksum = tensor.checksum;
    if (checksum.empty() && (tensor.data || !tensor.bytes))
      checksum = checksumHex(tensor.data, tensor.bytes);
    if (checksum.empty() && placeholders)
      checksum = std::string(16, '0');
    // Appended (a program's names are distinct): the map's insert compares with every key.
    records.get_ref<OrderedJson::object_t &>().emplace_back(
        param.name, OrderedJson{{"global_shape", param.shape},
                                {"offset", tensor.slice.offset},
                                {"checksum", checksum}});
  }
  std::string tensorsText;
  try {
    tensorsText = records.dump(-1, ' ', false, Json::error_handler_t::strict);
  } catch (const Json::exception &e) {
    error = "cannot write " + path + ": a parameter name is not valid UTF-8";
    return false;
  }
  metadata = {{"format", "pt"},
              {"initc.program_id", program.programId},
              {"initc.rank", std::to_string(rank)},
              {"initc.world_size", std::to_string(worldSize)},
              {"initc.tensors", tensorsText}};
  return true;
}
} // namespace

bool writeShardFile(const std::string &dir, const Program &program, int64_t rank,
                    const std::vector<ShardTensor> &tensors, std::string &error) {
  std::string path = joinPath(dir, shardFileName(rank, program.mesh.size()));
  std::vector<SafetensorsTensor> contents;
  SafetensorsMetadata metadata;
  if (!shardFileContents(path, program, rank, tensors, false, contents, metadata, error))
    return false;
  return writeSafetensors(path, contents, metadata, error);
}

//===----------------------------------------------------------------------===//
// Writing a shard file while its tensors are computed
//===----------------------------------------------------------------------===//

ShardFileStream::ShardFileStream() = default;
ShardFileStream::~ShardFileStream() = default;

// The file's tensors and metadata; the data of tensors not computed yet is a placeholder.
bool ShardFileStream::fileContents(std::vector<SafetensorsTensor> &contents,
                                   SafetensorsMetadata &metadata, std::string &error) const {
  if (!shardFileContents(path, *program, rank, tensors, true, contents, metadata, error))
    return false;
  if (!baseStamps.empty())
    metadata.emplace_back(kBaseStampsKey, baseStamps);
  return true;
}

bool ShardFileStream::open(const std::string &dir, const Program &program, int64_t rank,
                           const std::vector<ShardTensor> &layout, std::string &error,
                           const std::string &baseStamps) {
  this->program = &program;
  this->rank = rank;
  this->baseStamps = baseStamps;
  tensors = layout;
  path = joinPath(dir, shardFileName(rank, program.mesh.size()));
  std::vector<SafetensorsTensor> contents;
  SafetensorsMetadata metadata;
  std::vector<size_t> order;
  if (!fileContents(contents, metadata, error) ||
      !buildSafetensorsHeader(contents, metadata, header, order, error)) {
    error = error.rfind("cannot write", 0) == 0 ? error : "cannot write " + path + ": " + error;
    return false;
  }
  // contents holds the persistent tensors in layout order; offsets follow the file's order.
  std::vector<size_t> persistent;
  for (size_t t = 0; t < tensors.size(); ++t)
    if (tensors[t].param && tensors[t].param->persistent)
      persistent.push_back(t);
  offsets.assign(tensors.size(), 0);
  uint64_t at = header.size();
  for (size_t index : order) {
    offsets[persistent[index]] = at;
    at += contents[index].bytes;
  }
  return file.open(path, at, error, FileCaching::Bypass);
}

std::vector<size_t> ShardFileStream::fileOrder() const {
  std::vector<size_t> order(tensors.size());
  for (size_t t = 0; t < order.size(); ++t)
    order[t] = t;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return offsets[a] < offsets[b]; });
  return order;
}

bool ShardFileStream::writePiece(size_t index, uint64_t offset, const void *data,
                                 uint64_t bytes, std::string &error) {
  if (index >= tensors.size() || offset != (index == current ? currentEnd : 0) ||
      offset + bytes > tensors[index].bytes) {
    error = "cannot write " + path + ": pieces out of order (internal error; run again)";
    return false;
  }
  ShardTensor &tensor = tensors[index];
  if (!tensor.param || !tensor.param->persistent)
    return true;
  if (offset == 0)
    checksum.reset();
  current = index;
  currentEnd = offset + bytes;
  // Checksummed here, while the piece is still in cache, not in a pass of its own.
  checksum.update(data, bytes);
  if (!file.writeAt(offsets[index] + offset, data, bytes, error))
    return false;
  // To the device now, while the next pieces compute, not all at the final fsync.
  file.startWriteback(offsets[index] + offset, bytes);
  if (currentEnd == tensor.bytes)
    tensor.checksum = checksum.hex();
  return true;
}

bool ShardFileStream::finish(std::vector<std::string> &checksums, std::string &error) {
  for (const ShardTensor &tensor : tensors)
    if (tensor.param && tensor.param->persistent && tensor.checksum.empty()) {
      error = "cannot write " + path + ": " + tensor.param->name + " was never computed";
      file.discard();
      return false;
    }
  std::vector<SafetensorsTensor> contents;
  SafetensorsMetadata metadata;
  std::vector<size_t> order;
  std::string final;
  // Placeholders stand in for the data (written already); every checksum is real by now.
  if (!fileContents(contents, metadata, error) ||
      !buildSafetensorsHeader(contents, metadata, final, order, error)) {
    file.discard();
    return false;
  }
  if (final.size() != header.size()) {
    error = "cannot write " + path + ": the header changed length (internal error; run again)";
    file.discard();
    return false;
  }
  if (!file.writeAt(0, final.data(), final.size(), error) || !file.commit(error))
    return false;
  checksums.clear();
  for (const ShardTensor &tensor : tensors)
    checksums.push_back(tensor.checksum);
  return true;
}

namespace {
/// How the base checkpoint versions a shard records (`recorded`, null for none) differ from
/// those of the files now (`now`, BaseCheckpoints::stamps()), or "" when they do not. With
/// `someMissing`, files absent now are not compared: only those there must be as recorded.
std::string baseDifference(const std::string *recorded, const std::string &now, bool someMissing) {
  if (!someMissing && recorded && *recorded == now)
    return "";
  Json before, after;
  std::string why;
  if (!recorded)
    return "records no version of its base checkpoints";
  if (!parseJsonText(recorded->empty() ? "{}" : *recorded, before, why) || !before.is_object())
    return "records no readable version of its base checkpoints";
  if (!parseJsonText(now.empty() ? "{}" : now, after, why) || !after.is_object())
    return "its base checkpoints cannot be compared (internal error; run again)";
  for (const auto &[path, stamp] : after.items()) {
    auto was = before.find(path);
    if (was == before.end())
      return "computed from other base checkpoint files (not " + path + ")";
    if (*was != stamp)
      return "computed from another version of " + path;
  }
  if (!someMissing)
    for (const auto &[path, stamp] : before.items())
      if (!after.contains(path))
        return "computed from other base checkpoint files (" + path + " among them)";
  return "";
}
} // namespace

ShardState shardState(const std::string &dir, const Program &program, int64_t rank,
                      std::vector<std::string> &checksums, std::string &reason,
                      const std::string *baseStamps, bool someBasesMissing) {
  int64_t worldSize = program.mesh.size();
  checksums.assign(program.params.size(), std::string());
  SafetensorsReader reader;
  if (!reader.open(joinPath(dir, shardFileName(rank, worldSize)), reason))
    return ShardState::Incomplete;
  std::string why;
  if (!shardMetadataMatches(reader, program.programId, rank, worldSize, why)) {
    reason = reader.path() + ": " + why;
    return ShardState::Incomplete;
  }
  // Before reading any bytes: a shard of another version of the base is rewritten anyway.
  if (baseStamps) {
    const std::string *recorded = reader.metadataValue(kBaseStampsKey);
    // A program that loads nothing records nothing.
    std::string difference = baseStamps->empty() && !recorded
                                 ? ""
                                 : baseDifference(recorded, *baseStamps, someBasesMissing);
    if (!difference.empty()) {
      reason = reader.path() + ": " + difference;
      return ShardState::BaseChanged;
    }
  }
  std::map<std::string, ShardTensorRecord> records;
  if (!parseShardTensors(reader, records, reason))
    return ShardState::Incomplete;
  size_t expected = 0;
  for (size_t i = 0; i < program.params.size(); ++i) {
    const Param &param = program.params[i];
    if (!param.persistent)
      continue;
    ++expected;
    Slice slice = sliceForRank(program.mesh, param, rank);
    const SafetensorsEntry *entry = reader.find(param.name);
    auto record = records.find(param.name);
    if (!entry || record == records.end()) {
      reason = reader.path() + ": " + param.name + " is missing";
      return ShardState::Incomplete;
    }
    if (entry->dtype != dtypeName(param.dtype) || entry->shape != slice.shape ||
        record->second.globalShape != param.shape || record->second.offset != slice.offset) {
      reason = reader.path() + ": " + param.name + " has another dtype, shape or offset";
      return ShardState::Incomplete;
    }
    std::string actual;
    if (!reader.checksum(*entry, actual, reason))
      return ShardState::Incomplete;
    if (actual != record->second.checksum) {
      reason = reader.path() + ": " + param.name + ": checksum mismatch";
      return ShardState::Incomplete;
    }
    checksums[i] = actual;
  }
  if (reader.tensors().size() != expected || records.size() != expected) {
    reason = reader.path() + ": holds tensors this program does not store";
    return ShardState::Incomplete;
  }
  return ShardState::Complete;
}

bool shardIsComplete(const std::string &dir, const Program &program, int64_t rank,
                     std::vector<std::string> &checksums, std::string &reason) {
  return shardState(dir, program, rank, checksums, reason) == ShardState::Complete;
}

bool shardIsComplete(const std::string &dir, const Program &program, int64_t rank,
                     std::vector<std::string> &checksums) {
  std::string reason;
  return shardIsComplete(dir, program, rank, checksums, reason);
}

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

//===----------------------------------------------------------------------===//
// Output directory
//===----------------------------------------------------------------------===//

namespace {
std::string refusal(const std::string &dir, const std::string &reason, const Program &program) {
  return dir + " holds a checkpoint of another program (" + reason + ", this program is " +
         program.programId + "): pass --overwrite to replace it, or choose another --out";
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

bool removeForOverwrite(const std::string &path, std::string &error) {
  // Other ranks may be removing the same files at the same time.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    error = "cannot remove " + path + " (--overwrite): " + std::strerror(errno);
    return false;
  }
  return true;
}
} // namespace

bool checkOutputDir(const std::string &dir, const Program &program, bool overwrite,
                    std::string &error) {
  if (!makeDirectories(dir, error))
    return false;
  int64_t worldSize = program.mesh.size();
  std::vector<std::string> foreign;
  std::string firstReason;

  std::string indexPath = joinPath(dir, kIndexFile);
  if (::access(indexPath.c_str(), F_OK) == 0) {
    std::string text, readError, id, why;
    bool ours = false, damaged = false;
    if (readTextFile(indexPath, text, readError)) {
      Json json;
      damaged = !parseJsonText(text, json, why);
      if (!damaged && json.is_object() && json.contains("program_id") &&
          json["program_id"].is_string()) {
        id = json["program_id"].get<std::string>();
        ours = id == program.programId;
      }
    }
    // index.json is written whole (renamed into place), so one that does not parse was cut or
    // damaged after the fact: say so rather than call it another program's.
    if (damaged && !overwrite) {
      error = indexPath + " is malformed (" + why +
              "): pass --overwrite to write it again (complete shards are kept), or choose "
              "another --out";
      return false;
    }
    if (!ours) {
      foreign.push_back(kIndexFile);
      firstReason = "index.json " +
                    (id.empty() ? std::string("is not an initc index") : "has program id " + id);
    }
  }

  // Shard files of another mesh size are another program's by their names alone. Those of this
  // size are each checked by the rank that owns the name (checkOwnShard), so that no process
  // reads thousands of headers.
  DIR *listing = ::opendir(dir.c_str());
  if (!listing) {
    error = "cannot list " + dir + ": " + std::strerror(errno) + ": choose another --out";
    return false;
  }
  std::vector<std::string> names;
  while (dirent *entry = ::readdir(listing))
    names.emplace_back(entry->d_name);
  ::closedir(listing);
  std::sort(names.begin(), names.end());
  for (const std::string &name : names) {
    int64_t rank, world;
    if (!parseShardFileName(name, rank, world) || world == worldSize)
      continue;
    foreign.push_back(name);
    if (firstReason.empty())
      firstReason = name + " is from a run with " + std::to_string(world) + " ranks";
  }
  if (foreign.empty())
    return true;
  if (!overwrite) {
    error = refusal(dir, firstReason, program);
    return false;
  }
  for (const std::string &name : foreign)
    if (!removeForOverwrite(joinPath(dir, name), error))
      return false;
  return true;
}

bool checkOwnShard(const std::string &dir, const Program &program, int64_t rank, bool overwrite,
                   std::string &error) {
  const int64_t worldSize = program.mesh.size();
  std::string name = shardFileName(rank, worldSize);
  std::string path = joinPath(dir, name);
  // A symbolic link is followed (AtomicFile), so one to another file of this checkpoint would
  // have two ranks write one file, or a rank write the index.
  std::string target = writtenPath(path);
  if (target != path) {
    size_t slash = target.rfind('/');
    std::string targetDir = slash == std::string::npos ? "." : target.substr(0, slash + 1);
    std::string targetName = slash == std::string::npos ? target : target.substr(slash + 1);
    char *here = ::realpath(dir.c_str(), nullptr), *there = ::realpath(targetDir.c_str(), nullptr);
    bool sameDir = here && there && std::strcmp(here, there) == 0;
    std::free(here);
    std::free(there);
    std::string whose;
    if (sameDir && targetName == kIndexFile)
      whose = "the checkpoint's index";
    for (int64_t other = 0; sameDir && whose.empty() && other < worldSize; ++other)
      if (other != rank && targetName == shardFileName(other, worldSize))
        whose = "rank " + std::to_string(other) + "'s shard";
    if (!whose.empty()) {
      error = path + " is a symbolic link to " + targetName + ", " + whose +
              ", so two writers would share one file: remove the link and run again";
      return false;
    }
  }
  // A FIFO or a device under the shard's name would be written in place (AtomicFile writes
  // those directly), or waited on: a checkpoint holds regular files only.
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    if (S_ISDIR(info.st_mode)) { // --overwrite removes files, never a directory
      error = path + " is a directory, not a shard file: remove it or choose another --out";
      return false;
    }
    if (!overwrite) {
      error = path + " is " + fileKindText(info.st_mode) +
              ", not a shard file: remove it, pass --overwrite to replace it, or choose another "
              "--out";
      return false;
    }
    return removeForOverwrite(path, error);
  }
  SafetensorsReader reader;
  std::string openError;
  // A shard of ours that is unreadable is simply incomplete: this rank rewrites it.
  if (!reader.open(joinPath(dir, name), openError))
    return true;
  const std::string *id = reader.metadataValue("initc.program_id");
  if (id && *id == program.programId)
    return true;
  if (!overwrite) {
    error = refusal(dir, name + (id ? " has program id " + *id : " is not an initc shard"),
                    program);
    return false;
  }
  return removeForOverwrite(reader.path(), error);
}

int removeStaleTemporaries(const std::string &dir, const Program &program, int64_t rank) {
  // Temporary names are "." + final name + ".tmp-" + pid (AtomicFile).
  int64_t worldSize = program.mesh.size();
  std::vector<std::string> prefixes;
  if (rank >= 0) {
    prefixes.push_back("." + shardFileName(rank, worldSize) + ".tmp-");
  } else {
    prefixes.push_back(".rank-");
    prefixes.push_back(std::string(".") + kIndexFile + ".tmp-");
  }
  // Only temporaries no writer holds: another process writing this rank (a second
  // `--rank K`, another job on the same directory) keeps its own.
  return removeAbandonedTemporaries(dir, prefixes);
}

//===----------------------------------------------------------------------===//
// Assemble and verify
//===----------------------------------------------------------------------===//

namespace {

/// Opened shard files with their parsed initc.tensors metadata, checked against the index:
/// the file's program, rank and world size, and its records' digest.
struct OpenShard {
  SafetensorsReader reader;
  std::map<std::string, ShardTensorRecord> records;
};

class ShardCache {
public:
  ShardCache(std::string shardDir, const Index &index) : dir(std::move(shardDir)), index(index) {}
  // `otherId`: set as shardMetadataMatches sets it.
  OpenShard *get(int64_t rank, std::string &error, std::string *otherId = nullptr) {
    auto it = shards.find(rank);
    if (it != shards.end())
      return it->second.get();
    if (shards.size() >= 256) // stay well below the open-file limit
      shards.clear();
    auto shard = std::make_unique<OpenShard>();
    std::string why;
    uint64_t digest = 0;
    if (!shard->reader.open(joinPath(dir, index.files[size_t(rank)]), error) ||
        !parseShardTensors(shard->reader, shard->records, error))
      return nullptr;
    if (!shardMetadataMatches(shard->reader, index.programId, rank, index.worldSize, why,
                              otherId)) {
      error = why;
      return nullptr;
    }
    if (!recordsDigest(index, shard->records, digest) || digest != index.digests[size_t(rank)]) {
      error = kNotThisJobsFile;
      return nullptr;
    }
    return (shards[rank] = std::move(shard)).get();
  }

private:
  std::string dir;
  const Index &index;
  std::map<int64_t, std::unique_ptr<OpenShard>> shards;
};

/// Refuses an assemble output that is one of the checkpoint's own files (its index or a shard,
/// by device and inode, hard links and symbolic links included), or a name the checkpoint
/// directory reserves for them: writing it would destroy the checkpoint being read.
bool outputOutsideCheckpoint(const std::string &dir, const Index &index,
                             const std::string &outPath, std::string &error) {
  std::vector<std::string> names = index.files;
  names.push_back(kIndexFile);
  auto refuse = [&](const std::string &name) {
    error = "-o " + outPath + " is the checkpoint's own " + name + " (in " + dir +
            "): writing it would destroy the checkpoint being assembled; choose another -o";
    return false;
  };
  struct stat out, theirs;
  if (::stat(outPath.c_str(), &out) == 0)
    for (const std::string &name : names)
      if (::stat(joinPath(dir, name).c_str(), &theirs) == 0 && out.st_dev == theirs.st_dev &&
          out.st_ino == theirs.st_ino)
        return refuse(name);
  // By name, for files missing from the checkpoint: is the output's directory the checkpoint's?
  std::string target = writtenPath(outPath);
  size_t slash = target.rfind('/');
  std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : target.substr(0, slash);
  std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  int64_t rank, world;
  bool reserved = base == kIndexFile || parseShardFileName(base, rank, world);
  struct stat parentInfo, dirInfo;
  if (reserved && ::stat(parent.c_str(), &parentInfo) == 0 && ::stat(dir.c_str(), &dirInfo) == 0 &&
      parentInfo.st_dev == dirInfo.st_dev && parentInfo.st_ino == dirInfo.st_ino)
    return refuse(base);
  return true;
}

/// One distinct slice of the tensor being assembled, as its owner's file holds it: read in its
/// own row-major order, band after band, and checked against its checksum at the end.
struct OwnedSlice {
  int64_t rank = 0;
  std::string where;                           // "NAME on rank R (FILE)"
  std::vector<int64_t> offset, shape, strides; // strides in elements, of the slice's layout
  uint64_t begin = 0, bytes = 0;               // its data in the file
  std::string checksum;
  StreamingChecksum sum;
  uint64_t consumed = 0; // bytes read so far
  // In the current band: where its part is in the band buffer, and the part's first element
  // (slice-linear) and bounds along the band's dim.
  uint64_t bandAt = 0, firstElement = 0;
  int64_t lo = 0, hi = 0;
};

/// Writes runs of bytes to a file in order, gathering short ones into one write: a tensor split
/// along its last dim comes as one run per row and slice, a few bytes each.
class RunWriter {
public:
  explicit RunWriter(AtomicFile &file) : file(file) {}
  bool write(const char *data, uint64_t bytes, std::string &error) {
    if (bytes >= kGatherBytes)
      return flush(error) && file.write(data, bytes, error);
    if (gathered.size() + bytes > kGatherBytes && !flush(error))
      return false;
    gathered.insert(gathered.end(), data, data + bytes);
    return true;
  }
  bool flush(std::string &error) {
    bool ok = gathered.empty() || file.write(gathered.data(), gathered.size(), error);
    gathered.clear();
    return ok;
  }

private:
  static constexpr uint64_t kGatherBytes = 1 << 20;
  AtomicFile &file;
  std::vector<char> gathered;
};

/// Writes one tensor of an assembled checkpoint to `out`, straight from its owners' slices: a
/// band of its global rows (at most `bandBytes`) is read from the slices that cross it, then
/// written in the global order by runs out of their parts. Memory stays at one band, whatever
/// the model's size.
bool assembleTensor(const std::string &dir, const Index &index, const IndexParam &item,
                    uint64_t bandBytes, ShardCache &cache, RunWriter &out, std::vector<char> &band,
                    std::string &error, const std::function<void(uint64_t)> &bandDone) {
  const Param &param = item.param;
  const uint64_t elementBytes = uint64_t(safetensorsDTypeBits(item.dtype)) / 8;
  // A scalar is a tensor of one element here.
  const std::vector<int64_t> global = param.shape.empty() ? std::vector<int64_t>{1} : param.shape;
  const size_t rank = global.size();
  std::vector<std::unique_ptr<OwnedSlice>> slices;
  for (int64_t owner = 0; owner < index.worldSize; ++owner) {
    if (!isSliceOwner(index.mesh, param, owner))
      continue;
    Slice slice = sliceForRank(index.mesh, param, owner);
    auto part = std::make_unique<OwnedSlice>();
    part->rank = owner;
    part->where =
        param.name + " on rank " + std::to_string(owner) + " (" + index.files[size_t(owner)] + ")";
    OpenShard *shard = cache.get(owner, error);
    const SafetensorsEntry *entry =
        shard ? indexedEntry(shard->reader, shard->records, index, item, owner, error) : nullptr;
    if (!entry) {
      error = part->where + ": " + error + ": " + rerunHint(dir, owner);
      return false;
    }
    part->offset = param.shape.empty() ? std::vector<int64_t>{0} : slice.offset;
    part->shape = param.shape.empty() ? std::vector<int64_t>{1} : slice.shape;
    part->strides.assign(rank, 1);
    for (size_t d = rank - 1; d-- > 0;)
      part->strides[d] = part->strides[d + 1] * part->shape[d + 1];
    part->begin = entry->begin;
    part->bytes = entry->bytes();
    part->checksum = shard->records.at(param.name).checksum;
    slices.push_back(std::move(part));
  }

  // Bands: the outermost dim `k` whose rows (one index of it, every index of the dims after it)
  // fit `bandBytes`, `perBand` of its indices at a time, under each index of the dims before it.
  std::vector<uint64_t> rowBytes(rank);
  for (size_t d = rank; d-- > 0;)
    rowBytes[d] = d + 1 == rank ? elementBytes : rowBytes[d + 1] * uint64_t(global[d + 1]);
  size_t k = 0;
  while (k + 1 < rank && rowBytes[k] > bandBytes)
    ++k;
  // A tensor with a dim of 0 has no bands (and rows of 0 bytes); its slices are checked below.
  const bool empty = elementCount(global) == 0;
  const int64_t perBand = empty ? 1 : int64_t(std::max<uint64_t>(1, bandBytes / rowBytes[k]));
  if (!empty)
    band.resize(size_t(std::min(uint64_t(perBand), uint64_t(global[k])) * rowBytes[k]));

  std::vector<int64_t> prefix(k, 0), row(rank, 0);
  std::vector<OwnedSlice *> parts;
  const char *pending = nullptr; // a run written when the next one does not continue it
  uint64_t pendingBytes = 0, bandWritten = 0;
  auto append = [&](const char *data, uint64_t bytes) {
    bandWritten += bytes;
    if (pending && pending + pendingBytes == data) {
      pendingBytes += bytes;
      return true;
    }
    bool ok = !pending || out.write(pending, pendingBytes, error);
    pending = data;
    pendingBytes = bytes;
    return ok;
  };
  while (!empty) {
    for (int64_t a = 0; a < global[k]; a += perBand) {
      const int64_t b = std::min(global[k], a + perBand);
      // The slices crossing this band, and their parts of it, read in their own order.
      parts.clear();
      uint64_t at = 0;
      for (auto &slice : slices) {
        bool crosses = true;
        for (size_t d = 0; d < k && crosses; ++d)
          crosses = slice->offset[d] <= prefix[d] && prefix[d] < slice->offset[d] + slice->shape[d];
        slice->lo = std::max(a, slice->offset[k]);
        slice->hi = std::min(b, slice->offset[k] + slice->shape[k]);
        if (!crosses || slice->lo >= slice->hi)
          continue;
        uint64_t first = uint64_t(slice->lo - slice->offset[k]) * uint64_t(slice->strides[k]);
        for (size_t d = 0; d < k; ++d)
          first += uint64_t(prefix[d] - slice->offset[d]) * uint64_t(slice->strides[d]);
        uint64_t bytes =
            uint64_t(slice->hi - slice->lo) * uint64_t(slice->strides[k]) * elementBytes;
        if (first * elementBytes != slice->consumed || slice->consumed + bytes > slice->bytes ||
            at + bytes > band.size()) {
          error = slice->where + ": read out of order (internal error; run again)";
          return false;
        }
        OpenShard *shard = cache.get(slice->rank, error);
        if (!shard ||
            !shard->reader.read(slice->begin + slice->consumed, band.data() + at, bytes, error)) {
          error = slice->where + ": " + error;
          return false;
        }
        slice->sum.update(band.data() + at, size_t(bytes));
        slice->consumed += bytes;
        slice->bandAt = at;
        slice->firstElement = first;
        at += bytes;
        parts.push_back(slice.get());
      }
      // The band in the global order: its rows (every index but the last dim's), each made of
      // the runs of the slices that cross it, left to right.
      std::sort(parts.begin(), parts.end(), [&](const OwnedSlice *x, const OwnedSlice *y) {
        return x->offset[rank - 1] < y->offset[rank - 1];
      });
      if (k + 1 == rank) { // the band lies within one row
        for (OwnedSlice *part : parts)
          if (!append(band.data() + part->bandAt, uint64_t(part->hi - part->lo) * elementBytes))
            return false;
      } else {
        for (size_t d = 0; d < k; ++d)
          row[d] = prefix[d];
        for (size_t d = k; d + 1 < rank; ++d)
          row[d] = d == k ? a : 0;
        for (;;) {
          for (OwnedSlice *part : parts) {
            bool covers = true;
            uint64_t element = 0;
            for (size_t d = k; d + 1 < rank && covers; ++d) {
              covers = part->offset[d] <= row[d] && row[d] < part->offset[d] + part->shape[d];
              element += uint64_t(row[d] - part->offset[d]) * uint64_t(part->strides[d]);
            }
            for (size_t d = 0; d < k; ++d)
              element += uint64_t(row[d] - part->offset[d]) * uint64_t(part->strides[d]);
            if (covers &&
                !append(band.data() + part->bandAt + (element - part->firstElement) * elementBytes,
                        uint64_t(part->shape[rank - 1]) * elementBytes))
              return false;
          }
          bool more = false; // the next row: an odometer over dims k .. rank-2
          for (size_t d = rank - 1; d-- > k + 1 && !more;)
            if (!(more = ++row[d] < global[d]))
              row[d] = 0;
          if (!more && !(++row[k] < b))
            break;
        }
      }
      if (pending && !out.write(pending, pendingBytes, error))
        return false;
      pending = nullptr;
      // The slices tile the tensor: a band is exactly its bytes, or the file would shift.
      if (at != uint64_t(b - a) * rowBytes[k] || bandWritten != at) {
        error = param.name + ": the slices do not tile rows " + std::to_string(a) + " to " +
                std::to_string(b) + " of dim " + std::to_string(k) + " (internal error; run again)";
        return false;
      }
      bandWritten = 0;
      bandDone(uint64_t(b - a) * rowBytes[k]);
    }
    bool more = false; // the next prefix: an odometer over dims 0 .. k-1
    for (size_t d = k; d-- > 0 && !more;)
      if (!(more = ++prefix[d] < global[d]))
        prefix[d] = 0;
    if (!more)
      break;
  }

  for (auto &slice : slices) {
    if (slice->consumed != slice->bytes) {
      error = slice->where + ": " + std::to_string(slice->bytes - slice->consumed) +
              " bytes never read (internal error; run again)";
      return false;
    }
    if (slice->sum.hex() != slice->checksum) {
      error =
          slice->where + ": checksum mismatch, the file is corrupt: " + rerunHint(dir, slice->rank);
      return false;
    }
  }
  return true;
}

} // namespace

bool assembleCheckpoint(const std::string &dir, const std::string &outPath, std::string &error,
                        const ProgressFn &progress, const AssembleOptions &options) {
  Index index;
  if (!readIndex(dir, index, error))
    return false;
  if (!outputOutsideCheckpoint(dir, index, outPath, error))
    return false;
  uint64_t total = 0; // the model's bytes
  for (const IndexParam &item : index.params)
    total += elementCount(item.param.shape) * uint64_t(safetensorsDTypeBits(item.dtype)) / 8;
  ShardCache cache(dir, index);
  std::vector<SafetensorsTensor> tensors;
  nlohmann::ordered_json aliases = nlohmann::ordered_json::object();

  // Every file of the checkpoint, not only those slices are read from: a rank that owns no
  // slice (replicas) missing or damaged is a broken checkpoint too. Headers only; the data
  // read below is checked against its checksums on the way.
  for (int64_t rank = 0; rank < index.worldSize; ++rank) {
    std::string where = "rank " + std::to_string(rank) + " (" + index.files[size_t(rank)] + ")";
    std::string otherId;
    OpenShard *shard = cache.get(rank, error, &otherId);
    if (!shard) {
      error = where + ": " + error + ": " + rerunHint(dir, rank, !otherId.empty());
      return false;
    }
    for (const IndexParam &item : index.params)
      if (!indexedEntry(shard->reader, shard->records, index, item, rank, error)) {
        error = item.param.name + " on " + where + ": " + error + ": " + rerunHint(dir, rank);
        return false;
      }
    if (shard->reader.tensors().size() != index.params.size()) {
      error = where + ": holds tensors index.json does not list: " + rerunHint(dir, rank);
      return false;
    }
  }

  // The output's layout first: its header, and the order in which the tensors follow it.
  static const char noData = 0; // the bytes come from the shards below
  for (const IndexParam &item : index.params) {
    SafetensorsTensor tensor;
    tensor.name = item.param.name;
    tensor.dtype = item.dtype;
    tensor.shape = item.param.shape;
    tensor.data = &noData;
    tensor.bytes = elementCount(item.param.shape) * uint64_t(safetensorsDTypeBits(item.dtype)) / 8;
    tensors.push_back(std::move(tensor));
    for (const std::string &alias : item.param.aliases)
      aliases[alias] = item.param.name;
  }
  SafetensorsMetadata metadata = {{"format", "pt"}};
  if (!aliases.empty())
    metadata.emplace_back("initc.aliases", aliases.dump(-1, ' ', false,
                                                        Json::error_handler_t::replace));
  // A pipe or a device cannot take back what it was given: before writing to one, every slice is
  // checked against its checksum (a regular file is a temporary until the end).
  struct stat info;
  const bool checkFirst = ::stat(outPath.c_str(), &info) == 0 && !S_ISREG(info.st_mode);
  const uint64_t work = checkFirst ? 2 * total : total;
  uint64_t done = 0;
  for (const IndexParam &item : index.params) {
    for (int64_t owner = 0; checkFirst && owner < index.worldSize; ++owner) {
      if (!isSliceOwner(index.mesh, item.param, owner))
        continue;
      std::string where = item.param.name + " on rank " + std::to_string(owner) + " (" +
                          index.files[size_t(owner)] + ")";
      OpenShard *shard = cache.get(owner, error);
      const SafetensorsEntry *entry =
          shard ? indexedEntry(shard->reader, shard->records, index, item, owner, error) : nullptr;
      if (!entry) {
        error = where + ": " + error + ": " + rerunHint(dir, owner);
        return false;
      }
      std::string hex;
      if (!shard->reader.checksum(*entry, hex, error)) {
        error = where + ": " + error;
        return false;
      }
      if (hex != shard->records.at(item.param.name).checksum) {
        error = where + ": checksum mismatch, the file is corrupt: " + rerunHint(dir, owner);
        return false;
      }
      if (progress)
        progress(done += entry->bytes(), work);
    }
  }
  std::string header;
  std::vector<size_t> order;
  AtomicFile file;
  if (!buildSafetensorsHeader(tensors, metadata, header, order, error)) {
    error = "cannot write " + outPath + ": " + error;
    return false;
  }
  if (!file.open(outPath, header.size() + total, error, FileCaching::Bypass) ||
      !file.write(header.data(), header.size(), error))
    return false;
  std::vector<char> band;
  RunWriter out(file);
  for (size_t position : order)
    if (!assembleTensor(dir, index, index.params[position], options.bandBytes, cache, out, band,
                        error, [&](uint64_t bytes) {
                          if (progress)
                            progress(done += bytes, work);
                        }))
      return false;
  return out.flush(error) && file.commit(error);
}

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
  for (size_t p = 0; p < index.params.size(); ++p)
    if (const SafetensorsEntry *entry =
            indexedEntry(reader, records, index, index.params[p], rank, trouble[p]))
      toRead.push_back({entry, p});
  std::sort(toRead.begin(), toRead.end(),
            [](const auto &a, const auto &b) { return a.first->begin < b.first->begin; });
  std::vector<uint64_t> sums(index.params.size(), 0);
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
  if (!recordsDigest(index, records, digest) || digest != index.digests[size_t(rank)]) {
    problems.push_back(where + ": " + kNotThisJobsFile + ": " + rerunHint(dir, rank));
    return result;
  }
  for (size_t p : replicated)
    result.replicaSums.push_back(sums[p]);
  return result;
}
} // namespace

bool verifyCheckpoint(const std::string &dir, std::vector<std::string> &problems,
                      std::string &error, const ProgressFn &progress, int threads) {
  problems.clear();
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
