#include "initrt/base/base_checkpoint.h"

#include "initrt/base/files.h"
#include "initrt/base/hf_plan.h"
#include "initrt/base/json_text.h"
#include "initrt/base/report.h"

#include <algorithm>
#include <cerrno>
#include <set>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace initrt {

namespace {

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The weight_map of a Hugging Face index: tensor name -> file name in the index's directory.
bool readWeightMap(const std::string &path, std::map<std::string, std::string> &out,
                   FileStamp &stamp, std::string &error) {
  std::string text, why;
  if (readRegularFile(path, kMaxJsonFileBytes, text, why, &stamp) != ReadFileStatus::Ok) {
    error = path + ": cannot read the index: " + why;
    return false;
  }
  nlohmann::json root;
  if (!parseJsonText(text, root, why)) {
    error = path + ": not valid JSON (" + why + ")";
    return false;
  }
  if (!root.is_object() || !root.contains("weight_map") || !root["weight_map"].is_object()) {
    error = path + ": not a safetensors index: it has no \"weight_map\" object (name a "
                   ".safetensors file, or the model.safetensors.index.json next to its shards)";
    return false;
  }
  for (const auto &[name, file] : root["weight_map"].items()) {
    if (!file.is_string() || file.get<std::string>().empty() ||
        file.get<std::string>().find_first_of(std::string("/\0", 2)) != std::string::npos) {
      error = path + ": weight_map[\"" + name + "\"] must be a file name next to the index";
      return false;
    }
    out[name] = file.get<std::string>();
  }
  return true;
}

} // namespace

const std::map<std::string, std::string> *BaseFiles::weightMap(const std::string &index,
                                                               std::string &error) {
  if (auto failed = failures.find(index); failed != failures.end()) {
    error = failed->second;
    return nullptr;
  }
  auto known = weightMaps.find(index);
  if (known == weightMaps.end()) {
    std::map<std::string, std::string> map;
    if (!readWeightMap(index, map, indexStamps[index], error)) {
      indexStamps.erase(index);
      failures[index] = error;
      return nullptr;
    }
    known = weightMaps.emplace(index, std::move(map)).first;
  }
  return &known->second;
}

std::optional<std::string> BaseFiles::locate(const std::string &file, const std::string &tensor,
                                             std::string &error) {
  if (!endsWith(file, ".json"))
    return file;
  const std::map<std::string, std::string> *map = weightMap(file, error);
  if (!map)
    return std::nullopt;
  auto entry = map->find(tensor);
  if (entry == map->end()) {
    // A stacked tensor of the original per-expert format: where its first expert's tensor is.
    const std::map<std::string, Original> &stackedNames = originals(file);
    if (auto original = stackedNames.find(tensor); original != stackedNames.end())
      entry = map->find(original->second.parts.empty() ? original->second.name
                                                        : original->second.parts.begin()->second);
  }
  if (entry == map->end()) {
    error = file + " lists no tensor \"" + tensor + "\" in its weight_map";
    return std::nullopt;
  }
  size_t slash = file.rfind('/');
  return (slash == std::string::npos ? "" : file.substr(0, slash + 1)) + entry->second;
}

const SafetensorsReader *BaseFiles::open(const std::string &path, std::string &error) {
  if (auto failed = failures.find(path); failed != failures.end()) {
    error = failed->second;
    return nullptr;
  }
  auto known = files.find(path);
  if (known == files.end()) {
    auto reader = std::make_unique<SafetensorsReader>();
    if (!reader->open(path, error)) {
      failures[path] = error;
      return nullptr;
    }
    known = files.emplace(path, std::move(reader)).first;
  }
  return known->second.get();
}

std::string BaseFiles::stamps() const {
  std::map<std::string, FileStamp> all = indexStamps;
  for (const auto &[path, reader] : files)
    all[path] = reader->stamp();
  if (all.empty())
    return "";
  // Written as each JSON library reads it back: keys in byte order, numbers as integers.
  nlohmann::json text = nlohmann::json::object();
  for (const auto &[path, stamp] : all)
    text[path] = {{"bytes", stamp.bytes},
                  {"mtime", {stamp.modified[0], stamp.modified[1]}},
                  {"ctime", {stamp.changed[0], stamp.changed[1]}}};
  // Paths are bytes, not always UTF-8: those that are not are written escaped, never refused.
  return text.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string BaseFiles::changedSinceOpened() const {
  for (const auto &[path, reader] : files)
    if (!reader->unchanged())
      return path;
  for (const auto &[path, stamp] : indexStamps) {
    struct stat info;
    if (::stat(path.c_str(), &info) != 0 || FileStamp::of(info) != stamp)
      return path;
  }
  return "";
}

const std::map<std::string, BaseFiles::Original> &BaseFiles::originals(const std::string &index) {
  auto known = originalNames.find(index);
  if (known != originalNames.end())
    return known->second;
  std::map<std::string, Original> &out = originalNames[index];
  std::string ignored;
  const std::map<std::string, std::string> *map = weightMap(index, ignored);
  // The model type, from the config.json save_pretrained writes beside the index.
  const size_t slash = index.rfind('/');
  const std::string config =
      (slash == std::string::npos ? "" : index.substr(0, slash + 1)) + "config.json";
  std::string text, modelType;
  nlohmann::json json;
  if (!map || readRegularFile(config, kMaxJsonFileBytes, text, ignored) != ReadFileStatus::Ok ||
      !parseJsonText(text, json, ignored) || !json.is_object() ||
      !json.contains("model_type") || !json["model_type"].is_string())
    return out;
  modelType = json["model_type"].get<std::string>();
  for (const auto &entry : *map) {
    std::string stacked;
    int64_t expert;
    int group, groups;
    if (!hfStackedName(modelType, entry.first, stacked, expert, group, groups))
      return out;
    if (expert >= 0) {
      out[stacked].groups = groups;
      out[stacked].parts[{expert, group}] = entry.first;
    } else if (stacked != entry.first) {
      out[stacked].name = entry.first;
    }
  }
  return out;
}

std::optional<BaseTensor> BaseFiles::stacked(const std::string &index, const std::string &tensor,
                                             std::string &error) {
  const std::map<std::string, Original> &names = originals(index);
  auto original = names.find(tensor);
  if (original == names.end())
    return std::nullopt;
  const Original &wanted = original->second;
  if (wanted.parts.empty())
    return find(index, wanted.name, error);
  std::unique_ptr<Gathered> &done = gathered[{index, tensor}];
  if (!done) {
    // Every expert from 0 on, each with every group; in (expert, group) order, the stacked
    // tensor's bytes (ir-spec/checkpoint.md, "MoE models").
    const int64_t experts = wanted.parts.rbegin()->first.first + 1;
    if (wanted.parts.size() != size_t(experts) * size_t(wanted.groups)) {
      error = index + " does not list every expert's " +
              (wanted.groups == 2 ? "gate and up" : "down") + " tensor from 0 to " +
              std::to_string(experts - 1) + " for \"" + tensor +
              "\": the checkpoint is incomplete (write it again)";
      return std::nullopt;
    }
    auto made = std::make_unique<Gathered>();
    uint64_t begin = 0;
    for (const auto &[key, name] : wanted.parts) {
      std::optional<BaseTensor> part = find(index, name, error);
      if (!part)
        return std::nullopt;
      const SafetensorsEntry &entry = *part->entry;
      if (entry.shape.size() != 2 ||
          (!made->pieces.empty() &&
           (entry.dtype != made->entry.dtype || entry.shape != made->entry.shape))) {
        error = "tensor \"" + name + "\" of " + part->file->path() + " is " + entry.dtype + " " +
                shapeText(entry.shape) + ", not as the other experts' tensors of \"" + tensor +
                "\" (one dtype, one 2-D shape): the checkpoint is not one initc reads";
        return std::nullopt;
      }
      if (made->pieces.empty()) {
        made->entry.dtype = entry.dtype;
        made->entry.shape = entry.shape;
      }
      made->pieces.push_back(BasePiece{part->file, begin, entry.bytes(), entry.begin});
      begin += entry.bytes();
    }
    const std::vector<int64_t> part = made->entry.shape;
    made->entry.name = tensor;
    made->entry.shape = {experts, part[0] * wanted.groups, part[1]};
    made->entry.begin = 0;
    made->entry.end = begin;
    done = std::move(made);
  }
  return BaseTensor{done->pieces.front().file, &done->entry, &done->pieces};
}

std::optional<BaseTensor> BaseFiles::find(const std::string &file, const std::string &tensor,
                                          std::string &error) {
  if (endsWith(file, ".json")) {
    const std::map<std::string, std::string> *map = weightMap(file, error);
    if (!map)
      return std::nullopt;
    if (!map->count(tensor)) {
      std::string why;
      if (std::optional<BaseTensor> gatheredTensor = stacked(file, tensor, why))
        return gatheredTensor;
      if (!why.empty()) {
        error = why;
        return std::nullopt;
      }
    }
  }
  std::optional<std::string> path = locate(file, tensor, error);
  if (!path)
    return std::nullopt;
  const SafetensorsReader *reader = open(*path, error);
  if (!reader) {
    if (*path != file)
      error += " (" + file + " names it for \"" + tensor + "\")";
    return std::nullopt;
  }
  const SafetensorsEntry *entry = reader->find(tensor);
  if (!entry) {
    error = *path + " has no tensor \"" + tensor + "\"";
    const auto &all = reader->tensors();
    if (all.empty()) {
      error += " (it has none)";
    } else {
      error += "; it has " + std::to_string(all.size()) + " (";
      for (size_t i = 0; i < std::min<size_t>(all.size(), 3); ++i)
        error += (i ? ", \"" : "\"") + all[i].name + "\"";
      error += all.size() > 3 ? ", ...)" : ")";
    }
    return std::nullopt;
  }
  return BaseTensor{reader, entry};
}

std::optional<std::vector<std::string>> BaseFiles::tensorNames(const std::string &file,
                                                               std::string &error) {
  std::vector<std::string> names;
  if (endsWith(file, ".json")) {
    // Each file the index names must open and hold the tensors it is named for.
    const std::map<std::string, std::string> *map = weightMap(file, error);
    if (!map)
      return std::nullopt;
    for (const auto &entry : *map) {
      if (!find(file, entry.first, error))
        return std::nullopt;
      names.push_back(entry.first);
    }
    // In the original per-expert format: the stacked model's names.
    const std::map<std::string, Original> &stackedNames = originals(file);
    if (stackedNames.empty())
      return names;
    std::set<std::string> covered;
    for (const auto &[name, original] : stackedNames) {
      if (!find(file, name, error))
        return std::nullopt;
      covered.insert(original.name);
      for (const auto &part : original.parts)
        covered.insert(part.second);
    }
    std::vector<std::string> model;
    for (const std::string &name : names)
      if (!covered.count(name))
        model.push_back(name);
    for (const auto &entry : stackedNames)
      model.push_back(entry.first);
    std::sort(model.begin(), model.end());
    return model;
  }
  const SafetensorsReader *reader = open(file, error);
  if (!reader)
    return std::nullopt;
  for (const SafetensorsEntry &entry : reader->tensors())
    names.push_back(entry.name);
  return names;
}

std::string shardOfInitcCheckpoint(const SafetensorsReader &file) {
  const std::string *rank = file.metadataValue("initc.rank");
  const std::string *world = file.metadataValue("initc.world_size");
  if (!rank || !world || *world == "1")
    return "";
  return file.path() + " is rank " + *rank + " of a " + *world +
         "-rank initc checkpoint, which holds slices: load the file `initc assemble` makes of "
         "its directory";
}

bool checkBaseTensor(const BaseTensor &tensor, const std::string &param, DType dtype,
                     const std::vector<int64_t> &shape, std::string &error) {
  const SafetensorsEntry &entry = *tensor.entry;
  if (entry.dtype == dtypeName(dtype) && entry.shape == shape)
    return true;
  error = "tensor \"" + entry.name + "\" of " + tensor.file->path() + " is " + entry.dtype + " " +
          shapeText(entry.shape) + " but parameter '" + param + "' is " + dtypeName(dtype) + " " +
          shapeText(shape);
  std::string shard = shardOfInitcCheckpoint(*tensor.file);
  error += ": " + (shard.empty() ? "init.load copies the tensor as it is, so give the parameter "
                                   "its dtype and shape (or load another tensor)"
                                 : shard);
  return false;
}

bool BaseCheckpoints::open(const Program &program, std::string &error) {
  tensors.assign(program.params.size(), std::nullopt);
  errors.assign(program.params.size(), std::string());
  error.clear();
  failedOnlyAbsent = true;
  auto absent = [](const std::string &path) {
    struct stat info;
    return ::stat(path.c_str(), &info) != 0 && errno == ENOENT;
  };
  for (size_t p = 0; p < program.params.size(); ++p) {
    const Param &param = program.params[p];
    if (!param.load)
      continue;
    std::string why;
    std::optional<BaseTensor> tensor = files.find(param.load->file, param.load->tensor, why);
    if (!tensor || !checkBaseTensor(*tensor, param.name, param.dtype, param.shape, why)) {
      const std::string &file = param.load->file;
      // Absent: the file named, or the one its index names for the tensor.
      std::string unused;
      std::optional<std::string> located = files.locate(file, param.load->tensor, unused);
      failedOnlyAbsent = failedOnlyAbsent && (absent(file) || (located && absent(*located)));
      std::string &said = errors[p];
      said = "parameter '" + param.name + "' loads \"" + param.load->tensor + "\" from " + file;
      struct stat info;
      char cwd[4096];
      if (file[0] != '/' && ::stat(file.c_str(), &info) != 0 && errno == ENOENT &&
          ::getcwd(cwd, sizeof cwd))
        said += ", which is not in " + std::string(cwd) +
                ", the working directory: run where the file is, or give init.load an "
                "absolute path";
      else
        said += ": " + why;
      if (error.empty())
        error = said;
      continue;
    }
    tensors[p] = tensor;
  }
  return error.empty();
}

void readBaseElements(const BaseTensor &tensor, const Param &param, const Slice &slice, void *out,
                      int64_t begin, int64_t end) {
  const size_t rank = param.shape.size();
  const int64_t width = dtypeBytes(param.dtype);
  // The slice is contiguous in the file in runs: its extent along the last dim it does not
  // cover whole, times the whole dims after it.
  size_t partial = rank;
  while (partial > 0 && slice.shape[partial - 1] == param.shape[partial - 1])
    --partial;
  int64_t run = partial > 0 ? slice.shape[partial - 1] : 1;
  for (size_t d = partial; d < rank; ++d)
    run *= param.shape[d];
  if (partial == 0)
    run = std::max<int64_t>(slice.numElements(), 1);

  // Runs close together in the file are read in one piece of at most kWindow bytes and copied
  // out, so that a slice of narrow runs (a split last dim) costs few system calls.
  constexpr int64_t kWindow = int64_t(4) << 20;
  thread_local std::vector<char> window; // reused by the pieces a worker reads
  std::vector<int64_t> index(rank, 0);
  std::string error;
  auto globalOf = [&](int64_t local) {
    for (size_t d = rank; d-- > 0;) {
      index[d] = local % slice.shape[d];
      local /= slice.shape[d];
    }
    int64_t global = 0;
    for (size_t d = 0; d < rank; ++d)
      global = global * param.shape[d] + slice.offset[d] + index[d];
    return global;
  };
  auto read = [&](int64_t global, void *into, int64_t elements) {
    uint64_t at = uint64_t(global * width), bytes = uint64_t(elements * width);
    char *to = static_cast<char *>(into);
    while (bytes > 0) {
      // One file's range: the tensor's own, or the piece (an expert's tensor) that holds `at`.
      const SafetensorsReader *file = tensor.file;
      uint64_t from = tensor.entry->begin + at, n = bytes;
      if (tensor.pieces) {
        auto next = std::upper_bound(
            tensor.pieces->begin(), tensor.pieces->end(), at,
            [](uint64_t value, const BasePiece &piece) { return value < piece.begin; });
        const BasePiece &piece = *(next - 1);
        file = piece.file;
        from = piece.at + (at - piece.begin);
        n = std::min(bytes, piece.begin + piece.bytes - at);
      }
      if (!file->read(from, to, n, error))
        throw BaseReadError("reading parameter '" + param.name + "' (init.load): " + error);
      at += n;
      to += n;
      bytes -= n;
    }
  };
  char *const bytes = static_cast<char *>(out);
  for (int64_t local = begin; local < end;) {
    const int64_t first = globalOf(local);
    const int64_t length = std::min(end - local, run - local % run);
    // The runs after this one that fit in a window from `first`, and the elements they hold.
    int64_t last = local + length, span = length, useful = length;
    while (last < end) {
      int64_t next = std::min(end - last, run);
      int64_t nextSpan = globalOf(last) + next - first;
      if (nextSpan * width > kWindow)
        break;
      last += next;
      span = nextSpan;
      useful += next;
    }
    if (last == local + length || useful * 8 < span) {
      // One run, or runs too far apart to read the gaps between them too.
      for (int64_t at = local; at < last;) {
        int64_t n = std::min(last - at, run - at % run);
        read(globalOf(at), bytes + at * width, n);
        at += n;
      }
      local = last;
      continue;
    }
    window.resize(size_t(span * width));
    read(first, window.data(), span);
    for (int64_t at = local; at < last;) {
      int64_t n = std::min(last - at, run - at % run);
      std::copy_n(window.data() + (globalOf(at) - first) * width, n * width, bytes + at * width);
      at += n;
    }
    local = last;
  }
}

} // namespace initrt
