#include "checkpoint/slice_source.h"

#include "checkpoint/dcp_file.h"
#include "checkpoint/hf_files.h"

#include "checkpoint/records.h"

#include <algorithm>
#include <cctype>
#include <dirent.h>
#include <sys/stat.h>

namespace initrt {

using namespace records;

namespace {

// "PREFIX-<digits>-of-<digits>.safetensors", 5 or more digits each.
bool parseNumberedName(const std::string &name, const std::string &prefix, int64_t &k,
                       int64_t &n) {
  const std::string suffix = ".safetensors";
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix))
    return false;
  std::string middle = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  size_t of = middle.find("-of-");
  if (of == std::string::npos)
    return false;
  auto number = [](const std::string &digits, int64_t &value) {
    if (digits.size() < 5 || digits.size() > 12)
      return false;
    value = 0;
    for (char c : digits) {
      if (!std::isdigit(static_cast<unsigned char>(c)))
        return false;
      value = value * 10 + (c - '0');
    }
    return true;
  };
  return number(middle.substr(0, of), k) && number(middle.substr(of + 4), n);
}

std::vector<std::string> directoryNames(const std::string &dir) {
  std::vector<std::string> names;
  std::string ignored; // an unlistable directory shows no layout
  listDirectory(dir, names, ignored);
  return names;
}

} // namespace

bool parseHfFileName(const std::string &name) {
  int64_t k = 0, n = 0;
  return parseNumberedName(name, "model-", k, n) && k >= 1 && k <= n;
}

SafetensorsReader *ReaderPool::get(size_t file, std::string &error) {
  auto it = open.find(file);
  if (it != open.end())
    return it->second.get();
  if (open.size() >= 256) // stay well below the open-file limit
    open.clear();
  auto reader = std::make_unique<SafetensorsReader>();
  if (!reader->open(paths[file], error))
    return nullptr;
  auto stamp = stamps.find(file);
  if (stamp == stamps.end())
    stamps[file] = reader->stamp();
  else if (stamp->second != reader->stamp()) {
    error = paths[file] + " changed while it was read (another process writes the checkpoint?): "
                          "run again once it is done";
    return nullptr;
  }
  return (open[file] = std::move(reader)).get();
}

bool SliceSource::readBox(const StoredBox &box, uint64_t elementBytes, uint64_t from, char *out,
                          uint64_t bytes, std::string &error) {
  // A scalar is a box of one element.
  const std::vector<int64_t> one{1}, zero{0};
  const std::vector<int64_t> &shape = box.shape.empty() ? one : box.shape;
  const std::vector<int64_t> &stored = box.storedShape.empty() ? one : box.storedShape;
  const std::vector<int64_t> &at = box.storedOffset.empty() ? zero : box.storedOffset;
  if (!box.pieces.empty()) {
    // Cut where a run or a piece ends, as the writer and verify cut them (BoxPlaces).
    hf::BoxPlaces places(stored, Slice{at, shape}, elementBytes, box.pieces);
    while (bytes > 0) {
      int64_t file;
      uint64_t where, contiguous;
      places.locate(from, file, where, contiguous);
      const uint64_t take = std::min(bytes, contiguous);
      if (take == 0) {
        error = "internal: a byte past the box's pieces (run again)";
        return false;
      }
      if (!readFile(size_t(file), where, out, take, error))
        return false;
      out += take;
      from += take;
      bytes -= take;
    }
    return true;
  }
  const size_t n = shape.size();
  // Runs: the box's dims from `j` on are contiguous in the stored array (every dim after j is
  // whole), so each index over dims 0 .. j-1 is one pread.
  size_t j = n - 1;
  while (j > 0 && shape[j] == stored[j])
    --j;
  uint64_t runBytes = elementBytes;
  for (size_t d = j; d < n; ++d)
    runBytes *= uint64_t(shape[d]);
  std::vector<uint64_t> strides(n, 1); // of the stored array, in elements
  for (size_t d = n - 1; d-- > 0;)
    strides[d] = strides[d + 1] * uint64_t(stored[d + 1]);
  while (bytes > 0) {
    uint64_t run = from / runBytes, within = from % runBytes;
    uint64_t element = uint64_t(at[j]) * strides[j];
    for (size_t d = j; d-- > 0;) {
      element += (uint64_t(at[d]) + run % uint64_t(shape[d])) * strides[d];
      run /= uint64_t(shape[d]);
    }
    uint64_t take = std::min(bytes, runBytes - within);
    if (!readFile(box.file, box.begin + element * elementBytes + within, out, take, error))
      return false;
    out += take;
    from += take;
    bytes -= take;
  }
  return true;
}

bool SliceSource::boxes(size_t index, std::vector<StoredBox> &stored, std::string &) {
  stored = entries[index].boxes;
  return true;
}

bool SliceSource::checkTiling(std::string &error) const {
  for (const SourceTensor &tensor : entries) {
    const std::vector<int64_t> global =
        tensor.param.shape.empty() ? std::vector<int64_t>{1} : tensor.param.shape;
    uint64_t covered = 0;
    std::vector<const StoredBox *> boxes;
    for (const StoredBox &box : tensor.boxes) {
      std::vector<int64_t> offset = box.offset.empty() ? std::vector<int64_t>{0} : box.offset;
      std::vector<int64_t> shape = box.shape.empty() ? std::vector<int64_t>{1} : box.shape;
      bool inside = offset.size() == global.size() && shape.size() == global.size();
      for (size_t d = 0; inside && d < global.size(); ++d)
        inside = offset[d] >= 0 && shape[d] >= 0 && offset[d] + shape[d] <= global[d];
      if (!inside) {
        error = box.where + ": the box " + shapeText(box.shape) + " at " +
                shapeText(box.offset) + " is not inside the tensor's shape " +
                shapeText(tensor.param.shape) + ": " + box.hint;
        return false;
      }
      uint64_t count = elementCount(shape);
      covered += count;
      if (count)
        boxes.push_back(&box);
    }
    // Disjoint: a sweep along dim 0 compares only the boxes whose rows overlap.
    auto first = [](const StoredBox *b) { return b->offset.empty() ? 0 : b->offset[0]; };
    auto last = [](const StoredBox *b) {
      return b->offset.empty() ? 1 : b->offset[0] + b->shape[0];
    };
    std::sort(boxes.begin(), boxes.end(),
              [&](const StoredBox *x, const StoredBox *y) { return first(x) < first(y); });
    for (size_t a = 0; a < boxes.size(); ++a)
      for (size_t b = a + 1; b < boxes.size() && first(boxes[b]) < last(boxes[a]); ++b) {
        bool overlap = true;
        for (size_t d = 0; overlap && d < boxes[a]->offset.size(); ++d)
          overlap = boxes[a]->offset[d] < boxes[b]->offset[d] + boxes[b]->shape[d] &&
                    boxes[b]->offset[d] < boxes[a]->offset[d] + boxes[a]->shape[d];
        if (overlap) { // (two scalars always overlap)
          error = boxes[a]->where + " and " + boxes[b]->where +
                  " overlap: the checkpoint stores some elements twice: " + boxes[b]->hint;
          return false;
        }
      }
    if (covered != elementCount(global)) {
      error = tensor.param.name + ": the stored boxes hold " + std::to_string(covered) + " of its " +
              std::to_string(elementCount(global)) +
              " elements: the checkpoint is incomplete: rerun the job that wrote it";
      return false;
    }
  }
  return true;
}

std::string detectCheckpointLayout(const std::string &dir) {
  std::vector<std::string> names = directoryNames(dir);
  auto has = [&](const std::string &name) {
    return std::binary_search(names.begin(), names.end(), name);
  };
  if (has(kIndexFile))
    return "ranks";
  if (has(kHfRecordFile))
    return "hf";
  bool dcp = false, hf = false, ranks = false;
  for (const std::string &name : names) {
    int64_t k, n;
    dcp = dcp || parseDcpFileName(name, k, n);
    hf = hf || parseHfFileName(name) || name == kHfIndexFile;
    ranks = ranks || parseShardFileName(name, k, n);
  }
  return dcp ? "dcp" : ranks ? "ranks" : hf ? "hf" : "";
}

bool layoutReservesName(const std::string &layout, const std::string &name) {
  int64_t k, n;
  const std::string suffix = ".safetensors";
  if ((layout.empty() || layout == "ranks") &&
      (name == kIndexFile || parseShardFileName(name, k, n)))
    return true;
  if ((layout.empty() || layout == "hf") &&
      (name == kHfRecordFile || name == kHfIndexFile || name == kHfConfigFile ||
       name == hf::kSumsDir || parseHfFileName(name)))
    return true;
  // DCP's reader takes every .safetensors file in the directory as part of the checkpoint.
  return (layout.empty() || layout == "dcp") && name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::unique_ptr<SliceSource> openSliceSource(const std::string &dir, std::string &error) {
  struct stat info;
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    return openRanksSource(dir, error); // its message says what `dir` is instead
  const std::string layout = detectCheckpointLayout(dir);
  if (layout == "hf" && ::stat(joinPath(dir, kHfRecordFile).c_str(), &info) != 0) {
    error = dir + " is an hf checkpoint not completely written: it has no " +
            std::string(kHfRecordFile) +
            " (written last, once every file is complete): rerun the whole job (`mpirun -np N "
            "prog/init --layout hf --out " +
            dir + "`): what is complete is kept";
    return nullptr;
  }
  if (layout == "hf")
    return openHfSource(dir, error);
  if (layout == "dcp")
    return openDcpSource(dir, error);
  if (layout == "ranks" || (::stat(joinPath(dir, "program.json").c_str(), &info) == 0))
    return openRanksSource(dir, error); // readIndex says what is missing
  error = dir + " is not a checkpoint: it holds no index.json (ranks layout), no " +
          std::string(kHfRecordFile) +
          " (hf layout) and no shard-K-of-W.safetensors (dcp layout): pass the directory "
          "`prog/init --out DIR` wrote";
  return nullptr;
}

} // namespace initrt
