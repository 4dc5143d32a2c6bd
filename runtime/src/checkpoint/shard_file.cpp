#include "checkpoint/shard_file.h"

#include "checkpoint/records.h"
#include "initrt/base/checksum.h"
#include "initrt/base/files.h"
#include "initrt/base/json_text.h"
#include "io/direct_writer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace initrt {

using namespace records;
std::string shardFileName(int64_t rank, int64_t worldSize) {
  return rankFileName("rank-", rank, worldSize);
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
    // A rank of another pipeline stage holds none of the parameter: its file does not list it.
    if (!param.persistent || !onParamStage(program.mesh, param, rank))
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
    // Appended (a program's names are distinct): the map's insert compares with every key.
    records.get_ref<OrderedJson::object_t &>().emplace_back(
        param.name, OrderedJson{{"global_shape", param.shape},
                                {"offset", tensor.slice.offset},
                                {"checksum", checksum}});
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
                           const std::vector<ShardTensor> &layout, std::string &error,
                           const std::string &baseStamps) {
  std::string path = joinPath(dir, shardFileName(rank, program.mesh.size()));
  // Placeholders stand in for the data of tensors not computed yet.
  auto fileContents = [path, &program, rank, baseStamps](const std::vector<ShardTensor> &tensors,
                                                          std::vector<SafetensorsTensor> &contents,
                                                          SafetensorsMetadata &metadata,
                                                          std::string &error) {
    if (!shardFileContents(path, program, rank, tensors, true, contents, metadata, error))
      return false;
    if (!baseStamps.empty())
      metadata.emplace_back(kBaseStampsKey, baseStamps);
    return true;
  };
  return openFile(path, layout, fileContents, error);
}

bool ShardFileStream::openFile(const std::string &path, const std::vector<ShardTensor> &layout,
                               StreamContents contents, std::string &error) {
  contentsOf = std::move(contents);
  tensors = layout;
  this->path = path;
  std::vector<SafetensorsTensor> entries;
  SafetensorsMetadata metadata;
  std::vector<size_t> order;
  if (!contentsOf(tensors, entries, metadata, error) ||
      !buildSafetensorsHeader(entries, metadata, header, order, error)) {
    error = error.rfind("cannot write", 0) == 0 ? error : "cannot write " + path + ": " + error;
    return false;
  }
  // entries holds some of the layout's tensors (the persistent ones the file stores), in layout
  // order; offsets follow the file's order.
  std::vector<size_t> persistent;
  for (size_t t = 0; t < tensors.size() && persistent.size() < entries.size(); ++t)
    if (tensors[t].param && tensors[t].param->name == entries[persistent.size()].name)
      persistent.push_back(t);
  if (persistent.size() != entries.size()) {
    error = "cannot write " + path + ": the file lists other tensors than its layout (internal "
            "error; run again)";
    return false;
  }
  offsets.assign(tensors.size(), 0);
  uint64_t at = header.size();
  for (size_t index : order) {
    offsets[persistent[index]] = at;
    at += entries[index].bytes;
  }
  size = at;
  return file.open(path, at, error, bypassPageCache);
}

std::vector<size_t> ShardFileStream::fileOrder() const {
  std::vector<size_t> order(tensors.size());
  for (size_t t = 0; t < order.size(); ++t)
    order[t] = t;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return offsets[a] < offsets[b]; });
  return order;
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
  if (!contentsOf(tensors, contents, metadata, error) ||
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

std::string baseDifference(const std::string *recorded, const std::string &now, bool someMissing) {
  if (!someMissing && recorded && *recorded == now)
    return "";
  Json before, after;
  std::string why;
  if (!recorded)
    return "records no version of its base checkpoints";
  if (!parseJsonText(recorded->empty() ? "{}" : *recorded, before, why) || !before.is_object())
    return "records no readable version of its base checkpoints";
  if (!parseJsonText(now.empty() ? "{}" : now, after, why) || !after.is_object())
    return "its base checkpoints cannot be compared (internal error; run again)";
  for (const auto &[path, stamp] : after.items()) {
    auto was = before.find(path);
    if (was == before.end())
      return "computed from other base checkpoint files (not " + path + ")";
    if (*was != stamp)
      return "computed from another version of " + path;
  }
  if (!someMissing)
    for (const auto &[path, stamp] : before.items())
      if (!after.contains(path))
        return "computed from other base checkpoint files (" + path + " among them)";
  return "";
}

std::string fileBaseDifference(const SafetensorsReader &reader, const std::string &now,
                               bool someMissing) {
  const std::string *recorded = reader.metadataValue(kBaseStampsKey);
  // A program that loads nothing records nothing.
  return now.empty() && !recorded ? "" : baseDifference(recorded, now, someMissing);
}

ShardState shardState(const std::string &dir, const Program &program, int64_t rank,
                      std::vector<std::string> &checksums, std::string &reason,
                      const std::string *baseStamps, bool someBasesMissing) {
  int64_t worldSize = program.mesh.size();
  checksums.assign(program.params.size(), std::string());
  SafetensorsReader reader;
  if (!reader.open(joinPath(dir, shardFileName(rank, worldSize)), reason))
    return ShardState::Incomplete;
  std::string why;
  if (!shardMetadataMatches(reader, program.programId, rank, worldSize, why)) {
    reason = reader.path() + ": " + why;
    return ShardState::Incomplete;
  }
  // Before reading any bytes: a shard of another version of the base is rewritten anyway.
  if (baseStamps) {
    std::string difference = fileBaseDifference(reader, *baseStamps, someBasesMissing);
    if (!difference.empty()) {
      reason = reader.path() + ": " + difference;
      return ShardState::BaseChanged;
    }
  }
  std::map<std::string, ShardTensorRecord> records;
  if (!parseShardTensors(reader, records, reason))
    return ShardState::Incomplete;
  size_t expected = 0;
  for (size_t i = 0; i < program.params.size(); ++i) {
    const Param &param = program.params[i];
    if (!param.persistent)
      continue;
    if (!onParamStage(program.mesh, param, rank)) { // not in the file; nothing to compute
      checksums[i] = emptyChecksum();
      continue;
    }
    ++expected;
    Slice slice = sliceForRank(program.mesh, param, rank);
    auto record = records.find(param.name);
    std::string actual;
    if (!storedBoxMatches(reader, param, slice, reader.find(param.name),
                          record == records.end() ? nullptr : &record->second, actual, reason))
      return ShardState::Incomplete;
    checksums[i] = actual;
  }
  if (reader.tensors().size() != expected || records.size() != expected) {
    reason = reader.path() + ": holds tensors this program does not store";
    return ShardState::Incomplete;
  }
  return ShardState::Complete;
}

bool shardIsComplete(const std::string &dir, const Program &program, int64_t rank,
                     std::vector<std::string> &checksums, std::string &reason) {
  return shardState(dir, program, rank, checksums, reason) == ShardState::Complete;
}

bool shardIsComplete(const std::string &dir, const Program &program, int64_t rank,
                     std::vector<std::string> &checksums) {
  std::string reason;
  return shardIsComplete(dir, program, rank, checksums, reason);
}

} // namespace initrt
