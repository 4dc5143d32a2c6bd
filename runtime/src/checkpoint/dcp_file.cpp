#include "checkpoint/dcp_file.h"

#include "checkpoint/records.h"
#include "initrt/base/json_text.h"
#include "initrt/base/sharding.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <set>

namespace initrt {

using namespace records;

std::string dcpFileName(int64_t rank, int64_t worldSize) {
  return rankFileName("shard-", rank, worldSize);
}

bool parseDcpFileName(const std::string &name, int64_t &rank, int64_t &worldSize) {
  return parseRankFileName(name, "shard-", rank, worldSize) && rank < worldSize;
}

std::string dcpShardingInfoText(const std::vector<DcpBoxOffset> &boxes) {
  // Python's json.dumps: {"a": {"saved_offsets": [0, 4]}, "b": ...}, ASCII only.
  std::string text = "{";
  for (size_t b = 0; b < boxes.size(); ++b) {
    if (b)
      text += ", ";
    text += Json(boxes[b].name).dump(-1, ' ', /*ensure_ascii=*/true);
    text += ": {\"saved_offsets\": [";
    for (size_t d = 0; d < boxes[b].offset.size(); ++d)
      text += (d ? ", " : "") + std::to_string(boxes[b].offset[d]);
    text += "]}";
  }
  return text + "}";
}

std::string dcpRepairHint(const std::string &dir, int64_t rank, bool overwrite) {
  return "rerun `prog/init --rank " + std::to_string(rank) + " --out " + dir + " --layout dcp" +
         (overwrite ? " --overwrite" : "") + "` to regenerate it";
}

bool dcpFileContents(const std::string &path, const Program &program, int64_t rank,
                     const std::vector<ShardTensor> &tensors, const std::string &baseStamps,
                     std::vector<SafetensorsTensor> &contents, SafetensorsMetadata &metadata,
                     std::string &error) {
  // A parameter's "index": its position among the persistent ones, as an hf checkpoint lists them.
  std::vector<int64_t> persistentIndex(program.params.size(), -1);
  int64_t next = 0;
  for (size_t p = 0; p < program.params.size(); ++p)
    if (program.params[p].persistent)
      persistentIndex[p] = next++;
  OrderedJson records = OrderedJson::object();
  std::vector<DcpBoxOffset> offsets;
  std::set<std::string> seen;
  for (const ShardTensor &tensor : tensors) {
    if (!tensor.param || tensor.param < program.params.data() ||
        tensor.param >= program.params.data() + program.params.size()) {
      error = "cannot write " + path + ": a box has no parameter of the program (internal error)";
      return false;
    }
    const Param &param = *tensor.param;
    if (!param.persistent)
      continue;
    const Slice &box = tensor.slice;
    bool inside = box.shape.size() == param.shape.size() && box.offset.size() == param.shape.size();
    for (size_t d = 0; inside && d < box.shape.size(); ++d)
      inside = box.offset[d] >= 0 && box.shape[d] >= 0 &&
               box.offset[d] + box.shape[d] <= param.shape[d];
    if (!inside) {
      error = "cannot write " + path + ": " + param.name + ": the box " + shapeText(box.shape) +
              " at " + shapeText(box.offset) + " is not inside its shape " +
              shapeText(param.shape) + " (internal error)";
      return false;
    }
    // One box per parameter and rank (writeBoxes), so the parameter's name is the tensor's.
    if (!seen.insert(param.name).second) {
      error = "cannot write " + path + ": two boxes of " + param.name + " (internal error)";
      return false;
    }
    SafetensorsTensor content;
    content.name = param.name;
    content.dtype = dtypeName(param.dtype);
    content.shape = box.shape;
    content.bytes = tensor.bytes;
    // The header needs no bytes, only their size: the data is written at its place later.
    static const char noDataYet = 0;
    content.data = tensor.data ? tensor.data : &noDataYet;
    contents.push_back(std::move(content));
    offsets.push_back({param.name, box.offset});
    std::string checksum = tensor.checksum.empty() ? std::string(16, '0') : tensor.checksum;
    records.get_ref<OrderedJson::object_t &>().emplace_back(
        param.name,
        OrderedJson{{"global_shape", param.shape},
                    {"checksum", checksum},
                    {"index", persistentIndex[size_t(tensor.param - program.params.data())]},
                    {"aliases", param.aliases}});
  }
  OrderedJson initc = {{"format", kDcpFormat},
                       {"version", kDcpVersion},
                       {"program_id", program.programId},
                       {"model", program.modelName},
                       {"rank", rank},
                       {"world_size", program.mesh.size()},
                       {"mesh", {{"axes", program.mesh.axisNames}, {"shape", program.mesh.shape}}},
                       {"tensors", std::move(records)}};
  std::string initcText;
  try {
    initcText = initc.dump(-1, ' ', false, Json::error_handler_t::strict);
  } catch (const Json::exception &) {
    error = "cannot write " + path + ": a parameter name is not valid UTF-8";
    return false;
  }
  metadata = {{"format", "pt"},
              {kDcpVersionKey, kDcpVersionValue},
              {kDcpShardingInfoKey, dcpShardingInfoText(offsets)},
              {kDcpInitcKey, initcText}};
  if (!baseStamps.empty())
    metadata.emplace_back(kBaseStampsKey, baseStamps);
  return true;
}

namespace {
const std::string *metadataValue(const SafetensorsMetadata &metadata, const std::string &key) {
  for (const auto &[name, value] : metadata)
    if (name == key)
      return &value;
  return nullptr;
}
} // namespace

bool parseDcpMetadata(const SafetensorsMetadata &metadata, const std::string &path,
                      DcpFileRecord &record, std::string &error, bool *notDcp) {
  if (notDcp)
    *notDcp = false;
  const std::string *initcText = metadataValue(metadata, kDcpInitcKey);
  const std::string *infoText = metadataValue(metadata, kDcpShardingInfoKey);
  Json initc, info;
  std::string why;
  if (!initcText || !parseJsonText(*initcText, initc, why) || !initc.is_object() ||
      initc.value("format", Json()) != kDcpFormat) {
    error = path + ": not a file of an initc dcp checkpoint (no initc-dcp \"initc\" metadata)";
    if (notDcp)
      *notDcp = true;
    return false;
  }
  try {
    if (initc.at("version").get<int>() != kDcpVersion) {
      error = path + ": initc-dcp version " + initc.at("version").dump() + ", this initc reads " +
              std::to_string(kDcpVersion);
      return false;
    }
    record.programId = initc.at("program_id").get<std::string>();
    record.model = initc.value("model", std::string());
    record.rank = initc.at("rank").get<int64_t>();
    record.worldSize = initc.at("world_size").get<int64_t>();
    record.mesh.axisNames = initc.at("mesh").at("axes").get<std::vector<std::string>>();
    record.mesh.shape = initc.at("mesh").at("shape").get<std::vector<int64_t>>();
    record.tensors.clear();
    for (auto &[name, value] : initc.at("tensors").items()) {
      DcpTensorRecord tensor;
      tensor.globalShape = value.at("global_shape").get<std::vector<int64_t>>();
      tensor.checksum = value.at("checksum").get<std::string>();
      tensor.index = value.at("index").get<int64_t>();
      tensor.aliases = value.at("aliases").get<std::vector<std::string>>();
      record.tensors[name] = std::move(tensor);
    }
  } catch (const Json::exception &e) {
    error = path + ": malformed initc metadata: " + e.what();
    return false;
  }
  if (!infoText || !parseJsonText(*infoText, info, why) || !info.is_object()) {
    error = path + ": no readable DCP_SHARDING_INFO metadata" + (infoText ? ": " + why : "");
    return false;
  }
  try {
    for (auto &[name, value] : info.items()) {
      auto tensor = record.tensors.find(name);
      if (tensor == record.tensors.end()) {
        error = path + ": DCP_SHARDING_INFO lists " + name + ", the initc metadata does not";
        return false;
      }
      tensor->second.offset = value.at("saved_offsets").get<std::vector<int64_t>>();
    }
  } catch (const Json::exception &e) {
    error = path + ": malformed DCP_SHARDING_INFO metadata: " + e.what();
    return false;
  }
  for (const auto &[name, tensor] : record.tensors)
    if (tensor.offset.size() != tensor.globalShape.size()) {
      error = path + ": " + name + " has no saved_offsets of its rank in DCP_SHARDING_INFO";
      return false;
    }
  return true;
}

std::vector<ParamBox> dcpEmptyBoxes(const Program &program, int64_t rank) {
  std::vector<ParamBox> boxes;
  if (rank != 0)
    return boxes;
  for (size_t p = 0; p < program.params.size(); ++p) {
    const Param &param = program.params[p];
    if (param.persistent && param.numElements() == 0)
      boxes.push_back({p, Slice{std::vector<int64_t>(param.shape.size(), 0), param.shape}});
  }
  return boxes;
}

std::vector<ParamBox> dcpBoxes(const Program &program, int64_t rank) {
  std::vector<ParamBox> boxes = writeBoxes(program, rank);
  for (ParamBox &box : dcpEmptyBoxes(program, rank))
    boxes.push_back(std::move(box));
  return boxes;
}

ShardState dcpFileState(const std::string &dir, const Program &program, int64_t rank,
                        std::vector<std::string> &checksums, std::string &reason,
                        const std::string *baseStamps, bool someBasesMissing) {
  checksums.assign(program.params.size(), std::string());
  SafetensorsReader reader;
  if (!reader.open(joinPath(dir, dcpFileName(rank, program.mesh.size())), reason))
    return ShardState::Incomplete;
  DcpFileRecord record;
  if (!parseDcpMetadata(reader.metadata(), reader.path(), record, reason))
    return ShardState::Incomplete;
  if (record.programId != program.programId) {
    reason = reader.path() + ": belongs to another program (program id " + record.programId +
             ", expected " + program.programId + ")";
    return ShardState::Incomplete;
  }
  if (record.rank != rank || record.worldSize != program.mesh.size()) {
    reason = reader.path() + ": records rank " + std::to_string(record.rank) + " of " +
             std::to_string(record.worldSize) + ", expected " + std::to_string(rank) + " of " +
             std::to_string(program.mesh.size());
    return ShardState::Incomplete;
  }
  // Before reading any bytes: a file of another version of the base is rewritten anyway.
  if (baseStamps) {
    std::string difference = fileBaseDifference(reader, *baseStamps, someBasesMissing);
    if (!difference.empty()) {
      reason = reader.path() + ": " + difference;
      return ShardState::BaseChanged;
    }
  }
  std::vector<ParamBox> boxes = dcpBoxes(program, rank);
  for (const ParamBox &box : boxes) {
    const Param &param = program.params[box.param];
    auto tensor = record.tensors.find(param.name);
    std::string actual;
    if (!storedBoxMatches(reader, param, box.box, reader.find(param.name),
                          tensor == record.tensors.end() ? nullptr : &tensor->second, actual,
                          reason))
      return ShardState::Incomplete;
    checksums[box.param] = actual;
  }
  if (reader.tensors().size() != boxes.size() || record.tensors.size() != boxes.size()) {
    reason = reader.path() + ": holds tensors this program does not write on rank " +
             std::to_string(rank);
    return ShardState::Incomplete;
  }
  return ShardState::Complete;
}

} // namespace initrt
