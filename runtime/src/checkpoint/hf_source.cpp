// The hf layout as a SliceSource: whole tensors in model-0000k-of-0000n.safetensors, and
// initc-checkpoint.json recording, for each tensor, its file, offset and split axes. The boxes
// the ranks wrote follow from those by writeBoxes; their checksums are the ranks' sums files. A
// box is read out of the whole tensor, row by row.
#include "checkpoint/hf_files.h"
#include "checkpoint/records.h"
#include "checkpoint/slice_source.h"
#include "initrt/base/checksum.h"

#include <sys/stat.h>

namespace initrt {

using namespace records;

namespace {

std::string rerunRank(const std::string &dir, int64_t rank) {
  return "rerun `prog/init --layout hf --rank " + std::to_string(rank) + " --out " + dir +
         "` to regenerate it";
}

class HfSource : public SliceSource {
public:
  explicit HfSource(std::string dir) : dir(std::move(dir)), pool(paths) {}

  bool open(std::string &error) {
    const std::string rerunJob = "rerun the whole job (`mpirun -np N prog/init --layout hf --out " +
                                 dir + "`) to write it again";
    hf::Record record;
    if (!hf::readRecord(dir, record, error)) {
      error += ": " + rerunJob;
      return false;
    }
    if (record.experts == HfExperts::PerExpert) {
      // Its stacked tensors lie in pieces under other names: read the stacked format instead.
      error = dir + " holds an MoE model written with --hf-experts per-expert, which initc does "
              "not read back yet: write it with --hf-experts stacked to read it";
      return false;
    }
    description = record.program();
    std::map<std::string, size_t> fileIndex;
    std::vector<uint64_t> sizes;
    for (const hf::FileRecord &file : record.files) {
      if (!parseHfFileName(file.name) || fileIndex.count(file.name)) {
        error = joinPath(dir, kHfRecordFile) + " is malformed (file name " + file.name +
                " is not one an hf checkpoint has): " + rerunJob;
        return false;
      }
      fileIndex[file.name] = paths.size();
      paths.push_back(joinPath(dir, file.name));
      names.push_back(file.name);
      sizes.push_back(file.size);
    }
    // The files: complete (the size recorded) and holding each tensor where the record says.
    for (size_t file = 0; file < paths.size(); ++file) {
      SafetensorsReader *reader = pool.get(file, error);
      if (!reader) {
        error += ": " + rerunJob;
        return false;
      }
      if (reader->stamp().bytes != sizes[file]) {
        error = paths[file] + " is " + std::to_string(reader->stamp().bytes) + " bytes, " +
                kHfRecordFile + " records " + std::to_string(sizes[file]) + ": " + rerunJob;
        return false;
      }
    }
    places.resize(description.params.size());
    for (const auto &[name, tensor] : record.tensors) {
      const Param &param = description.params[size_t(tensor.index)];
      auto file = fileIndex.find(tensor.file);
      if (file == fileIndex.end()) {
        error = joinPath(dir, kHfRecordFile) + " is malformed (" + name +
                ": its file is not among \"files\"): " + rerunJob;
        return false;
      }
      SafetensorsReader *reader = pool.get(file->second, error);
      if (!reader)
        return false;
      const SafetensorsEntry *entry = reader->find(name);
      if (!entry || entry->dtype != dtypeName(param.dtype) || entry->shape != param.shape ||
          reader->dataStart() + entry->begin != tensor.offset) {
        error = paths[file->second] + " does not hold " + name + " as " + kHfRecordFile +
                " records it (" + dtypeName(param.dtype) + " " + shapeText(param.shape) +
                " at byte " + std::to_string(tensor.offset) + "): " + rerunJob;
        return false;
      }
      places[size_t(tensor.index)] = {file->second, entry->begin};
    }
    for (const Param &param : description.params) {
      SourceTensor tensor;
      tensor.param = param;
      entries.push_back(std::move(tensor));
    }
    // Every rank's sums, read one file at a time and kept per tensor in rank order: 8 bytes per
    // box (the boxes themselves are recomputed when a tensor is assembled).
    sums.resize(description.params.size());
    const int64_t world = description.mesh.size();
    for (int64_t rank = 0; rank < world; ++rank) {
      const std::vector<ParamBox> boxes = writeBoxes(description, rank);
      std::vector<uint64_t> mine;
      if (!hf::readSumsFile(hf::sumsPath(dir, rank), description.programId, rank, world,
                            boxes.size(), mine, error)) {
        error += ": " + rerunRank(dir, rank);
        return false;
      }
      for (size_t b = 0; b < boxes.size(); ++b)
        sums[boxes[b].param].push_back(mine[b]);
    }
    struct stat info;
    if (::stat(joinPath(dir, kHfConfigFile).c_str(), &info) == 0) {
      std::string config;
      if (!readTextFile(joinPath(dir, kHfConfigFile), config, error))
        return false;
      description.hfConfig = config;
    }
    return true; // the boxes tile each tensor: writeBoxes makes them so
  }

  bool boxes(size_t index, std::vector<StoredBox> &stored, std::string &) override {
    const Param &param = description.params[index];
    stored.clear();
    Slice slice;
    size_t next = 0;
    for (int64_t rank = 0; rank < description.mesh.size(); ++rank) {
      if (!writeBox(description.mesh, param, rank, slice))
        continue;
      StoredBox box;
      box.rank = rank;
      box.offset = slice.offset;
      box.shape = slice.shape;
      box.checksum = checksumToHex(sums[index][next++]);
      box.file = places[index].file;
      box.begin = places[index].begin;
      box.storedShape = param.shape;
      box.storedOffset = box.offset;
      box.where = param.name + " box at " + shapeText(box.offset) + " by rank " +
                  std::to_string(rank) + " (" + names[box.file] + ")";
      box.hint = rerunRank(dir, rank);
      stored.push_back(std::move(box));
    }
    return true;
  }

  bool readFile(size_t file, uint64_t offset, void *out, uint64_t bytes,
                std::string &error) override {
    SafetensorsReader *reader = pool.get(file, error);
    return reader && reader->read(offset, out, bytes, error);
  }

private:
  struct Place {
    size_t file = 0;
    uint64_t begin = 0; // in the file's data section
  };
  std::string dir;
  ReaderPool pool;
  std::vector<std::string> names;          // of the files, as the record lists them
  std::vector<Place> places;               // per tensor
  std::vector<std::vector<uint64_t>> sums; // per tensor, its boxes' checksums in rank order
};

} // namespace

std::unique_ptr<SliceSource> openHfSource(const std::string &dir, std::string &error) {
  auto source = std::make_unique<HfSource>(dir);
  if (!source->open(error))
    return nullptr;
  return source;
}

} // namespace initrt
