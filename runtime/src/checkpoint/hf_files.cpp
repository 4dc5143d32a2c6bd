#include "checkpoint/hf_files.h"

#include "initrt/base/checksum.h"
#include "initrt/base/files.h"
#include "initrt/base/json_text.h"
#include "initrt/base/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace initrt::hf {

namespace {

using OrderedJson = nlohmann::ordered_json;
using Json = nlohmann::json;

// Bounded scratch for reading boxes back.
constexpr uint64_t kReadChunk = 8ull << 20;

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

uint64_t hashOf(const void *data, size_t bytes) {
  StreamingChecksum sum;
  sum.update(data, bytes);
  return sum.value();
}

void putU64(std::string &out, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    out.push_back(char((value >> (8 * i)) & 0xff));
}
uint64_t getU64(const char *in) {
  uint64_t value = 0;
  for (int i = 8; i-- > 0;)
    value = value << 8 | uint64_t(static_cast<unsigned char>(in[i]));
  return value;
}

// A sums file's fixed header: magic, version, program id length, rank, world size, box count.
constexpr char kSumsMagic[8] = {'I', 'N', 'I', 'T', 'C', 'S', 'U', 'M'};
constexpr uint32_t kSumsVersion = 1;
constexpr uint64_t kSumsFixedBytes = 40;
constexpr size_t kMaxProgramIdBytes = 1024;

OrderedJson tensorJson(const Param &param, const HfPlan &plan, size_t p, int64_t index,
                       bool whole) {
  const HfPlace &place = plan.places[p];
  OrderedJson tensor;
  tensor["index"] = index;
  tensor["file"] = place.file >= 0 ? plan.files[size_t(place.file)].name : "";
  tensor["dtype"] = dtypeName(param.dtype);
  tensor["shape"] = param.shape;
  tensor["aliases"] = param.aliases;
  tensor["offset"] = place.offset;
  // Only the dims split by a mesh axis, so that an unsplit tensor's entry stays short.
  std::vector<std::vector<int>> split = whole ? std::vector<std::vector<int>>() : param.splitAxes;
  while (!split.empty() && split.back().empty())
    split.pop_back();
  tensor["split_axes"] = split;
  if (!place.storedName.empty())
    tensor["stored_as"] = place.storedName;
  // Its pieces, the first at file and offset: [file index, offset, bytes] each.
  if (!place.pieces.empty()) {
    OrderedJson pieces = OrderedJson::array();
    for (const HfPiece &piece : place.pieces)
      pieces.push_back(OrderedJson::array({piece.file, piece.offset, piece.bytes}));
    tensor["pieces"] = std::move(pieces);
  }
  // Only the ranks of its pipeline stage hold (and write) a staged parameter.
  if (!whole && param.stageAxis >= 0)
    tensor["stage"] = {param.stageAxis, param.stage};
  return tensor;
}

std::string recordText(const Program &program, const HfPlan &plan, uint64_t maxShardBytes,
                       bool whole) {
  bool pieces = false;
  for (const HfPlace &place : plan.places)
    pieces = pieces || !place.pieces.empty() || !place.storedName.empty();
  OrderedJson json;
  json["format"] = kRecordFormat;
  json["version"] = pieces ? kPiecesRecordVersion : kRecordVersion;
  json["program_id"] = program.programId;
  json["model"] = program.modelName;
  json["mesh"] = whole ? OrderedJson{{"axes", OrderedJson::array()}, {"shape", OrderedJson::array()}}
                       : OrderedJson{{"axes", program.mesh.axisNames}, {"shape", program.mesh.shape}};
  json["max_shard_size"] = maxShardBytes;
  if (pieces)
    json["hf_experts"] = hfExpertsName(HfExperts::PerExpert);
  json["write_boxes"] = OrderedJson{{"rule", kWriteBoxRule}, {"min_box_bytes", kMinWriteBoxBytes}};
  json["sums"] = OrderedJson{{"dir", kSumsDir}, {"ranks", whole ? 1 : program.mesh.size()}};
  OrderedJson files = OrderedJson::array();
  for (const HfFile &file : plan.files)
    files.push_back(OrderedJson{{"name", file.name}, {"size", file.size}});
  json["files"] = std::move(files);
  OrderedJson tensors = OrderedJson::object();
  int64_t index = 0;
  for (size_t p = 0; p < program.params.size(); ++p)
    if (program.params[p].persistent)
      tensors[program.params[p].name] = tensorJson(program.params[p], plan, p, index++, whole);
  json["tensors"] = std::move(tensors);
  return json.dump(1) + "\n";
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
std::string sumsDir(const std::string &dir) { return joinPath(dir, kSumsDir); }
std::string sumsPath(const std::string &dir, int64_t rank) {
  char name[32];
  std::snprintf(name, sizeof name, "rank-%05lld.sums", (long long)rank);
  return joinPath(sumsDir(dir), name);
}
std::string basePath(const std::string &dir, int64_t rank) {
  char name[32];
  std::snprintf(name, sizeof name, "rank-%05lld.base", (long long)rank);
  return joinPath(sumsDir(dir), name);
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

BoxPlaces::BoxPlaces(const std::vector<int64_t> &globalShape, const Slice &box,
                     uint64_t elementBytes, std::vector<HfPiece> pieces)
    : tensorRuns(globalShape, box, elementBytes, 0), pieces(std::move(pieces)) {}

void BoxPlaces::locate(uint64_t offset, int64_t &file, uint64_t &at,
                       uint64_t &contiguous) const {
  const uint64_t run = tensorRuns.runBytes();
  if (run == 0) { // an empty box: nowhere, but ordered by its tensor's first piece
    file = pieces.front().file;
    at = pieces.front().offset;
    contiguous = 0;
    return;
  }
  const uint64_t within = offset % run;
  const uint64_t inTensor = tensorRuns.runOffset(offset / run) + within;
  // The last piece that begins at or before the byte.
  auto next = std::upper_bound(pieces.begin(), pieces.end(), inTensor,
                               [](uint64_t value, const HfPiece &p) { return value < p.begin; });
  const HfPiece &piece = *(next - 1);
  file = piece.file;
  at = piece.offset + (inTensor - piece.begin);
  contiguous = std::min(run - within, piece.begin + piece.bytes - inTensor);
}

std::vector<int64_t> BoxPlaces::files() const {
  std::vector<int64_t> out;
  for (uint64_t offset = 0, end = bytes(); offset < end;) {
    int64_t file;
    uint64_t at, n;
    locate(offset, file, at, n);
    if (std::find(out.begin(), out.end(), file) == out.end())
      out.push_back(file);
    offset += n;
  }
  return out;
}

void windowFor(uint64_t from, uint64_t to, uint64_t fileSize, uint64_t pageBytes,
               uint64_t &begin, uint64_t &end) {
  begin = from - from % pageBytes;
  end = std::max(to, std::min(fileSize, begin + kWindowBytes));
}

uint64_t countWriteCalls(const Program &program, const HfPlan &plan, int64_t rank,
                         uint64_t pieceBytes, bool windows) {
  // The writer's own steps (hf_layout.cpp): boxes by where their first byte lies, each handed
  // over in pieces of `pieceBytes`, each piece cut where BoxPlaces cuts it (a run's end, an
  // expert's tensor's end); one pwrite per cut (per GiB of it), or a copy into the window, which
  // stays mapped across boxes until a cut leaves it.
  std::vector<std::pair<std::pair<int64_t, uint64_t>, BoxPlaces>> boxes;
  for (const ParamBox &box : writeBoxes(program, rank)) {
    const Param &param = program.params[box.param];
    BoxPlaces places(param.shape, box.box, uint64_t(dtypeBytes(param.dtype)),
                     hfPieces(plan.places[box.param]));
    std::pair<int64_t, uint64_t> first;
    uint64_t contiguous;
    places.locate(0, first.first, first.second, contiguous);
    boxes.emplace_back(first, std::move(places));
  }
  std::stable_sort(boxes.begin(), boxes.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  uint64_t calls = 0;
  int64_t windowFile = -1;
  uint64_t windowBegin = 0, windowEnd = 0;
  for (const auto &[first, places] : boxes) {
    const uint64_t bytes = places.bytes();
    const bool windowed = windows && usesWindow(places.runs());
    for (uint64_t start = 0; start < bytes; start += pieceBytes) {
      const uint64_t end = std::min(bytes, start + pieceBytes);
      for (uint64_t offset = start; offset < end;) {
        int64_t file;
        uint64_t at, contiguous;
        places.locate(offset, file, at, contiguous);
        const uint64_t n = std::min(end - offset, contiguous);
        if (!windowed) {
          calls += (n + (1ull << 30) - 1) >> 30;
        } else if (windowFile != file || at < windowBegin || at + n > windowEnd) {
          calls += windowFile >= 0 ? 2 : 1; // munmap of the last window, mmap of this one
          windowFor(at, at + n, plan.files[size_t(file)].size, 4096, windowBegin, windowEnd);
          windowFile = file;
        }
        offset += n;
      }
    }
  }
  return calls + (windowFile >= 0); // the last window's munmap
}

bool checksumBox(const BoxPlaces &places, const std::function<int(int64_t)> &fdOf,
                 const std::function<std::string(int64_t)> &fileName, std::string &hex,
                 std::string &error) {
  StreamingChecksum sum;
  std::unique_ptr<char[]> scratch(new char[kReadChunk]);
  for (uint64_t offset = 0, end = places.bytes(); offset < end;) {
    int64_t file;
    uint64_t at, left;
    places.locate(offset, file, at, left);
    const int fd = fdOf(file);
    if (fd < 0) {
      error = errno == ENOENT ? fileName(file) + " is missing"
                              : "cannot open " + fileName(file) + ": " + std::strerror(errno);
      return false;
    }
    offset += left;
    while (left > 0) {
      const uint64_t want = std::min(left, kReadChunk);
      ssize_t got = ::pread(fd, scratch.get(), want, off_t(at));
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0) {
        error = fileName(file) + ": " +
                (got < 0 ? std::strerror(errno) : "the file ends early (truncated)");
        return false;
      }
      sum.update(scratch.get(), uint64_t(got));
      at += uint64_t(got);
      left -= uint64_t(got);
    }
  }
  hex = sum.hex();
  return true;
}

std::string recordJson(const Program &program, const HfPlan &plan, uint64_t maxShardBytes) {
  return recordText(program, plan, maxShardBytes, false);
}
std::string wholeTensorRecordJson(const Program &program, const HfPlan &plan,
                                  uint64_t maxShardBytes) {
  return recordText(program, plan, maxShardBytes, true);
}

Program Record::program() const {
  Program out;
  out.programId = programId;
  out.modelName = model;
  out.mesh.axisNames = meshAxes;
  out.mesh.shape = meshShape;
  out.params.resize(tensors.size());
  for (const auto &[name, tensor] : tensors) {
    Param &param = out.params[size_t(tensor.index)];
    param.name = name;
    param.aliases = tensor.aliases;
    parseDType(tensor.dtype, param.dtype);
    param.shape = tensor.shape;
    param.splitAxes = tensor.splitAxes;
    param.stageAxis = tensor.stageAxis;
    param.stage = tensor.stage;
  }
  return out;
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
  if (version != kRecordVersion && version != kPiecesRecordVersion) {
    error = path + " has version " + std::to_string(version) + ", this initc reads version " +
            std::to_string(kRecordVersion) + ": verify it with the initc that wrote it, or " +
            "rerun the job with --overwrite";
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
      !getTo(*mesh, "shape", record.meshShape) ||
      record.meshAxes.size() != record.meshShape.size())
    return bad("\"mesh\"");
  int64_t world = 1;
  for (int64_t size : record.meshShape) {
    if (size < 1 || size > (int64_t(1) << 24) || world * size > (int64_t(1) << 24))
      return bad("\"mesh\"");
    world *= size;
  }
  if (!getTo(json, "max_shard_size", record.maxShardSize))
    return bad("\"max_shard_size\"");
  std::string experts = hfExpertsName(HfExperts::Stacked);
  if (json.contains("hf_experts") &&
      (!getTo(json, "hf_experts", experts) || !parseHfExperts(experts, record.experts)))
    return bad("\"hf_experts\"");
  // Pieces in a record of version 3 alone, so that no reader of version 2 takes them for one
  // range.
  if ((record.experts == HfExperts::PerExpert) != (version == kPiecesRecordVersion))
    return bad("\"hf_experts\"");
  // The boxes are recomputed with this initc's writeBoxes: only from a record of the same rule.
  auto rule = json.find("write_boxes");
  std::string ruleName;
  uint64_t minBoxBytes = 0;
  if (rule == json.end() || !rule->is_object() || !getTo(*rule, "rule", ruleName) ||
      !getTo(*rule, "min_box_bytes", minBoxBytes))
    return bad("\"write_boxes\"");
  if (ruleName != kWriteBoxRule || minBoxBytes != kMinWriteBoxBytes) {
    error = path + " divides the tensors into boxes by rule " + ruleName + " with boxes of at " +
            "least " + std::to_string(minBoxBytes) + " bytes; this initc's rule is " +
            kWriteBoxRule + " with " + std::to_string(kMinWriteBoxBytes) +
            ": verify it with the initc that wrote it";
    return false;
  }
  auto sums = json.find("sums");
  std::string sumsDirName;
  int64_t ranks = 0;
  if (sums == json.end() || !sums->is_object() || !getTo(*sums, "dir", sumsDirName) ||
      sumsDirName != kSumsDir || !getTo(*sums, "ranks", ranks) || ranks != world)
    return bad("\"sums\"");
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
  std::vector<bool> indexSeen(tensors->size(), false);
  for (auto it = tensors->begin(); it != tensors->end(); ++it) {
    const Json &value = it.value();
    TensorRecord tensor;
    DType dtype;
    if (!value.is_object() || !getTo(value, "index", tensor.index) ||
        !getTo(value, "file", tensor.file) || !getTo(value, "dtype", tensor.dtype) ||
        !getTo(value, "shape", tensor.shape) || !getTo(value, "offset", tensor.offset) ||
        !getTo(value, "split_axes", tensor.splitAxes) || !parseDType(tensor.dtype, dtype) ||
        tensor.index < 0 || size_t(tensor.index) >= indexSeen.size() ||
        indexSeen[size_t(tensor.index)] || tensor.splitAxes.size() > tensor.shape.size())
      return bad("tensor \"" + it.key() + "\"");
    indexSeen[size_t(tensor.index)] = true;
    for (int64_t dim : tensor.shape)
      if (dim < 0)
        return bad("tensor \"" + it.key() + "\"");
    // Each mesh axis splits at most one dim, once: what sliceForRank assumes.
    std::vector<bool> used(record.meshShape.size(), false);
    for (const std::vector<int> &axes : tensor.splitAxes)
      for (int axis : axes) {
        if (axis < 0 || size_t(axis) >= used.size() || used[size_t(axis)])
          return bad("tensor \"" + it.key() + "\"'s \"split_axes\"");
        used[size_t(axis)] = true;
      }
    if (auto stage = value.find("stage"); stage != value.end()) {
      std::vector<int64_t> placed;
      if (!getTo(value, "stage", placed) || placed.size() != 2 || placed[0] < 0 ||
          size_t(placed[0]) >= used.size() || used[size_t(placed[0])] || placed[1] < 0 ||
          placed[1] >= record.meshShape[size_t(placed[0])])
        return bad("tensor \"" + it.key() + "\"'s \"stage\"");
      tensor.stageAxis = int(placed[0]);
      tensor.stage = placed[1];
    }
    getTo(value, "aliases", tensor.aliases);
    if (value.contains("stored_as") &&
        (version != kPiecesRecordVersion || !getTo(value, "stored_as", tensor.storedName)))
      return bad("tensor \"" + it.key() + "\"'s \"stored_as\"");
    if (auto pieces = value.find("pieces"); pieces != value.end()) {
      // Contiguous from the tensor's first byte to its last, each in a listed file.
      std::vector<std::vector<uint64_t>> list;
      uint64_t bytes = uint64_t(safetensorsDTypeBits(tensor.dtype) / 8);
      for (int64_t dim : tensor.shape)
        bytes *= uint64_t(dim);
      if (version != kPiecesRecordVersion || !getTo(value, "pieces", list) || list.empty())
        return bad("tensor \"" + it.key() + "\"'s \"pieces\"");
      uint64_t begin = 0;
      for (const std::vector<uint64_t> &entry : list) {
        if (entry.size() != 3 || entry[0] >= record.files.size() || entry[2] > bytes - begin)
          return bad("tensor \"" + it.key() + "\"'s \"pieces\"");
        tensor.pieces.push_back(HfPiece{begin, entry[2], int64_t(entry[0]), entry[1]});
        begin += entry[2];
      }
      if (begin != bytes || record.files[size_t(tensor.pieces[0].file)].name != tensor.file ||
          tensor.pieces[0].offset != tensor.offset)
        return bad("tensor \"" + it.key() + "\"'s \"pieces\"");
    }
    record.tensors[it.key()] = std::move(tensor);
  }
  return true;
}

std::string partialStateJson(const std::string &programId, uint64_t maxShardBytes,
                             HfExperts experts) {
  OrderedJson json;
  json["format"] = kPartialFormat;
  json["program_id"] = programId;
  json["max_shard_size"] = maxShardBytes;
  json["hf_experts"] = hfExpertsName(experts);
  return json.dump() + "\n";
}

bool readPartialState(const std::string &dir, std::string &programId, uint64_t &maxShardBytes,
                      HfExperts &experts) {
  Json json;
  std::string error, format, expertsName;
  return readJsonFile(partialStatePath(dir), json, error) && getTo(json, "format", format) &&
         format == kPartialFormat && getTo(json, "program_id", programId) &&
         getTo(json, "max_shard_size", maxShardBytes) &&
         getTo(json, "hf_experts", expertsName) && parseHfExperts(expertsName, experts);
}

std::string sumsFileBytes(const std::string &programId, int64_t rank, int64_t worldSize,
                          const std::vector<uint64_t> &sums) {
  std::string out(kSumsMagic, sizeof kSumsMagic);
  const uint64_t idBytes = programId.size();
  putU64(out, uint64_t(kSumsVersion) | idBytes << 32); // two u32s, little-endian
  putU64(out, uint64_t(rank));
  putU64(out, uint64_t(worldSize));
  putU64(out, sums.size());
  out += programId;
  out.append((8 - out.size() % 8) % 8, '\0');
  for (uint64_t sum : sums)
    putU64(out, sum);
  putU64(out, hashOf(out.data(), out.size()));
  return out;
}

bool readSumsFile(const std::string &path, const std::string &programId, int64_t rank,
                  int64_t worldSize, uint64_t boxes, std::vector<uint64_t> &sums,
                  std::string &error) {
  // Its size follows from what it must hold: a longer or shorter file is not this rank's.
  const uint64_t headerBytes = (kSumsFixedBytes + programId.size() + 7) / 8 * 8;
  const uint64_t size = headerBytes + 8 * boxes + 8;
  std::string bytes, why;
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0) {
    error = path + " is missing";
    return false;
  }
  switch (readRegularFile(path, size, bytes, why)) {
  case ReadFileStatus::Ok:
    break;
  case ReadFileStatus::TooLarge:
    error = path + " is " + std::to_string(info.st_size) + " bytes, not " + std::to_string(size) +
            " (changed)";
    return false;
  default:
    error = path + ": " + why;
    return false;
  }
  if (bytes.size() < kSumsFixedBytes || std::memcmp(bytes.data(), kSumsMagic, 8) != 0) {
    error = path + " is not an initc sums file";
    return false;
  }
  const uint64_t versionAndId = getU64(bytes.data() + 8);
  if (uint32_t(versionAndId) != kSumsVersion) {
    error = path + " has version " + std::to_string(uint32_t(versionAndId)) +
            ", this initc reads version " + std::to_string(kSumsVersion);
    return false;
  }
  const uint64_t idBytes = versionAndId >> 32;
  const uint64_t fileRank = getU64(bytes.data() + 16), fileWorld = getU64(bytes.data() + 24),
                 fileBoxes = getU64(bytes.data() + 32);
  if (idBytes != programId.size() || idBytes > kMaxProgramIdBytes ||
      bytes.size() < kSumsFixedBytes + idBytes ||
      bytes.compare(kSumsFixedBytes, idBytes, programId) != 0) {
    error = path + " is another program's (its program id is not " + programId + ")";
    return false;
  }
  if (fileRank != uint64_t(rank) || fileWorld != uint64_t(worldSize)) {
    error = path + " is rank " + std::to_string(fileRank) + " of " + std::to_string(fileWorld) +
            "'s, not rank " + std::to_string(rank) + " of " + std::to_string(worldSize) + "'s";
    return false;
  }
  if (fileBoxes != boxes) {
    error = path + " lists " + std::to_string(fileBoxes) + " boxes, not the " +
            std::to_string(boxes) + " the rank writes";
    return false;
  }
  if (bytes.size() != size) {
    error = path + " is " + std::to_string(bytes.size()) + " bytes, not " + std::to_string(size) +
            " (" + (bytes.size() < size ? "truncated" : "changed") + ")";
    return false;
  }
  if (getU64(bytes.data() + size - 8) != hashOf(bytes.data(), size - 8)) {
    error = path + " does not match its own checksum (changed after it was written)";
    return false;
  }
  sums.resize(boxes);
  for (uint64_t b = 0; b < boxes; ++b)
    sums[b] = getU64(bytes.data() + headerBytes + 8 * b);
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
