// The hf layout as a SliceSource: whole tensors in model-0000k-of-0000n.safetensors, and
// initc-checkpoint.json recording, for each tensor, its file, offset and split axes (and, for an
// MoE model's experts written per expert, the pieces of the stacked tensor's bytes). The boxes
// the ranks wrote follow from those by writeBoxes; their checksums are the ranks' sums files. A
// box is read out of the whole tensor, row by row, each row cut where a piece ends.
#include "checkpoint/hf_files.h"
#include "checkpoint/records.h"
#include "checkpoint/slice_source.h"
#include "initrt/base/checksum.h"

#include <map>
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
    // Per file, its tensors by the file offset of their first byte: where pieces are found.
    std::map<size_t, std::map<uint64_t, SafetensorsEntry>> byOffset;
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
      Place &place = places[size_t(tensor.index)];
      place.file = file->second;
      if (!tensor.pieces.empty()) {
        // Written per expert: each piece is a tensor of the file's header (under the expert's
        // own name, not recorded) at the offset the record gives, of the piece's dtype and size.
        for (const HfPiece &recorded : tensor.pieces) {
          auto &held = byOffset[size_t(recorded.file)];
          if (held.empty()) {
            SafetensorsReader *holder = pool.get(size_t(recorded.file), error);
            if (!holder)
              return false;
            for (const SafetensorsEntry &found : holder->tensors())
              held[holder->dataStart() + found.begin] = found;
          }
          auto at = held.find(recorded.offset);
          const SafetensorsEntry *entry = at == held.end() ? nullptr : &at->second;
          if (!entry || entry->dtype != dtypeName(param.dtype) ||
              entry->bytes() != recorded.bytes) {
            error = paths[size_t(recorded.file)] + " does not hold " + name + "'s bytes " +
                    std::to_string(recorded.begin) + " to " +
                    std::to_string(recorded.begin + recorded.bytes) + " at byte " +
                    std::to_string(recorded.offset) + " as " + kHfRecordFile +
                    " records them (a tensor of " + dtypeName(param.dtype) + "): " + rerunJob;
            return false;
          }
          HfPiece piece = recorded;
          piece.offset = entry->begin; // readFile's offsets are in the data section
          place.pieces.push_back(piece);
        }
        continue;
      }
      // A tensor the original format renames is held under that name.
      const std::string &held = tensor.storedName.empty() ? name : tensor.storedName;
      const SafetensorsEntry *entry = reader->find(held);
      if (!entry || entry->dtype != dtypeName(param.dtype) || entry->shape != param.shape ||
          reader->dataStart() + entry->begin != tensor.offset) {
        error = paths[file->second] + " does not hold " + held + " as " + kHfRecordFile +
                " records it (" + dtypeName(param.dtype) + " " + shapeText(param.shape) +
                " at byte " + std::to_string(tensor.offset) + "): " + rerunJob;
        return false;
      }
      place.begin = entry->begin;
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
      box.pieces = places[index].pieces;
      std::string files = names[box.file];
      if (!box.pieces.empty()) {
        files.clear();
        const hf::BoxPlaces lies(param.shape, slice, uint64_t(dtypeBytes(param.dtype)),
                                 box.pieces);
        for (int64_t file : lies.files())
          files += (files.empty() ? "" : ", ") + names[size_t(file)];
      }
      box.where = param.name + " box at " + shapeText(box.offset) + " by rank " +
                  std::to_string(rank) + " (" + files + ")";
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
    std::vector<HfPiece> pieces; // written per expert (offsets in the data sections)
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
