// The ranks layout as a SliceSource: index.json and one rank-K-of-W.safetensors per rank; each
// distinct slice is read from its owner's file (the lowest of its replicas).
#include "checkpoint/records.h"
#include "checkpoint/shard_file.h"
#include "checkpoint/slice_source.h"
#include "initrt/base/json_text.h"
#include "initrt/base/sharding.h"

#include <map>
#include <memory>

namespace initrt {

using namespace records;

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
    if (!recordsDigest(index, shard->records, rank, digest) ||
        digest != index.digests[size_t(rank)]) {
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

class RanksSource : public SliceSource {
public:
  RanksSource(std::string dir) : dir(std::move(dir)) {}

  bool open(std::string &error) {
    if (!readIndex(dir, index, error))
      return false;
    cache = std::make_unique<ShardCache>(dir, index);
    description.programId = index.programId;
    description.mesh = index.mesh;
    std::string text, ignored;
    OrderedJson json;
    if (readTextFile(joinPath(dir, kIndexFile), text, ignored) &&
        parseJsonText(text, json, ignored) && json.contains("model") &&
        json["model"].is_string())
      description.modelName = json["model"].get<std::string>();

    // Every file of the checkpoint, not only those slices are read from: a rank that owns no
    // slice (replicas) missing or damaged is a broken checkpoint too. Headers only; the data
    // is checked against its checksums as it is read.
    for (int64_t rank = 0; rank < index.worldSize; ++rank) {
      std::string where = "rank " + std::to_string(rank) + " (" + index.files[size_t(rank)] + ")";
      std::string otherId;
      OpenShard *shard = cache->get(rank, error, &otherId);
      if (!shard) {
        error = where + ": " + error + ": " + rerunHint(dir, rank, !otherId.empty());
        return false;
      }
      size_t held = 0; // the file lists no tensor of another pipeline stage
      for (const IndexParam &item : index.params) {
        if (!onParamStage(index.mesh, item.param, rank))
          continue;
        ++held;
        if (!indexedEntry(shard->reader, shard->records, index, item, rank, error)) {
          error = item.param.name + " on " + where + ": " + error + ": " + rerunHint(dir, rank);
          return false;
        }
      }
      if (shard->reader.tensors().size() != held) {
        error = where + ": holds tensors index.json does not list: " + rerunHint(dir, rank);
        return false;
      }
    }

    for (const IndexParam &item : index.params) {
      SourceTensor tensor;
      tensor.param = item.param;
      parseDType(item.dtype, tensor.param.dtype); // readIndex accepted it
      description.params.push_back(tensor.param);
      entries.push_back(std::move(tensor));
    }
    return true;
  }

  // Each distinct slice from its owner's file; the slices follow from the sharding, so they tile
  // the tensor.
  bool boxes(size_t which, std::vector<StoredBox> &stored,
             std::string &error) override {
    const IndexParam &item = index.params[which];
    stored.clear();
    for (int64_t owner = 0; owner < index.worldSize; ++owner) {
      if (!isSliceOwner(index.mesh, item.param, owner))
        continue;
      Slice slice = sliceForRank(index.mesh, item.param, owner);
      OpenShard *shard = cache->get(owner, error);
      const SafetensorsEntry *entry =
          shard ? indexedEntry(shard->reader, shard->records, index, item, owner, error) : nullptr;
      StoredBox box;
      box.rank = owner;
      box.where = item.param.name + " on rank " + std::to_string(owner) + " (" +
                  index.files[size_t(owner)] + ")";
      box.hint = rerunHint(dir, owner);
      if (!entry) {
        error = box.where + ": " + error + ": " + box.hint;
        return false;
      }
      box.offset = slice.offset;
      box.shape = slice.shape;
      box.storedShape = slice.shape;
      box.storedOffset.assign(slice.shape.size(), 0);
      box.file = size_t(owner);
      box.begin = entry->begin;
      box.checksum = shard->records.at(item.param.name).checksum;
      stored.push_back(std::move(box));
    }
    return true;
  }

  bool readFile(size_t file, uint64_t offset, void *out, uint64_t bytes,
                std::string &error) override {
    OpenShard *shard = cache->get(int64_t(file), error);
    return shard && shard->reader.read(offset, out, bytes, error);
  }


private:
  std::string dir;
  Index index;
  std::unique_ptr<ShardCache> cache;
};

} // namespace

std::unique_ptr<SliceSource> openRanksSource(const std::string &dir, std::string &error) {
  auto source = std::make_unique<RanksSource>(dir);
  if (!source->open(error))
    return nullptr;
  return source;
}

} // namespace initrt
