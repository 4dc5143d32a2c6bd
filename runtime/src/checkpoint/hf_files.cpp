#include "checkpoint/hf_files.h"

#include "initrt/base/checksum.h"
#include "initrt/base/files.h"
#include "initrt/base/json_text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <unistd.h>

namespace initrt::hf {

namespace {

using OrderedJson = nlohmann::ordered_json;
using Json = nlohmann::json;

// Bounded scratch for reading boxes back.
constexpr uint64_t kReadChunk = 8ull << 20;

OrderedJson sliceJson(const Slice &box) {
  return OrderedJson{{"offset", box.offset}, {"shape", box.shape}};
}

bool readJsonFile(const std::string &path, Json &json, std::string &error) {
  std::string text, why;
  if (readRegularFile(path, kMaxJsonFileBytes, text, why) != ReadFileStatus::Ok) {
    error = path + ": " + why;
    return false;
  }
  if (!parseJsonText(text, json, why) || !json.is_object()) {
    error = path + " is not valid JSON" + (why.empty() ? "" : ": " + why);
    return false;
  }
  return true;
}

template <class T> bool getTo(const Json &json, const char *key, T &out) {
  auto it = json.find(key);
  if (it == json.end())
    return false;
  try {
    out = it->get<T>();
  } catch (const Json::exception &) {
    return false;
  }
  return true;
}

bool readSlice(const Json &json, SliceRecord &slice) {
  return json.is_object() && getTo(json, "offset", slice.box.offset) &&
         getTo(json, "shape", slice.box.shape) &&
         slice.box.offset.size() == slice.box.shape.size() &&
         getTo(json, "checksum", slice.checksum) && getTo(json, "rank", slice.rank);
}

} // namespace

std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}
std::string partialDir(const std::string &dir) { return joinPath(dir, kPartialDir); }
std::string partialStatePath(const std::string &dir) {
  return joinPath(partialDir(dir), "state.json");
}
std::string partialDataPath(const std::string &dir, const std::string &file) {
  return joinPath(partialDir(dir), file + kPartialSuffix);
}
std::string rankRecordPath(const std::string &dir, int64_t rank) {
  char name[32];
  std::snprintf(name, sizeof name, "rank-%05lld.json", (long long)rank);
  return joinPath(partialDir(dir), name);
}

BoxRuns::BoxRuns(const std::vector<int64_t> &globalShape, const Slice &box,
                 uint64_t elementBytes, uint64_t tensorOffset) {
  const size_t rank = globalShape.size();
  std::vector<uint64_t> strides(rank, elementBytes);
  for (size_t d = rank; d-- > 1;)
    strides[d - 1] = strides[d] * uint64_t(globalShape[d]);
  if (box.numElements() == 0)
    return;
  base = tensorOffset;
  for (size_t d = 0; d < rank; ++d)
    base += uint64_t(box.offset[d]) * strides[d];
  // The run starts at the last dim the box does not take whole; every dim before it that the
  // box crosses (extent > 1) is a loop over runs.
  size_t k = 0;
  for (size_t d = rank; d-- > 0;)
    if (box.shape[d] != globalShape[d]) {
      k = d;
      break;
    }
  run = rank == 0 ? elementBytes : uint64_t(box.shape[k]) * strides[k];
  runs = 1;
  for (size_t d = 0; d < k; ++d)
    if (box.shape[d] > 1) {
      outer.push_back(box.shape[d]);
      stride.push_back(strides[d]);
      runs *= uint64_t(box.shape[d]);
    }
}

uint64_t BoxRuns::runOffset(uint64_t index) const {
  uint64_t offset = base;
  for (size_t d = outer.size(); d-- > 0;) {
    offset += (index % uint64_t(outer[d])) * stride[d];
    index /= uint64_t(outer[d]);
  }
  return offset;
}

void windowFor(uint64_t from, uint64_t to, uint64_t fileSize, uint64_t pageBytes,
               uint64_t &begin, uint64_t &end) {
  begin = from - from % pageBytes;
  end = std::max(to, std::min(fileSize, begin + kWindowBytes));
}

uint64_t countWriteCalls(const Program &program, const HfPlan &plan, int64_t rank,
                         uint64_t pieceBytes, bool windows) {
  uint64_t calls = 0;
  for (const ParamBox &box : writeBoxes(program, rank)) {
    const Param &param = program.params[box.param];
    const HfPlace &place = plan.places[box.param];
    BoxRuns runs(param.shape, box.box, uint64_t(dtypeBytes(param.dtype)), place.offset);
    const uint64_t bytes = runs.count() * runs.runBytes();
    if (bytes == 0)
      continue;
    if (windows && usesWindow(runs)) {
      // The writer's windows, run by run: a new one wherever a run leaves the current one.
      const uint64_t fileSize = plan.files[size_t(place.file)].size;
      uint64_t begin = 0, end = 0;
      for (uint64_t r = 0; r < runs.count(); ++r) {
        const uint64_t at = runs.runOffset(r);
        if (at < begin || at + runs.runBytes() > end || end == 0) {
          windowFor(at, at + runs.runBytes(), fileSize, 4096, begin, end);
          calls += 2;
        }
      }
      continue;
    }
    if (runs.count() == 1) {
      calls += (bytes + pieceBytes - 1) / pieceBytes;
      continue;
    }
    // Each run is one call, plus one wherever a piece ends inside a run.
    calls += runs.count();
    for (uint64_t end = pieceBytes; end < bytes; end += pieceBytes)
      calls += end % runs.runBytes() != 0;
  }
  return calls;
}

bool readBox(int fd, const BoxRuns &runs, const std::function<void(const void *, uint64_t)> &take,
             std::string &error) {
  std::unique_ptr<char[]> scratch(new char[kReadChunk]);
  for (uint64_t r = 0; r < runs.count(); ++r) {
    uint64_t offset = runs.runOffset(r), left = runs.runBytes();
    while (left > 0) {
      const uint64_t want = std::min(left, kReadChunk);
      ssize_t got = ::pread(fd, scratch.get(), want, off_t(offset));
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0) {
        error = got < 0 ? std::strerror(errno) : "the file ends early (truncated)";
        return false;
      }
      take(scratch.get(), uint64_t(got));
      offset += uint64_t(got);
      left -= uint64_t(got);
    }
  }
  return true;
}

bool checksumBox(int fd, const BoxRuns &runs, std::string &hex, std::string &error) {
  StreamingChecksum sum;
  if (!readBox(fd, runs, [&](const void *data, uint64_t bytes) { sum.update(data, bytes); },
               error))
    return false;
  hex = sum.hex();
  return true;
}

std::string recordJson(const Program &program, const HfPlan &plan, uint64_t maxShardBytes,
                       const std::vector<std::vector<std::string>> &checksums) {
  OrderedJson json;
  json["format"] = kRecordFormat;
  json["version"] = kRecordVersion;
  json["program_id"] = program.programId;
  json["model"] = program.modelName;
  json["mesh"] = OrderedJson{{"axes", program.mesh.axisNames}, {"shape", program.mesh.shape}};
  json["max_shard_size"] = maxShardBytes;
  OrderedJson files = OrderedJson::array();
  for (const HfFile &file : plan.files)
    files.push_back(OrderedJson{{"name", file.name}, {"size", file.size}});
  json["files"] = std::move(files);
  // Every rank's boxes, gathered per parameter.
  std::vector<OrderedJson> slices(program.params.size(), OrderedJson::array());
  for (size_t r = 0; r < checksums.size(); ++r)
    for (const ParamBox &box : writeBoxes(program, int64_t(r))) {
      OrderedJson slice = sliceJson(box.box);
      slice["checksum"] = checksums[r][box.param];
      slice["rank"] = r;
      slices[box.param].push_back(std::move(slice));
    }
  OrderedJson tensors = OrderedJson::object();
  int64_t index = 0;
  for (size_t p = 0; p < program.params.size(); ++p) {
    const Param &param = program.params[p];
    if (!param.persistent)
      continue;
    const HfPlace &place = plan.places[p];
    OrderedJson tensor;
    tensor["index"] = index++;
    tensor["file"] = place.file >= 0 ? plan.files[size_t(place.file)].name : "";
    tensor["dtype"] = dtypeName(param.dtype);
    tensor["shape"] = param.shape;
    tensor["aliases"] = param.aliases;
    tensor["offset"] = place.offset;
    tensor["slices"] = std::move(slices[p]);
    tensors[param.name] = std::move(tensor);
  }
  json["tensors"] = std::move(tensors);
  return json.dump(1) + "\n";
}

bool readRecord(const std::string &dir, Record &record, std::string &error) {
  Json json;
  const std::string path = joinPath(dir, kRecordFile);
  if (!readJsonFile(path, json, error))
    return false;
  std::string format;
  int version = 0;
  if (!getTo(json, "format", format) || format != kRecordFormat || !getTo(json, "version", version)) {
    error = path + " is not an initc hf checkpoint record";
    return false;
  }
  if (version != kRecordVersion) {
    error = path + " has version " + std::to_string(version) + ", this initc reads version " +
            std::to_string(kRecordVersion);
    return false;
  }
  auto bad = [&](const std::string &what) {
    error = path + ": " + what + " is missing or malformed";
    return false;
  };
  if (!getTo(json, "program_id", record.programId))
    return bad("\"program_id\"");
  getTo(json, "model", record.model);
  auto mesh = json.find("mesh");
  if (mesh == json.end() || !mesh->is_object() || !getTo(*mesh, "axes", record.meshAxes) ||
      !getTo(*mesh, "shape", record.meshShape))
    return bad("\"mesh\"");
  if (!getTo(json, "max_shard_size", record.maxShardSize))
    return bad("\"max_shard_size\"");
  auto files = json.find("files");
  if (files == json.end() || !files->is_array())
    return bad("\"files\"");
  for (const Json &file : *files) {
    FileRecord entry;
    if (!file.is_object() || !getTo(file, "name", entry.name) || !getTo(file, "size", entry.size))
      return bad("\"files\"");
    record.files.push_back(std::move(entry));
  }
  auto tensors = json.find("tensors");
  if (tensors == json.end() || !tensors->is_object())
    return bad("\"tensors\"");
  for (auto it = tensors->begin(); it != tensors->end(); ++it) {
    const Json &value = it.value();
    TensorRecord tensor;
    auto slices = value.find("slices");
    if (!value.is_object() || !getTo(value, "index", tensor.index) ||
        !getTo(value, "file", tensor.file) || !getTo(value, "dtype", tensor.dtype) ||
        !getTo(value, "shape", tensor.shape) || !getTo(value, "offset", tensor.offset) ||
        slices == value.end() || !slices->is_array())
      return bad("tensor \"" + it.key() + "\"");
    getTo(value, "aliases", tensor.aliases);
    for (const Json &slice : *slices) {
      SliceRecord entry;
      if (!readSlice(slice, entry) || entry.box.shape.size() != tensor.shape.size())
        return bad("a slice of tensor \"" + it.key() + "\"");
      tensor.slices.push_back(std::move(entry));
    }
    record.tensors[it.key()] = std::move(tensor);
  }
  return true;
}

std::string rankRecordJson(const Program &program, uint64_t maxShardBytes, int64_t rank,
                           const std::vector<ParamBox> &boxes,
                           const std::vector<std::string> &checksums) {
  OrderedJson json;
  json["format"] = kPartialFormat;
  json["program_id"] = program.programId;
  json["max_shard_size"] = maxShardBytes;
  json["rank"] = rank;
  OrderedJson list = OrderedJson::array();
  for (size_t b = 0; b < boxes.size(); ++b) {
    OrderedJson entry = sliceJson(boxes[b].box);
    entry["param"] = boxes[b].param;
    entry["checksum"] = checksums[b];
    entry["rank"] = rank;
    list.push_back(std::move(entry));
  }
  json["boxes"] = std::move(list);
  return json.dump() + "\n";
}

bool readRankRecord(const std::string &path, RankRecord &record, std::string &error) {
  Json json;
  if (!readJsonFile(path, json, error))
    return false;
  std::string format;
  auto boxes = json.find("boxes");
  if (!getTo(json, "format", format) || format != kPartialFormat ||
      !getTo(json, "program_id", record.programId) ||
      !getTo(json, "max_shard_size", record.maxShardSize) || boxes == json.end() ||
      !boxes->is_array()) {
    error = path + " is not an initc rank record";
    return false;
  }
  for (const Json &box : *boxes) {
    SliceRecord slice;
    size_t param = 0;
    if (!readSlice(box, slice) || !getTo(box, "param", param)) {
      error = path + " is not an initc rank record";
      return false;
    }
    record.boxes[param] = std::move(slice);
  }
  return true;
}

bool syncDirectory(const std::string &dir, std::string &error) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    error = "cannot sync the directory " + dir + ": " + std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    return false;
  }
  ::close(fd);
  return true;
}

} // namespace initrt::hf
