// The dcp layout as a SliceSource: one shard-K-of-W.safetensors per rank, each tensor in it one
// box of a parameter (DCP_SHARDING_INFO's saved_offsets), the file's "initc" metadata naming the
// parameter's global shape, position and aliases and the box's checksum. The files are
// self-describing: the set of them is the checkpoint.
#include "checkpoint/records.h"
#include "checkpoint/slice_source.h"

#include "checkpoint/dcp_file.h"
#include "initrt/base/checksum.h"
#include "initrt/base/json_text.h"

#include <algorithm>
#include <cstdio>
#include <dirent.h>
#include <map>
#include <stdexcept>

namespace initrt {

using namespace records;

namespace {

class DcpSource : public SliceSource {
public:
  explicit DcpSource(std::string dir) : dir(std::move(dir)), pool(paths) {}

  bool open(std::string &error) {
    // The files present, one world size, every rank's.
    std::map<int64_t, std::string> files;
    int64_t world = -1;
    if (DIR *handle = ::opendir(dir.c_str())) {
      while (dirent *entry = ::readdir(handle)) {
        int64_t rank, size;
        if (!parseDcpFileName(entry->d_name, rank, size))
          continue;
        if (world >= 0 && size != world) {
          error = dir + " holds shard files of two jobs (of " + std::to_string(world) +
                  " and of " + std::to_string(size) +
                  " ranks): keep one job's files in a checkpoint directory";
          ::closedir(handle);
          return false;
        }
        world = size;
        files[rank] = entry->d_name;
      }
      ::closedir(handle);
    }
    for (int64_t rank = 0; rank < world; ++rank) {
      if (!files.count(rank)) {
        char name[64];
        std::snprintf(name, sizeof(name), "shard-%05lld-of-%05lld.safetensors",
                      (long long)rank, (long long)world);
        error = dir + " is a dcp checkpoint not completely written: " + name +
                " is missing: " + rerun(rank);
        return false;
      }
      paths.push_back(joinPath(dir, files[rank]));
    }

    struct Merged {
      SourceTensor tensor;
      int64_t index = -1;
      std::string firstFile;
    };
    std::map<std::string, Merged> merged;
    for (int64_t rank = 0; rank < world; ++rank) {
      const std::string &name = files[rank];
      SafetensorsReader *reader = pool.get(size_t(rank), error);
      if (!reader) {
        error += ": " + rerun(rank);
        return false;
      }
      const std::string *sharding = reader->metadataValue(kDcpShardingInfoKey);
      const std::string *initc = reader->metadataValue(kDcpInitcKey);
      if (!sharding || !initc) {
        error = joinPath(dir, name) + " is not a file of an initc dcp checkpoint (its metadata has "
                "no " + std::string(!sharding ? kDcpShardingInfoKey : kDcpInitcKey) + "): " +
                rerun(rank);
        return false;
      }
      Json info, meta;
      std::string why;
      try {
        if (!parseJsonText(*sharding, info, why) || !parseJsonText(*initc, meta, why))
          throw std::runtime_error(why);
        if (meta.at("format").get<std::string>() != kDcpFormat ||
            meta.at("version").get<int>() != kDcpVersion)
          throw std::runtime_error("its \"initc\" metadata is not " + std::string(kDcpFormat) +
                                   " version " + std::to_string(kDcpVersion));
        std::string id = meta.at("program_id").get<std::string>();
        if (rank == 0) {
          description.programId = id;
          description.modelName = meta.value("model", std::string());
          description.mesh.axisNames = meta.at("mesh").at("axes").get<std::vector<std::string>>();
          description.mesh.shape = meta.at("mesh").at("shape").get<std::vector<int64_t>>();
        } else if (id != description.programId) {
          error = joinPath(dir, name) + " is another program's (program_id " + id + ", " +
                  files[0] + " has " + description.programId +
                  "): keep one job's files in a checkpoint directory";
          return false;
        }
        if (meta.at("rank").get<int64_t>() != rank || meta.at("world_size").get<int64_t>() != world)
          throw std::runtime_error("its metadata names another rank or world size than its name");
        const Json &records = meta.at("tensors");
        if (records.size() != reader->tensors().size() || info.size() != records.size())
          throw std::runtime_error("its metadata does not list exactly the tensors it holds");
        for (const SafetensorsEntry &entry : reader->tensors()) {
          const Json &record = records.at(entry.name);
          Merged &into = merged[entry.name];
          Param param;
          param.name = entry.name;
          param.aliases = record.at("aliases").get<std::vector<std::string>>();
          param.shape = record.at("global_shape").get<std::vector<int64_t>>();
          if (!parseDType(entry.dtype, param.dtype))
            throw std::runtime_error(entry.name + ": dtype " + entry.dtype +
                                     " is not one initc writes");
          int64_t index = record.at("index").get<int64_t>();
          if (into.index < 0) {
            into.tensor.param = param;
            into.index = index;
            into.firstFile = name;
          } else if (into.index != index || into.tensor.param.shape != param.shape ||
                     into.tensor.param.dtype != param.dtype ||
                     into.tensor.param.aliases != param.aliases) {
            throw std::runtime_error(entry.name + " is recorded otherwise (index, global shape, "
                                     "dtype or aliases) than in " + into.firstFile);
          }
          StoredBox box;
          box.rank = rank;
          box.offset = info.at(entry.name).at("saved_offsets").get<std::vector<int64_t>>();
          box.shape = entry.shape;
          box.checksum = record.at("checksum").get<std::string>();
          uint64_t ignored;
          if (!parseChecksumHex(box.checksum, ignored))
            throw std::runtime_error(entry.name + ": checksum " + box.checksum +
                                     " is not 16 hex digits");
          if (box.offset.size() != param.shape.size() || box.shape.size() != param.shape.size())
            throw std::runtime_error(entry.name + ": its box and global shape differ in rank");
          box.file = size_t(rank);
          box.begin = entry.begin;
          box.storedShape = entry.shape;
          box.storedOffset.assign(entry.shape.size(), 0);
          box.where = entry.name + " on rank " + std::to_string(rank) + " (" + name + ")";
          box.hint = rerun(rank);
          into.tensor.boxes.push_back(std::move(box));
        }
      } catch (const std::exception &e) {
        error = joinPath(dir, name) + " has malformed initc metadata (" + e.what() + "): " +
                rerun(rank);
        return false;
      }
    }
    // The program's order: the position each parameter has among its persistent parameters.
    std::vector<Merged *> order;
    for (auto &[name, item] : merged)
      order.push_back(&item);
    std::sort(order.begin(), order.end(),
              [](const Merged *a, const Merged *b) { return a->index < b->index; });
    for (size_t i = 0; i < order.size(); ++i) {
      if (i > 0 && order[i]->index == order[i - 1]->index) {
        error = dir + ": " + order[i - 1]->tensor.param.name + " and " +
                order[i]->tensor.param.name + " are both recorded as parameter " +
                std::to_string(order[i]->index) +
                ": the files are of different jobs; keep one job's files in a checkpoint "
                "directory";
        return false;
      }
      description.params.push_back(order[i]->tensor.param);
      entries.push_back(std::move(order[i]->tensor));
    }
    return checkTiling(error);
  }

  bool readFile(size_t file, uint64_t offset, void *out, uint64_t bytes,
                std::string &error) override {
    SafetensorsReader *reader = pool.get(file, error);
    return reader && reader->read(offset, out, bytes, error);
  }

  // DCP's reader takes every .safetensors file in the directory as part of the checkpoint.

private:
  std::string rerun(int64_t rank) const {
    return "rerun `prog/init --layout dcp --rank " + std::to_string(rank) + " --out " + dir +
           "` to regenerate it";
  }

  std::string dir;
  ReaderPool pool;
};

} // namespace

std::unique_ptr<SliceSource> openDcpSource(const std::string &dir, std::string &error) {
  auto source = std::make_unique<DcpSource>(dir);
  if (!source->open(error))
    return nullptr;
  return source;
}

} // namespace initrt
