// Hugging Face's sharded layout, planned from the program alone.
#include "initrt/base/hf_plan.h"

#include "initrt/base/safetensors.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdio>

namespace initrt {

namespace {

std::string fileName(size_t index, size_t count) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return name;
}

} // namespace

bool planHfCheckpoint(const Program &program, uint64_t maxShardBytes, HfPlan &plan,
                      std::string &error) {
  plan = HfPlan();
  plan.places.assign(program.params.size(), HfPlace());
  // split_state_dict_into_shards, over the persistent parameters in program order.
  std::vector<std::vector<size_t>> groups;
  std::vector<size_t> current;
  uint64_t currentBytes = 0;
  for (size_t p = 0; p < program.params.size(); ++p) {
    const Param &param = program.params[p];
    if (!param.persistent)
      continue;
    const uint64_t bytes = uint64_t(param.numElements()) * uint64_t(dtypeBytes(param.dtype));
    plan.places[p].bytes = bytes;
    plan.totalSize += bytes;
    if (bytes > maxShardBytes) {
      groups.push_back({p});
      continue;
    }
    if (currentBytes + bytes > maxShardBytes) {
      groups.push_back(std::move(current));
      current.clear();
      currentBytes = 0;
    }
    current.push_back(p);
    currentBytes += bytes;
  }
  if (!current.empty())
    groups.push_back(std::move(current));

  for (size_t f = 0; f < groups.size(); ++f) {
    HfFile file;
    file.name = fileName(f, groups.size());
    file.params = groups[f];
    std::vector<SafetensorsTensor> tensors;
    for (size_t p : file.params) {
      const Param &param = program.params[p];
      SafetensorsTensor tensor;
      tensor.name = param.name;
      tensor.dtype = dtypeName(param.dtype);
      tensor.shape = param.shape;
      tensor.bytes = plan.places[p].bytes;
      tensors.push_back(std::move(tensor));
    }
    std::vector<size_t> dataOrder;
    if (!buildSafetensorsHeader(tensors, SafetensorsMetadata{{"format", "pt"}}, file.header,
                                dataOrder, error)) {
      error = file.name + ": " + error;
      return false;
    }
    uint64_t offset = file.header.size();
    for (size_t t : dataOrder) {
      HfPlace &place = plan.places[file.params[t]];
      place.file = int64_t(f);
      place.offset = offset;
      offset += place.bytes;
    }
    file.size = offset;
    plan.files.push_back(std::move(file));
  }
  return true;
}

std::string hfIndexJson(const Program &program, const HfPlan &plan) {
  nlohmann::json weightMap = nlohmann::json::object(); // sorted by name, as save_pretrained
  for (size_t p = 0; p < program.params.size(); ++p) {
    const HfPlace &place = plan.places[p];
    if (place.file < 0)
      continue;
    // Tied names are not listed: save_pretrained leaves them out, and a reader that followed
    // one would find no such tensor in the file (the model ties them from its config).
    weightMap[program.params[p].name] = plan.files[size_t(place.file)].name;
  }
  nlohmann::json index = {{"metadata", {{"total_size", plan.totalSize}}},
                          {"weight_map", std::move(weightMap)}};
  return index.dump(2) + "\n";
}

bool parseShardSize(const std::string &text, uint64_t &bytes) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit((unsigned char)text[digits]))
    ++digits;
  if (digits == 0 || digits > 18)
    return false;
  const uint64_t number = std::stoull(text.substr(0, digits));
  std::string unit = text.substr(digits);
  for (char &c : unit)
    c = char(std::toupper((unsigned char)c));
  static const std::pair<const char *, uint64_t> kUnits[] = {
      {"", 1},           {"B", 1},           {"KB", 1000ull},       {"MB", 1000000ull},
      {"GB", 1000000000ull}, {"KIB", 1ull << 10}, {"MIB", 1ull << 20}, {"GIB", 1ull << 30}};
  for (const auto &[name, scale] : kUnits) {
    if (unit != name)
      continue;
    if (number == 0 || number > UINT64_MAX / scale)
      return false;
    bytes = number * scale;
    return true;
  }
  return false;
}

} // namespace initrt
