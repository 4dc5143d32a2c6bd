// The hf layout as a SliceSource: whole tensors in model-0000k-of-0000n.safetensors, and
// initc-checkpoint.json recording, for each tensor, its file and offset and the boxes its writer
// ranks wrote with their checksums. A box is read out of the whole tensor, row by row.
#include "checkpoint/records.h"
#include "checkpoint/slice_source.h"
#include "initrt/base/checksum.h"
#include "initrt/base/json_text.h"

#include <algorithm>
#include <map>
#include <stdexcept>
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
    const std::string path = joinPath(dir, kHfRecordFile);
    const std::string rerunJob = "rerun the whole job (`mpirun -np N prog/init --layout hf --out " +
                                 dir + "`) to write it again";
    std::string text, why;
    OrderedJson json;
    if (!readTextFile(path, text, error))
      return false;
    if (!parseJsonText(text, json, why)) {
      error = path + " is malformed (" + why + "): " + rerunJob;
      return false;
    }
    struct Listed {
      std::string name;
      size_t file;
      uint64_t offset;
      int64_t index;
      std::vector<StoredBox> boxes;
      Param param;
    };
    std::vector<Listed> listed;
    std::vector<uint64_t> sizes;
    try {
      if (json.at("format").get<std::string>() != kHfRecordFormat)
        throw std::runtime_error("its format is not " + std::string(kHfRecordFormat));
      if (json.at("version").get<int>() != kHfRecordVersion)
        throw std::runtime_error("version " + json.at("version").dump() +
                                 ", this initc reads version " +
                                 std::to_string(kHfRecordVersion));
      description.programId = json.at("program_id").get<std::string>();
      if (json.contains("model"))
        description.modelName = json.at("model").get<std::string>();
      description.mesh.axisNames = json.at("mesh").at("axes").get<std::vector<std::string>>();
      description.mesh.shape = json.at("mesh").at("shape").get<std::vector<int64_t>>();
      std::map<std::string, size_t> fileIndex;
      for (const auto &file : json.at("files")) {
        std::string name = file.at("name").get<std::string>();
        if (!parseHfFileName(name) || fileIndex.count(name))
          throw std::runtime_error("file name " + name + " is not one an hf checkpoint has");
        fileIndex[name] = paths.size();
        paths.push_back(joinPath(dir, name));
        sizes.push_back(file.at("size").get<uint64_t>());
      }
      for (const auto &[name, entry] : json.at("tensors").items()) {
        Listed item;
        item.name = name;
        item.param.name = name;
        item.param.aliases = entry.at("aliases").get<std::vector<std::string>>();
        std::string dtype = entry.at("dtype").get<std::string>();
        if (!parseDType(dtype, item.param.dtype))
          throw std::runtime_error(name + ": dtype " + dtype + " is not one initc writes");
        item.param.shape = entry.at("shape").get<std::vector<int64_t>>();
        for (int64_t dim : item.param.shape)
          if (dim < 0)
            throw std::runtime_error(name + ": negative dimension");
        auto file = fileIndex.find(entry.at("file").get<std::string>());
        if (file == fileIndex.end())
          throw std::runtime_error(name + ": its file is not among \"files\"");
        item.file = file->second;
        item.offset = entry.at("offset").get<uint64_t>();
        item.index = entry.at("index").get<int64_t>();
        for (const auto &slice : entry.at("slices")) {
          StoredBox box;
          box.rank = slice.at("rank").get<int64_t>();
          box.offset = slice.at("offset").get<std::vector<int64_t>>();
          box.shape = slice.at("shape").get<std::vector<int64_t>>();
          box.checksum = slice.at("checksum").get<std::string>();
          uint64_t ignored;
          if (!parseChecksumHex(box.checksum, ignored))
            throw std::runtime_error(name + ": checksum " + box.checksum +
                                     " is not 16 hex digits");
          box.file = item.file;
          box.storedShape = item.param.shape;
          box.storedOffset = box.offset;
          box.where = name + " box at " + shapeText(box.offset) + " by rank " +
                      std::to_string(box.rank) + " (" + file->first + ")";
          box.hint = rerunRank(dir, box.rank);
          item.boxes.push_back(std::move(box));
        }
        listed.push_back(std::move(item));
      }
    } catch (const std::exception &e) {
      error = path + " is malformed (" + e.what() + "): " + rerunJob;
      return false;
    }
    std::sort(listed.begin(), listed.end(),
              [](const Listed &a, const Listed &b) { return a.index < b.index; });
    for (size_t i = 0; i < listed.size(); ++i)
      if (listed[i].index != int64_t(i)) {
        error = path + " is malformed (the tensors' \"index\" is not 0 .. " +
                std::to_string(listed.size() - 1) + "): " + rerunJob;
        return false;
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
    for (Listed &item : listed) {
      SafetensorsReader *reader = pool.get(item.file, error);
      if (!reader)
        return false;
      const SafetensorsEntry *entry = reader->find(item.name);
      if (!entry || entry->dtype != dtypeName(item.param.dtype) ||
          entry->shape != item.param.shape || reader->dataStart() + entry->begin != item.offset) {
        error = paths[item.file] + " does not hold " + item.name + " as " + kHfRecordFile +
                " records it (" + dtypeName(item.param.dtype) + " " +
                shapeText(item.param.shape) + " at byte " + std::to_string(item.offset) +
                "): " + rerunJob;
        return false;
      }
      SourceTensor tensor;
      tensor.param = item.param;
      tensor.boxes = std::move(item.boxes);
      for (StoredBox &box : tensor.boxes)
        box.begin = entry->begin;
      description.params.push_back(tensor.param);
      entries.push_back(std::move(tensor));
    }
    std::string config;
    struct stat info;
    if (::stat(joinPath(dir, kHfConfigFile).c_str(), &info) == 0) {
      if (!readTextFile(joinPath(dir, kHfConfigFile), config, error))
        return false;
      description.hfConfig = config;
    }
    return checkTiling(error);
  }

  bool readFile(size_t file, uint64_t offset, void *out, uint64_t bytes,
                std::string &error) override {
    SafetensorsReader *reader = pool.get(file, error);
    return reader && reader->read(offset, out, bytes, error);
  }


private:
  std::string dir;
  ReaderPool pool;
};

} // namespace

std::unique_ptr<SliceSource> openHfSource(const std::string &dir, std::string &error) {
  auto source = std::make_unique<HfSource>(dir);
  if (!source->open(error))
    return nullptr;
  return source;
}

} // namespace initrt
