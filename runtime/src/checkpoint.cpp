#include "initrt/checkpoint.h"

#include "initrt/checksum.h"
#include "initrt/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <memory>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace initrt {

namespace {

using OrderedJson = nlohmann::ordered_json;
using Json = nlohmann::json;

constexpr const char *kIndexFile = "index.json";
constexpr const char *kIndexFormat = "initc-checkpoint";
constexpr int kIndexVersion = 1;
// Bounded scratch for streaming tensor bytes out of shard files.
constexpr uint64_t kReadChunk = 8ull << 20;

std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::string rerunHint(const std::string &dir, int64_t rank) {
  return "rerun `prog/init --rank " + std::to_string(rank) + " --out " + dir +
         "` to regenerate it";
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
  try {
    Json json = Json::parse(*text);
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

/// Checks the file-level metadata of a shard file; `why` says what is wrong.
bool shardMetadataMatches(const SafetensorsReader &reader, const std::string &programId,
                          int64_t rank, int64_t worldSize, std::string &why) {
  const std::string *id = reader.metadataValue("initc.program_id");
  const std::string *fileRank = reader.metadataValue("initc.rank");
  const std::string *fileWorld = reader.metadataValue("initc.world_size");
  if (!id || !fileRank || !fileWorld) {
    why = "not an initc shard file (no initc.program_id/rank/world_size metadata)";
    return false;
  }
  if (*id != programId) {
    why = "belongs to another program (program id " + *id + ", expected " + programId + ")";
    return false;
  }
  if (*fileRank != std::to_string(rank) || *fileWorld != std::to_string(worldSize)) {
    why = "records rank " + *fileRank + " of " + *fileWorld + ", expected " +
          std::to_string(rank) + " of " + std::to_string(worldSize);
    return false;
  }
  return true;
}

/// Copies a slice's bytes, arriving in the slice's row-major order, into the global tensor.
/// Consecutive bytes contiguous in both (the trailing dims the slice covers fully) move as one run.
class BoxScatter {
public:
  BoxScatter(char *global, const std::vector<int64_t> &globalShape,
             const std::vector<int64_t> &offset, const std::vector<int64_t> &shape,
             uint64_t elementBytes)
      : base(global), boxOffset(offset), boxShape(shape) {
    size_t rank = shape.size();
    strides.assign(rank, 0);
    uint64_t stride = elementBytes;
    for (size_t d = rank; d-- > 0;) {
      strides[d] = stride;
      stride *= uint64_t(globalShape[d]);
    }
    runBytes = elementBytes;
    runStart = rank;
    // Extend the run inward while the inner dim is covered fully.
    while (runStart > 0) {
      runBytes *= uint64_t(shape[runStart - 1]);
      --runStart;
      if (shape[runStart] != globalShape[runStart])
        break;
    }
    outer.assign(runStart, 0);
    recomputeRunOffset();
  }

  void consume(const char *src, uint64_t bytes) {
    while (bytes) {
      uint64_t piece = std::min(bytes, runBytes - inRun);
      std::memcpy(base + runOffset + inRun, src, size_t(piece));
      inRun += piece;
      src += piece;
      bytes -= piece;
      if (inRun == runBytes) {
        inRun = 0;
        for (size_t d = runStart; d-- > 0;) {
          if (++outer[d] < boxShape[d])
            break;
          outer[d] = 0;
        }
        recomputeRunOffset();
      }
    }
  }

private:
  void recomputeRunOffset() {
    runOffset = 0;
    for (size_t d = 0; d < boxShape.size(); ++d)
      runOffset += uint64_t(boxOffset[d] + (d < runStart ? outer[d] : 0)) * strides[d];
  }

  char *base;
  std::vector<int64_t> boxOffset, boxShape;
  std::vector<uint64_t> strides;
  std::vector<int64_t> outer;
  size_t runStart = 0;
  uint64_t runBytes = 0, runOffset = 0, inRun = 0;
};

//===----------------------------------------------------------------------===//
// index.json, as read back
//===----------------------------------------------------------------------===//

struct IndexSlice {
  int64_t rank = 0;
  std::string file;
  std::vector<int64_t> offset, shape;
  std::string checksum;
  std::vector<int64_t> replicas;
};

struct IndexParam {
  std::string name;
  std::vector<std::string> aliases;
  std::string dtype;
  std::vector<int64_t> shape;
  bool buffer = false;
  std::vector<IndexSlice> slices;
};

struct Index {
  std::string programId;
  int64_t worldSize = 0;
  std::vector<std::string> files;
  std::vector<IndexParam> params;
};

bool readTextFile(const std::string &path, std::string &text, std::string &error) {
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file) {
    error = path + ": " + (errno == ENOENT ? "no such file" : std::strerror(errno));
    return false;
  }
  text.clear();
  char buffer[1 << 16];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    text.append(buffer, got);
  bool failed = std::ferror(file);
  std::fclose(file);
  if (failed) {
    error = path + ": read error";
    return false;
  }
  return true;
}

bool readIndex(const std::string &dir, Index &index, std::string &error) {
  std::string path = joinPath(dir, kIndexFile);
  std::string text;
  if (!readTextFile(path, text, error)) {
    error += ": not a finished checkpoint (index.json is written when every rank is done): " +
             rerunJobHint(dir, false);
    return false;
  }
  try {
    Json json = Json::parse(text);
    if (json.at("format").get<std::string>() != kIndexFormat)
      throw std::runtime_error("format is not \"" + std::string(kIndexFormat) + "\"");
    if (json.at("version").get<int>() != kIndexVersion)
      throw std::runtime_error("version " + json.at("version").dump() +
                               " is not supported (this runtime reads version " +
                               std::to_string(kIndexVersion) + ")");
    index.programId = json.at("program_id").get<std::string>();
    index.worldSize = json.at("world_size").get<int64_t>();
    index.files = json.at("files").get<std::vector<std::string>>();
    if (index.worldSize <= 0 || int64_t(index.files.size()) != index.worldSize)
      throw std::runtime_error("files does not list world_size files");
    for (const Json &param : json.at("params")) {
      IndexParam entry;
      entry.name = param.at("name").get<std::string>();
      entry.aliases = param.at("aliases").get<std::vector<std::string>>();
      entry.dtype = param.at("dtype").get<std::string>();
      entry.shape = param.at("shape").get<std::vector<int64_t>>();
      entry.buffer = param.at("buffer").get<bool>();
      if (!safetensorsDTypeBits(entry.dtype))
        throw std::runtime_error(entry.name + ": unknown dtype " + entry.dtype);
      for (int64_t dim : entry.shape)
        if (dim < 0)
          throw std::runtime_error(entry.name + ": negative dimension");
      for (const Json &slice : param.at("slices")) {
        IndexSlice s;
        s.rank = slice.at("rank").get<int64_t>();
        s.file = slice.at("file").get<std::string>();
        s.offset = slice.at("offset").get<std::vector<int64_t>>();
        s.shape = slice.at("shape").get<std::vector<int64_t>>();
        s.checksum = slice.at("checksum").get<std::string>();
        s.replicas = slice.at("replicas").get<std::vector<int64_t>>();
        if (s.rank < 0 || s.rank >= index.worldSize || s.file != index.files[size_t(s.rank)])
          throw std::runtime_error(entry.name + ": slice of rank " + std::to_string(s.rank) +
                                   " names file " + s.file);
        for (int64_t replica : s.replicas)
          if (replica < 0 || replica >= index.worldSize)
            throw std::runtime_error(entry.name + ": replica rank " + std::to_string(replica) +
                                     " out of range");
        if (s.offset.size() != entry.shape.size() || s.shape.size() != entry.shape.size())
          throw std::runtime_error(entry.name + ": slice rank differs from the tensor's");
        for (size_t d = 0; d < s.shape.size(); ++d)
          if (s.offset[d] < 0 || s.shape[d] < 0 || s.offset[d] + s.shape[d] > entry.shape[d])
            throw std::runtime_error(entry.name + ": slice " + shapeText(s.offset) + "+" +
                                     shapeText(s.shape) + " lies outside " +
                                     shapeText(entry.shape));
        entry.slices.push_back(std::move(s));
      }
      index.params.push_back(std::move(entry));
    }
  } catch (const std::exception &e) {
    error = path + " is malformed (" + e.what() + "): " + rerunJobHint(dir, true);
    return false;
  }
  return true;
}

uint64_t elementCount(const std::vector<int64_t> &shape) {
  uint64_t count = 1;
  for (int64_t dim : shape)
    count *= uint64_t(dim);
  return count;
}

/// True when the distinct slices tile the global box exactly. Slices of a mesh sharding form a
/// grid: along each dim their intervals tile [0, size), and every combination occurs once.
bool slicesCoverExactly(const IndexParam &param, std::string &why) {
  size_t rank = param.shape.size();
  std::vector<std::vector<std::pair<int64_t, int64_t>>> intervals(rank);
  for (const IndexSlice &slice : param.slices)
    for (size_t d = 0; d < rank; ++d)
      intervals[d].emplace_back(slice.offset[d], slice.shape[d]);
  uint64_t combinations = 1;
  for (size_t d = 0; d < rank; ++d) {
    auto &dim = intervals[d];
    std::sort(dim.begin(), dim.end());
    dim.erase(std::unique(dim.begin(), dim.end()), dim.end());
    int64_t next = 0;
    for (auto [begin, length] : dim) {
      if (length == 0)
        continue; // torch.chunk's empty trailing chunks
      if (begin != next) {
        why = "dim " + std::to_string(d) + " has " +
              (begin > next ? "a gap" : "an overlap") + " at " + std::to_string(std::min(begin, next));
        return false;
      }
      next = begin + length;
    }
    if (next != param.shape[d] && param.shape[d] != 0) {
      why = "dim " + std::to_string(d) + " is covered up to " + std::to_string(next) + " of " +
            std::to_string(param.shape[d]);
      return false;
    }
    combinations *= dim.size();
  }
  std::vector<std::vector<int64_t>> keys;
  for (const IndexSlice &slice : param.slices) {
    std::vector<int64_t> key = slice.offset;
    key.insert(key.end(), slice.shape.begin(), slice.shape.end());
    keys.push_back(std::move(key));
  }
  std::sort(keys.begin(), keys.end());
  if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) {
    why = "a slice is listed twice";
    return false;
  }
  if (keys.size() != combinations) {
    why = std::to_string(keys.size()) + " slices do not form the grid of " +
          std::to_string(combinations) + " blocks";
    return false;
  }
  return true;
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
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      error = "cannot create directory " + path + ": " + std::strerror(errno) +
              ": choose another --out";
      return false;
    }
  }
  struct stat info;
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    error = dir + " exists and is not a directory: choose another --out";
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
    records[param.name] = {{"global_shape", param.shape},
                           {"offset", tensor.slice.offset},
                           {"checksum", checksum}};
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

bool ShardFileStream::open(const std::string &dir, const Program &program, int64_t rank,
                           const std::vector<ShardTensor> &layout, std::string &error) {
  this->program = &program;
  this->rank = rank;
  tensors = layout;
  path = joinPath(dir, shardFileName(rank, program.mesh.size()));
  std::vector<SafetensorsTensor> contents;
  SafetensorsMetadata metadata;
  std::vector<size_t> order;
  if (!shardFileContents(path, program, rank, tensors, true, contents, metadata, error) ||
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
  return file.open(path, at, error);
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
  if (!shardFileContents(path, *program, rank, tensors, true, contents, metadata, error) ||
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

bool shardIsComplete(const std::string &dir, const Program &program, int64_t rank,
                     std::vector<std::string> &checksums, std::string &reason) {
  int64_t worldSize = program.mesh.size();
  checksums.assign(program.params.size(), std::string());
  SafetensorsReader reader;
  if (!reader.open(joinPath(dir, shardFileName(rank, worldSize)), reason))
    return false;
  std::string why;
  if (!shardMetadataMatches(reader, program.programId, rank, worldSize, why)) {
    reason = reader.path() + ": " + why;
    return false;
  }
  std::map<std::string, ShardTensorRecord> records;
  if (!parseShardTensors(reader, records, reason))
    return false;
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
      return false;
    }
    if (entry->dtype != dtypeName(param.dtype) || entry->shape != slice.shape ||
        record->second.globalShape != param.shape || record->second.offset != slice.offset) {
      reason = reader.path() + ": " + param.name + " has another dtype, shape or offset";
      return false;
    }
    std::string actual;
    if (!reader.checksum(*entry, actual, reason))
      return false;
    if (actual != record->second.checksum) {
      reason = reader.path() + ": " + param.name + ": checksum mismatch";
      return false;
    }
    checksums[i] = actual;
  }
  if (reader.tensors().size() != expected || records.size() != expected) {
    reason = reader.path() + ": holds tensors this program does not store";
    return false;
  }
  return true;
}

bool shardIsComplete(const std::string &dir, const Program &program, int64_t rank,
                     std::vector<std::string> &checksums) {
  std::string reason;
  return shardIsComplete(dir, program, rank, checksums, reason);
}

//===----------------------------------------------------------------------===//
// index.json
//===----------------------------------------------------------------------===//

bool writeIndex(const std::string &dir, const Program &program,
                const std::vector<std::vector<std::string>> &checksums, std::string &error) {
  std::string path = joinPath(dir, kIndexFile);
  const Mesh &mesh = program.mesh;
  int64_t worldSize = mesh.size();
  if (int64_t(checksums.size()) != worldSize) {
    error = "cannot write " + path + ": checksums of " + std::to_string(checksums.size()) +
            " ranks given for a world of " + std::to_string(worldSize);
    return false;
  }
  for (int64_t rank = 0; rank < worldSize; ++rank) {
    if (checksums[size_t(rank)].size() != program.params.size()) {
      error = "cannot write " + path + ": rank " + std::to_string(rank) + " reported " +
              std::to_string(checksums[size_t(rank)].size()) + " checksums for " +
              std::to_string(program.params.size()) + " parameters";
      return false;
    }
  }

  OrderedJson files = OrderedJson::array();
  for (int64_t rank = 0; rank < worldSize; ++rank)
    files.push_back(shardFileName(rank, worldSize));
  OrderedJson params = OrderedJson::array();
  uint64_t totalBytes = 0, parameterCount = 0;
  for (size_t index = 0; index < program.params.size(); ++index) {
    const Param &param = program.params[index];
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

    // Group ranks by slice in one pass: the first rank of a group is its owner.
    std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>, std::vector<int64_t>> groups;
    std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> order;
    for (int64_t rank = 0; rank < worldSize; ++rank) {
      Slice slice = sliceForRank(mesh, param, rank);
      auto key = std::make_pair(slice.offset, slice.shape);
      auto [it, inserted] = groups.try_emplace(key);
      if (inserted) {
        order.push_back(key);
        if (!isSliceOwner(mesh, param, rank)) {
          error = "cannot write " + path + ": " + param.name + ": rank " + std::to_string(rank) +
                  " holds a new slice but is not its owner (sharding rule inconsistency)";
          return false;
        }
      }
      it->second.push_back(rank);
    }
    OrderedJson slices = OrderedJson::array();
    for (const auto &key : order) {
      const std::vector<int64_t> &ranks = groups[key];
      int64_t owner = ranks.front();
      const std::string &checksum = checksums[size_t(owner)][index];
      for (int64_t replica : ranks) {
        const std::string &other = checksums[size_t(replica)][index];
        if (other.empty()) {
          error = "cannot write " + path + ": " + param.name + ": rank " +
                  std::to_string(replica) + " reported no checksum: rerun that rank";
          return false;
        }
        if (other != checksum) {
          error = "cannot write " + path + ": " + param.name + ": ranks " +
                  std::to_string(owner) + " and " + std::to_string(replica) +
                  " hold the same slice with different bytes (checksums " + checksum + ", " +
                  other + "): the result depends on the rank, which is a bug; report it";
          return false;
        }
      }
      slices.push_back({{"rank", owner},
                        {"file", shardFileName(owner, worldSize)},
                        {"offset", key.first},
                        {"shape", key.second},
                        {"checksum", checksum},
                        {"replicas", ranks}});
    }

    OrderedJson entry = OrderedJson::object();
    entry["name"] = param.name;
    entry["aliases"] = param.aliases;
    entry["dtype"] = dtypeName(param.dtype);
    entry["shape"] = param.shape;
    entry["sharding"] = std::move(sharding);
    entry["buffer"] = param.buffer;
    entry["slices"] = std::move(slices);
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
  index["params"] = std::move(params);
  index["total_bytes"] = totalBytes;
  index["parameter_count"] = parameterCount;
  std::string text;
  try {
    // Compact: an index of a large mesh lists millions of slices.
    text = index.dump(-1, ' ', false, Json::error_handler_t::strict) + "\n";
  } catch (const Json::exception &e) {
    error = "cannot write " + path + ": a name is not valid UTF-8";
    return false;
  }
  return writeFileAtomically(path, text, error);
}

//===----------------------------------------------------------------------===//
// Output directory
//===----------------------------------------------------------------------===//

bool checkOutputDir(const std::string &dir, const Program &program, bool overwrite,
                    std::string &error) {
  if (!makeDirectories(dir, error))
    return false;
  int64_t worldSize = program.mesh.size();
  std::vector<std::string> foreign;
  std::string firstReason;

  std::string indexPath = joinPath(dir, kIndexFile);
  if (::access(indexPath.c_str(), F_OK) == 0) {
    std::string text, readError, id;
    bool ours = false;
    if (readTextFile(indexPath, text, readError)) {
      Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (json.is_object() && json.contains("program_id") && json["program_id"].is_string()) {
        id = json["program_id"].get<std::string>();
        ours = id == program.programId;
      }
    }
    if (!ours) {
      foreign.push_back(kIndexFile);
      firstReason = "index.json " +
                    (id.empty() ? std::string("is not an initc index") : "has program id " + id);
    }
  }

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
    if (!parseShardFileName(name, rank, world))
      continue;
    // Another mesh size is another program; a shard of ours that is unreadable is simply
    // incomplete and its rank rewrites it.
    std::string reason;
    if (world != worldSize) {
      reason = name + " is from a run with " + std::to_string(world) + " ranks";
    } else {
      SafetensorsReader reader;
      std::string openError;
      if (reader.open(joinPath(dir, name), openError)) {
        const std::string *id = reader.metadataValue("initc.program_id");
        if (!id)
          reason = name + " is not an initc shard";
        else if (*id != program.programId)
          reason = name + " has program id " + *id;
      }
    }
    if (!reason.empty()) {
      foreign.push_back(name);
      if (firstReason.empty())
        firstReason = reason;
    }
  }
  if (foreign.empty())
    return true;
  if (!overwrite) {
    error = dir + " holds a checkpoint of another program (" + firstReason + ", this program is " +
            program.programId + "; " + std::to_string(foreign.size()) +
            " file(s)): pass --overwrite to replace it, or choose another --out";
    return false;
  }
  for (const std::string &name : foreign) {
    std::string path = joinPath(dir, name);
    // Other ranks may be removing the same files at the same time.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      error = "cannot remove " + path + " (--overwrite): " + std::strerror(errno);
      return false;
    }
  }
  return true;
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
  DIR *listing = ::opendir(dir.c_str());
  if (!listing)
    return 0;
  std::vector<std::string> stale;
  while (dirent *entry = ::readdir(listing)) {
    std::string name = entry->d_name;
    for (const std::string &prefix : prefixes)
      if (name.compare(0, prefix.size(), prefix) == 0 && name.find(".tmp-") != std::string::npos)
        stale.push_back(name);
  }
  ::closedir(listing);
  int removed = 0;
  for (const std::string &name : stale)
    removed += ::unlink(joinPath(dir, name).c_str()) == 0;
  return removed;
}

//===----------------------------------------------------------------------===//
// Assemble and verify
//===----------------------------------------------------------------------===//

namespace {

/// Opened shard files with their parsed initc.tensors metadata.
struct OpenShard {
  SafetensorsReader reader;
  std::map<std::string, ShardTensorRecord> records;
};

class ShardCache {
public:
  explicit ShardCache(std::string shardDir) : dir(std::move(shardDir)) {}
  OpenShard *get(const std::string &file, std::string &error) {
    auto it = shards.find(file);
    if (it != shards.end())
      return it->second.get();
    if (shards.size() >= 256) // stay well below the open-file limit
      shards.clear();
    auto shard = std::make_unique<OpenShard>();
    if (!shard->reader.open(joinPath(dir, file), error) ||
        !parseShardTensors(shard->reader, shard->records, error))
      return nullptr;
    return (shards[file] = std::move(shard)).get();
  }

private:
  std::string dir;
  std::map<std::string, std::unique_ptr<OpenShard>> shards;
};

} // namespace

bool assembleCheckpoint(const std::string &dir, const std::string &outPath, std::string &error) {
  Index index;
  if (!readIndex(dir, index, error))
    return false;
  ShardCache cache(dir);
  std::vector<std::unique_ptr<char[]>> buffers;
  std::vector<SafetensorsTensor> tensors;
  nlohmann::ordered_json aliases = nlohmann::ordered_json::object();
  std::vector<char> scratch;

  for (const IndexParam &param : index.params) {
    std::string why;
    if (!slicesCoverExactly(param, why)) {
      error = param.name + ": the slices in index.json do not cover the tensor (" + why +
              "): the index is damaged: " + rerunJobHint(dir, false);
      return false;
    }
    uint64_t elementBits = uint64_t(safetensorsDTypeBits(param.dtype));
    uint64_t bytes = elementCount(param.shape) * elementBits / 8;
    std::unique_ptr<char[]> global(new (std::nothrow) char[bytes ? bytes : 1]);
    if (!global) {
      error = param.name + ": cannot allocate " + std::to_string(bytes) +
              " bytes: assemble is for models that fit in memory";
      return false;
    }
    for (const IndexSlice &slice : param.slices) {
      std::string where = param.name + " on rank " + std::to_string(slice.rank) + " (" +
                          slice.file + ")";
      OpenShard *shard = cache.get(slice.file, error);
      if (!shard) {
        error = where + ": " + error + ": " + rerunHint(dir, slice.rank);
        return false;
      }
      const SafetensorsEntry *entry = shard->reader.find(param.name);
      auto record = shard->records.find(param.name);
      if (!entry || record == shard->records.end()) {
        error = where + ": missing from the file: " + rerunHint(dir, slice.rank);
        return false;
      }
      if (entry->dtype != param.dtype || entry->shape != slice.shape ||
          record->second.offset != slice.offset) {
        error = where + ": the file holds " + entry->dtype + " " + shapeText(entry->shape) +
                " at " + shapeText(record->second.offset) + ", the index expects " +
                param.dtype + " " + shapeText(slice.shape) + " at " + shapeText(slice.offset) +
                ": " + rerunHint(dir, slice.rank);
        return false;
      }
      StreamingChecksum sum;
      BoxScatter scatter(global.get(), param.shape, slice.offset, slice.shape, elementBits / 8);
      scratch.resize(size_t(std::min<uint64_t>(std::max<uint64_t>(entry->bytes(), 1), kReadChunk)));
      for (uint64_t done = 0; done < entry->bytes();) {
        uint64_t piece = std::min<uint64_t>(entry->bytes() - done, scratch.size());
        if (!shard->reader.read(entry->begin + done, scratch.data(), piece, error)) {
          error = where + ": " + error;
          return false;
        }
        sum.update(scratch.data(), size_t(piece));
        scatter.consume(scratch.data(), piece);
        done += piece;
      }
      if (sum.hex() != slice.checksum || sum.hex() != record->second.checksum) {
        error = where + ": checksum mismatch, the file is corrupt: " + rerunHint(dir, slice.rank);
        return false;
      }
    }
    SafetensorsTensor tensor;
    tensor.name = param.name;
    tensor.dtype = param.dtype;
    tensor.shape = param.shape;
    tensor.data = global.get();
    tensor.bytes = bytes;
    tensors.push_back(std::move(tensor));
    buffers.push_back(std::move(global));
    for (const std::string &alias : param.aliases)
      aliases[alias] = param.name;
  }

  SafetensorsMetadata metadata = {{"format", "pt"}};
  if (!aliases.empty())
    metadata.emplace_back("initc.aliases", aliases.dump(-1, ' ', false,
                                                        Json::error_handler_t::replace));
  return writeSafetensors(outPath, tensors, metadata, error);
}

bool verifyCheckpoint(const std::string &dir, std::vector<std::string> &problems,
                      std::string &error) {
  problems.clear();
  Index index;
  if (!readIndex(dir, index, error))
    return false;

  // What each rank's file really holds: its bytes' checksum and what its metadata claims.
  struct Found {
    std::string dtype, actual;
    std::vector<int64_t> shape;
    ShardTensorRecord record;
    bool hasRecord = false;
    bool referenced = false;
  };
  std::vector<std::map<std::string, Found>> found(size_t(index.worldSize));
  std::vector<bool> readable(size_t(index.worldSize), false);
  for (int64_t rank = 0; rank < index.worldSize; ++rank) {
    std::string file = shardFileName(rank, index.worldSize);
    std::string where = "rank " + std::to_string(rank) + " (" + file + ")";
    if (index.files[size_t(rank)] != file) {
      problems.push_back("index.json lists " + index.files[size_t(rank)] + " for " + where +
                         ": the index is damaged: " + rerunJobHint(dir, false));
      continue;
    }
    SafetensorsReader reader;
    std::string readError, why;
    if (!reader.open(joinPath(dir, file), readError)) {
      problems.push_back(where + ": " + readError + ": " + rerunHint(dir, rank));
      continue;
    }
    if (!shardMetadataMatches(reader, index.programId, rank, index.worldSize, why)) {
      problems.push_back(where + ": " + why + ": " + rerunHint(dir, rank));
      continue;
    }
    std::map<std::string, ShardTensorRecord> records;
    if (!parseShardTensors(reader, records, readError)) {
      problems.push_back(where + ": " + readError + ": " + rerunHint(dir, rank));
      continue;
    }
    readable[size_t(rank)] = true;
    for (const SafetensorsEntry &entry : reader.tensors()) {
      Found item;
      item.dtype = entry.dtype;
      item.shape = entry.shape;
      if (!reader.checksum(entry, item.actual, readError)) {
        problems.push_back(entry.name + " on " + where + ": " + readError + ": " +
                           rerunHint(dir, rank));
        item.actual.clear();
      }
      auto record = records.find(entry.name);
      if (record != records.end()) {
        item.record = record->second;
        item.hasRecord = true;
      }
      found[size_t(rank)][entry.name] = std::move(item);
    }
  }

  for (const IndexParam &param : index.params) {
    std::string why;
    if (!slicesCoverExactly(param, why))
      problems.push_back(param.name + ": the slices in index.json do not cover the tensor (" +
                         why + "): the index is damaged: " + rerunJobHint(dir, false));
    for (const IndexSlice &slice : param.slices) {
      for (int64_t rank : slice.replicas) {
        if (!readable[size_t(rank)])
          continue; // already reported
        std::string where = param.name + " on rank " + std::to_string(rank) + " (" +
                            shardFileName(rank, index.worldSize) + ")";
        auto it = found[size_t(rank)].find(param.name);
        if (it == found[size_t(rank)].end()) {
          problems.push_back(where + ": missing from the file: " + rerunHint(dir, rank));
          continue;
        }
        Found &item = it->second;
        item.referenced = true;
        if (!item.hasRecord) {
          problems.push_back(where + ": no initc.tensors entry: " + rerunHint(dir, rank));
          continue;
        }
        if (item.dtype != param.dtype || item.shape != slice.shape ||
            item.record.offset != slice.offset || item.record.globalShape != param.shape) {
          problems.push_back(where + ": the file holds " + item.dtype + " " +
                             shapeText(item.shape) + " at " + shapeText(item.record.offset) +
                             ", the index expects " + param.dtype + " " +
                             shapeText(slice.shape) + " at " + shapeText(slice.offset) + ": " +
                             rerunHint(dir, rank));
          continue;
        }
        if (item.actual.empty())
          continue; // unreadable, already reported
        if (item.actual != item.record.checksum || item.actual != slice.checksum)
          problems.push_back(where + ": checksum mismatch, the file is corrupt: " +
                             rerunHint(dir, rank));
      }
    }
  }

  for (int64_t rank = 0; rank < index.worldSize; ++rank)
    for (const auto &[name, item] : found[size_t(rank)])
      if (!item.referenced)
        problems.push_back(name + " on rank " + std::to_string(rank) + " (" +
                           shardFileName(rank, index.worldSize) +
                           "): not listed in index.json for this rank: " + rerunHint(dir, rank));
  return problems.empty();
}

} // namespace initrt
