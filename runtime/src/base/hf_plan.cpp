// Hugging Face's sharded layout, planned from the program alone.
#include "initrt/base/hf_plan.h"

#include "initrt/base/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace initrt {

namespace {

std::string fileName(size_t index, size_t count) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return name;
}

// The original per-expert names of each model type whose stacked experts initc imports: what
// transformers' conversion_mapping.py gives back on save (ir-spec/checkpoint.md, "MoE models").
// The one place these names live.
struct ExpertNames {
  const char *modelType;
  const char *block; // what every ".mlp." of a name becomes
  const char *gate, *up, *down;
};
constexpr ExpertNames kExpertNames[] = {
    {"mixtral", "block_sparse_moe", "w1", "w3", "w2"},
    {"qwen3_moe", "mlp", "gate_proj", "up_proj", "down_proj"},
    {"deepseek_v3", "mlp", "gate_proj", "up_proj", "down_proj"},
};

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A stacked experts tensor: "P.experts.gate_up_proj" [E, 2X, H] or "P.experts.down_proj"
// [E, H, X]; 0 for any other, else the number of groups it splits into (2 or 1).
int expertGroups(const Param &param) {
  if (param.shape.size() != 3)
    return 0;
  if (endsWith(param.name, ".experts.gate_up_proj"))
    return param.shape[1] % 2 == 0 ? 2 : 0;
  return endsWith(param.name, ".experts.down_proj") ? 1 : 0;
}

// transformers' dot_natural_key: the parts between dots, a part of digits by value and before
// any word, a word with a numeric suffix by the word and then the suffix's value.
int compareNumbers(const std::string &a, const std::string &b) {
  const size_t za = std::min(a.find_first_not_of('0'), a.size());
  const size_t zb = std::min(b.find_first_not_of('0'), b.size());
  const size_t la = a.size() - za, lb = b.size() - zb;
  if (la != lb)
    return la < lb ? -1 : 1;
  return a.compare(za, la, b, zb, lb);
}
std::vector<std::string> splitDots(const std::string &name) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t dot; (dot = name.find('.', from)) != std::string::npos; from = dot + 1)
    parts.push_back(name.substr(from, dot - from));
  parts.push_back(name.substr(from));
  return parts;
}
bool naturalLess(const std::string &x, const std::string &y) {
  const std::vector<std::string> a = splitDots(x), b = splitDots(y);
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const size_t wa = a[i].find_last_not_of("0123456789"), wb = b[i].find_last_not_of("0123456789");
    const bool numberA = wa == std::string::npos, numberB = wb == std::string::npos;
    if (numberA != numberB)
      return numberA;
    if (numberA) {
      if (int c = compareNumbers(a[i], b[i]))
        return c < 0;
      continue;
    }
    const std::string wordA = a[i].substr(0, wa + 1), wordB = b[i].substr(0, wb + 1);
    if (int c = wordA.compare(wordB))
      return c < 0;
    const std::string sa = a[i].substr(wa + 1), sb = b[i].substr(wb + 1);
    if (sa.empty() != sb.empty())
      return sa.empty(); // (1, word) before (1, word, n)
    if (int c = sa.empty() ? 0 : compareNumbers(sa, sb))
      return c < 0;
  }
  return a.size() < b.size();
}

std::string replaceAll(std::string text, const std::string &from, const std::string &to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
    text.replace(at, from.size(), to);
  return text;
}

// One tensor of a file: a parameter whole, or one expert's part of a stacked one.
struct Stored {
  std::string name;
  std::vector<int64_t> shape;
  size_t param;
  uint64_t begin, bytes; // the range of the parameter's bytes
};
// What split_state_dict_into_shards packs as one: a tensor, or a group of per-expert tensors
// that share one storage (counted once, whole, and put in one file).
struct Unit {
  std::vector<Stored> tensors;
  uint64_t bytes = 0;
  bool experts = false; // one expert tensor per expert of a stacked one
};

bool expertUnits(const Program &program, std::vector<Unit> &units, std::string &error) {
  std::vector<size_t> order;
  bool stacked = false;
  for (size_t p = 0; p < program.params.size(); ++p)
    if (program.params[p].persistent) {
      order.push_back(p);
      stacked = stacked || expertGroups(program.params[p]) > 0;
    }
  if (!stacked)
    return false; // no entry in the conversion mapping: the model's own order and names
  std::string modelType;
  try {
    modelType = nlohmann::json::parse(program.hfConfig).value("model_type", "");
  } catch (const nlohmann::json::exception &) {
  }
  const ExpertNames *names = nullptr;
  for (const ExpertNames &entry : kExpertNames)
    if (modelType == entry.modelType)
      names = &entry;
  if (!names) {
    std::string known;
    for (const ExpertNames &entry : kExpertNames)
      known += std::string(known.empty() ? "" : ", ") + entry.modelType;
    error = "--hf-experts per-expert: the original per-expert names of model type '" +
            modelType + "' are not known (only " + known + "'s): use --hf-experts stacked";
    return true;
  }
  const std::string block = std::string(".") + names->block + ".";
  auto rename = [&](const std::string &name) { return replaceAll(name, ".mlp.", block); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return naturalLess(program.params[a].name, program.params[b].name);
  });
  for (size_t p : order) {
    const Param &param = program.params[p];
    const uint64_t element = uint64_t(dtypeBytes(param.dtype));
    const int groups = expertGroups(param);
    if (groups == 0) {
      Unit unit;
      unit.bytes = uint64_t(param.numElements()) * element;
      unit.tensors.push_back({rename(param.name), param.shape, p, 0, unit.bytes});
      units.push_back(std::move(unit));
      continue;
    }
    // Expert e's [2X, H] (or [H, X]) block; a gate_up_proj's gate rows first, then its up rows.
    const int64_t experts = param.shape[0], rows = param.shape[1] / groups, cols = param.shape[2];
    const uint64_t part = uint64_t(rows) * uint64_t(cols) * element;
    const std::string prefix = param.name.substr(0, param.name.rfind('.') + 1);
    const char *projs[2] = {groups == 2 ? names->gate : names->down, names->up};
    for (int g = 0; g < groups; ++g) {
      Unit unit;
      for (int64_t e = 0; e < experts; ++e)
        unit.tensors.push_back({rename(prefix + std::to_string(e) + "." + projs[g] + ".weight"),
                                {rows, cols}, p, (uint64_t(e) * groups + g) * part, part});
      unit.bytes = part * uint64_t(experts);
      unit.experts = true;
      units.push_back(std::move(unit));
    }
  }
  return true;
}

} // namespace

const char *hfExpertsName(HfExperts experts) {
  return experts == HfExperts::PerExpert ? "per-expert" : "stacked";
}
bool parseHfExperts(const std::string &text, HfExperts &experts) {
  if (text == "stacked" || text == "per-expert") {
    experts = text == "stacked" ? HfExperts::Stacked : HfExperts::PerExpert;
    return true;
  }
  return false;
}

HfExperts defaultHfExperts(const Program &program) {
  std::vector<Unit> units;
  std::string error;
  expertUnits(program, units, error);
  return error.empty() ? HfExperts::PerExpert : HfExperts::Stacked;
}

bool hfStackedName(const std::string &modelType, const std::string &name, std::string &stacked,
                   int64_t &expert, int &group, int &groups) {
  const ExpertNames *names = nullptr;
  for (const ExpertNames &entry : kExpertNames)
    if (modelType == entry.modelType)
      names = &entry;
  if (!names)
    return false;
  stacked = replaceAll(name, std::string(".") + names->block + ".", ".mlp.");
  expert = -1;
  group = 0;
  groups = 1;
  // "P.experts.<e>.<proj>.weight", P's block already back to ".mlp."
  const std::string marker = ".experts.", suffix = ".weight";
  const size_t at = stacked.rfind(marker);
  if (at == std::string::npos || !endsWith(stacked, suffix))
    return true;
  const size_t digits = at + marker.size(), dot = stacked.find('.', digits);
  if (dot == std::string::npos || dot == digits || dot - digits > 9 ||
      stacked.find_first_not_of("0123456789", digits) != dot)
    return true;
  const std::string proj = stacked.substr(dot + 1, stacked.size() - suffix.size() - dot - 1);
  const bool gate = proj == names->gate, up = proj == names->up, down = proj == names->down;
  if (!gate && !up && !down)
    return true;
  expert = std::stoll(stacked.substr(digits, dot - digits));
  group = up ? 1 : 0;
  groups = down ? 1 : 2;
  stacked = stacked.substr(0, digits) + (down ? "down_proj" : "gate_up_proj");
  return true;
}

std::vector<HfPiece> hfPieces(const HfPlace &place) {
  if (!place.pieces.empty())
    return place.pieces;
  return {HfPiece{0, place.bytes, place.file, place.offset}};
}

bool planHfCheckpoint(const Program &program, uint64_t maxShardBytes, HfPlan &plan,
                      std::string &error, HfExperts experts) {
  plan = HfPlan();
  plan.places.assign(program.params.size(), HfPlace());
  std::vector<Unit> units;
  error.clear();
  const bool perExpert = experts == HfExperts::PerExpert && expertUnits(program, units, error);
  if (!error.empty())
    return false;
  if (!perExpert)
    for (size_t p = 0; p < program.params.size(); ++p) {
      const Param &param = program.params[p];
      if (!param.persistent)
        continue;
      Unit unit;
      unit.bytes = uint64_t(param.numElements()) * uint64_t(dtypeBytes(param.dtype));
      unit.tensors.push_back({param.name, param.shape, p, 0, unit.bytes});
      units.push_back(std::move(unit));
    }
  for (const Unit &unit : units)
    for (const Stored &tensor : unit.tensors) {
      plan.places[tensor.param].bytes += tensor.bytes;
      plan.totalSize += tensor.bytes;
    }
  // split_state_dict_into_shards, over the units in order.
  std::vector<std::vector<const Unit *>> groups;
  std::vector<const Unit *> current;
  uint64_t currentBytes = 0;
  for (const Unit &unit : units) {
    if (unit.bytes > maxShardBytes) {
      groups.push_back({&unit});
      continue;
    }
    if (currentBytes + unit.bytes > maxShardBytes) {
      groups.push_back(std::move(current));
      current.clear();
      currentBytes = 0;
    }
    current.push_back(&unit);
    currentBytes += unit.bytes;
  }
  if (!current.empty())
    groups.push_back(std::move(current));

  std::vector<std::vector<HfPiece>> pieces(program.params.size());
  std::vector<bool> split(program.params.size(), false); // stored as its experts' tensors
  for (const Unit &unit : units)
    for (const Stored &tensor : unit.tensors) {
      split[tensor.param] = split[tensor.param] || unit.experts;
      if (!unit.experts && tensor.name != program.params[tensor.param].name)
        plan.places[tensor.param].storedName = tensor.name;
    }
  for (size_t f = 0; f < groups.size(); ++f) {
    HfFile file;
    file.name = fileName(f, groups.size());
    std::vector<const Stored *> stored;
    for (const Unit *unit : groups[f])
      for (const Stored &tensor : unit->tensors) {
        stored.push_back(&tensor);
        if (std::find(file.params.begin(), file.params.end(), tensor.param) == file.params.end())
          file.params.push_back(tensor.param);
      }
    std::vector<SafetensorsTensor> tensors;
    for (const Stored *entry : stored) {
      SafetensorsTensor tensor;
      tensor.name = entry->name;
      tensor.dtype = dtypeName(program.params[entry->param].dtype);
      tensor.shape = entry->shape;
      tensor.bytes = entry->bytes;
      tensors.push_back(std::move(tensor));
      plan.stored.emplace_back(entry->name, int64_t(f));
    }
    std::vector<size_t> dataOrder;
    if (!buildSafetensorsHeader(tensors, SafetensorsMetadata{{"format", "pt"}}, file.header,
                                dataOrder, error)) {
      error = file.name + ": " + error;
      return false;
    }
    uint64_t offset = file.header.size();
    for (size_t t : dataOrder) {
      const Stored &entry = *stored[t];
      pieces[entry.param].push_back(HfPiece{entry.begin, entry.bytes, int64_t(f), offset});
      offset += entry.bytes;
    }
    file.size = offset;
    plan.files.push_back(std::move(file));
  }
  for (size_t p = 0; p < pieces.size(); ++p) {
    std::vector<HfPiece> &mine = pieces[p];
    if (mine.empty())
      continue;
    std::sort(mine.begin(), mine.end(),
              [](const HfPiece &a, const HfPiece &b) { return a.begin < b.begin; });
    HfPlace &place = plan.places[p];
    place.file = mine.front().file;
    place.offset = mine.front().offset;
    if (split[p])
      place.pieces = std::move(mine);
  }
  return true;
}

std::string hfIndexJson(const Program &, const HfPlan &plan) {
  nlohmann::json weightMap = nlohmann::json::object(); // sorted by name, as save_pretrained
  // Tied names are not listed: save_pretrained leaves them out, and a reader that followed
  // one would find no such tensor in the file (the model ties them from its config).
  for (const auto &[name, file] : plan.stored)
    weightMap[name] = plan.files[size_t(file)].name;
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
