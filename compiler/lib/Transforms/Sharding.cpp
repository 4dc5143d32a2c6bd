//===- Sharding.cpp - meshes and sharding rules ---------------------------===//
#include "initc/Transforms/Sharding.h"
#include "TrainerPresets.h"
#include "initc/Support/Nesting.h"
#include "initrt/base/json_text.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <set>

using namespace initc;
using llvm::StringRef;

int64_t MeshSpec::size() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

std::string MeshSpec::str() const {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + axisNames[i] + "=" + std::to_string(shape[i]);
  return s;
}

mlir::LogicalResult initc::parseMeshSpec(StringRef text, MeshSpec &mesh, std::string &error) {
  mesh = MeshSpec();
  const char *hint = "write the mesh as NAME=SIZE pairs separated by commas, e.g. dp=2,tp=4";
  if (text.trim().empty()) {
    error = std::string("the mesh is empty: ") + hint;
    return mlir::failure();
  }
  llvm::SmallVector<StringRef> parts;
  text.split(parts, ',');
  llvm::StringSet<> seen;
  __int128 total = 1;
  for (StringRef part : parts) {
    auto [name, size] = part.trim().split('=');
    name = name.trim();
    size = size.trim();
    if (name.empty() || !part.contains('=')) {
      error = "malformed mesh axis '" + part.str() + "': " + hint;
      return mlir::failure();
    }
    if (!llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; })) {
      error = "mesh axis name '" + name.str() + "' must be letters, digits or '_'";
      return mlir::failure();
    }
    long long value = 0;
    bool parsed = !size.getAsInteger(10, value);
    if (!parsed || value <= 0) {
      bool tooLarge = !parsed && !size.empty() && llvm::all_of(size, llvm::isDigit);
      error = "mesh axis '" + name.str() + "' has size '" + size.str() + "': " +
              (tooLarge ? "more devices than a mesh can have (2^31 - 1)"
                        : "sizes must be positive integers");
      return mlir::failure();
    }
    if (!seen.insert(name).second) {
      error = "mesh axis '" + name.str() + "' is named twice";
      return mlir::failure();
    }
    total *= value;
    if (total > INT32_MAX) {
      error = "the mesh '" + text.str() + "' has more than 2^31 - 1 devices (one MPI rank each)";
      return mlir::failure();
    }
    mesh.axisNames.push_back(name.str());
    mesh.shape.push_back(value);
  }
  return mlir::success();
}

llvm::ArrayRef<StringRef> ShardingRules::presetNames() {
  static const StringRef names[] = {"replicated", "fsdp",     "tp",     "fsdp+tp",
                                    "torchtitan", "megatron", "maxtext"};
  return names;
}

int ShardingRules::axisIndex(StringRef name) const {
  for (size_t i = 0; i < mesh.axisNames.size(); ++i)
    if (mesh.axisNames[i] == name)
      return (int)i;
  return -1;
}

// Logical axes the tp preset splits: Megatron's column-parallel outputs (heads, kv_heads, qkv,
// mlp), which makes the matching row-parallel inputs split too, and vocab-parallel embeddings.
static const char *const kTensorParallelAxes[] = {"vocab", "heads", "kv_heads", "qkv", "mlp"};
static const char *const kTensorAxisNames[] = {"tp", "model"};
// dp_shard first: HSDP meshes (torchtitan's dp_replicate x dp_shard) shard over it and
// replicate over dp_replicate.
static const char *const kDataAxisNames[] = {"dp_shard", "dp", "fsdp", "data"};
// Mesh axes a preset places pipeline stages on.
static const char *const kStageAxisNames[] = {"pp", "pipeline", "stage"};
// Mesh axes a preset splits the experts of a stacked MoE tensor over (logical axis `experts`).
static const char *const kExpertAxisNames[] = {"ep", "expert"};

std::optional<ShardingRules> ShardingRules::load(StringRef spec, const MeshSpec &mesh,
                                                 std::string &error) {
  ShardingRules rules;
  rules.mesh = mesh;
  rules.sourceName = spec.str();
  auto findAxis = [&](llvm::ArrayRef<const char *> names) {
    for (const char *n : names)
      if (rules.axisIndex(n) >= 0)
        return std::string(n);
    return std::string();
  };
  if (std::optional<Trainer> trainer = trainerOfPreset(spec)) {
    rules.preset = spec.str();
    if (failed(checkTrainerMesh(*trainer, mesh, rules.stageAxisName, error)))
      return std::nullopt;
    rules.megatronStages = *trainer == Trainer::Megatron;
    return rules;
  }
  if (llvm::is_contained(presetNames(), spec)) {
    rules.preset = spec.str();
    rules.stageAxisName = findAxis(kStageAxisNames);
    bool wantsTp = spec == "tp" || spec == "fsdp+tp";
    bool wantsDp = spec == "fsdp" || spec == "fsdp+tp";
    std::string tp = findAxis(kTensorAxisNames), dp = findAxis(kDataAxisNames);
    if (wantsTp && tp.empty()) {
      error = "preset '" + spec.str() + "' needs a mesh axis named tp (or model); the mesh is " +
              mesh.str();
      return std::nullopt;
    }
    if (wantsDp && dp.empty()) {
      error = "preset '" + spec.str() + "' needs a mesh axis named dp (or dp_shard, fsdp, data); the mesh is " +
              mesh.str();
      return std::nullopt;
    }
    // Expert parallelism: every expert whole on one rank of the axis, E / ep of them each.
    if (std::string ep = findAxis(kExpertAxisNames); !ep.empty() && spec != "replicated")
      rules.rules.push_back({"experts", false, {}, {ep}});
    if (wantsTp)
      for (const char *axis : kTensorParallelAxes)
        rules.rules.push_back({axis, false, {}, {tp}});
    if (wantsDp)
      rules.rules.push_back({"*", true, {}, {dp}}); // fsdp: first free dim, see apply()
    return rules;
  }

  auto buffer = llvm::MemoryBuffer::getFile(spec);
  if (!buffer) {
    error = "--shard '" + spec.str() + "' is neither a preset (replicated, fsdp, tp, fsdp+tp, " +
            "torchtitan, megatron, maxtext) " +
            "nor a readable rules file: " + buffer.getError().message();
    return std::nullopt;
  }
  if (unsigned line = lineNestedDeeperThan((*buffer)->getBuffer())) {
    error = "rules file '" + spec.str() + "': JSON nested more than " +
            std::to_string(kMaxNesting) + " levels deep (line " + std::to_string(line) +
            "); see README for the format";
    return std::nullopt;
  }
  // Key order is meaningful (the first matching name pattern decides): an ordered parser.
  using Json = nlohmann::ordered_json;
  initrt::CheckedJsonParse<Json> parse((*buffer)->getBuffer().begin(),
                                       (*buffer)->getBuffer().end());
  if (parse.tooDeep) {
    error = "rules file '" + spec.str() + "': JSON " + parse.problem();
    return std::nullopt;
  }
  if (!parse.syntaxError.empty()) {
    std::string detail = parse.syntaxError; // "[json.exception.parse_error.101] parse error at..."
    size_t end = detail.find("] ");
    if (detail.rfind("[json.exception", 0) == 0 && end != std::string::npos)
      detail.erase(0, end + 2);
    error = "rules file '" + spec.str() + "' is not valid JSON: " + detail;
    return std::nullopt;
  }
  // A key given twice would drop the earlier rule without a word (the parser keeps the last).
  if (!parse.duplicate.empty()) {
    error = "rules file '" + spec.str() + "': \"" + parse.duplicate +
            "\" is given twice in one object, and only one of them could apply: keep one";
    return std::nullopt;
  }
  const Json &root = parse.value;
  if (!root.is_object()) {
    error = "rules file '" + spec.str() + "' must hold a JSON object with \"logical_axes\" and/or "
            "\"params\"";
    return std::nullopt;
  }
  auto axesOf = [&](const Json &v, std::vector<std::string> &out,
                    const std::string &where) -> bool {
    if (v.is_null())
      return true;
    if (v.is_string()) {
      out.push_back(v.get<std::string>());
    } else if (v.is_array()) {
      for (const Json &e : v) {
        if (!e.is_string()) {
          error = "rules file '" + spec.str() + "': " + where + " must list mesh axis names";
          return false;
        }
        out.push_back(e.get<std::string>());
      }
    } else {
      error = "rules file '" + spec.str() + "': " + where +
              " must be a mesh axis name, a list of them, or null";
      return false;
    }
    std::set<std::string> seen;
    for (auto &a : out) {
      if (rules.axisIndex(a) < 0) {
        error = "rules file '" + spec.str() + "': " + where + " uses mesh axis '" + a +
                "', which the mesh " + mesh.str() + " does not have";
        return false;
      }
      if (!seen.insert(a).second) {
        error = "rules file '" + spec.str() + "': " + where + " lists mesh axis '" + a +
                "' twice; a mesh axis splits a dim once";
        return false;
      }
    }
    return true;
  };
  for (auto &[key, value] : root.items()) {
    if (key != "logical_axes" && key != "params" && key != "pipeline" && key != "preset") {
      error = "rules file '" + spec.str() + "': unknown key '" + key +
              "' (expected \"logical_axes\", \"params\", \"pipeline\" or \"preset\")";
      return std::nullopt;
    }
  }
  // A preset with the file's pipeline split: the preset's rules, and "pipeline" alone beside.
  if (auto preset = root.find("preset"); preset != root.end()) {
    if (!preset->is_string() || !llvm::is_contained(presetNames(), preset->get<std::string>())) {
      error = "rules file '" + spec.str() + "': \"preset\" must name one of replicated, fsdp, "
              "tp, fsdp+tp, torchtitan, megatron, maxtext";
      return std::nullopt;
    }
    if (root.contains("logical_axes") || root.contains("params")) {
      error = "rules file '" + spec.str() + "': \"preset\" takes the preset's rules whole, so "
              "\"logical_axes\" and \"params\" cannot go beside it (only \"pipeline\"); drop "
              "the preset, or the rules";
      return std::nullopt;
    }
    std::optional<ShardingRules> base = load(preset->get<std::string>(), mesh, error);
    if (!base)
      return std::nullopt;
    rules = std::move(*base);
    rules.sourceName = spec.str();
  }
  if (auto pipeline = root.find("pipeline"); pipeline != root.end()) {
    const std::string where = "rules file '" + spec.str() + "': \"pipeline\"";
    auto axis = pipeline->is_object() ? pipeline->find("axis") : pipeline->end();
    if (!pipeline->is_object() || axis == pipeline->end() || !axis->is_string()) {
      error = where + " must be an object naming the stage axis, e.g. {\"axis\": \"pp\"} or "
                      "{\"axis\": \"pp\", \"stages\": [[0, 1], [2, 3]]}";
      return std::nullopt;
    }
    for (auto &[key, value] : pipeline->items())
      if (key != "axis" && key != "stages" && key != "split") {
        error = where + ": unknown key '" + key + "' (expected \"axis\", \"stages\" or \"split\")";
        return std::nullopt;
      }
    if (auto split = pipeline->find("split"); split != pipeline->end()) {
      if (!split->is_string() ||
          (split->get<std::string>() != "layers" && split->get<std::string>() != "bytes")) {
        error = where + ".split must be \"layers\" (torchtitan's split, the default) or "
                        "\"bytes\" (each stage's per-rank bytes balanced)";
        return std::nullopt;
      }
      if (pipeline->contains("stages")) {
        error = where + " gives both \"stages\" and \"split\": the stages already say where "
                        "each layer goes; keep one";
        return std::nullopt;
      }
      rules.splitByBytes = split->get<std::string>() == "bytes";
    }
    if (pipeline->contains("split") || pipeline->contains("stages"))
      rules.megatronStages = false; // the file's split replaces the preset's
    rules.stageAxisName = axis->get<std::string>();
    if (rules.axisIndex(rules.stageAxisName) < 0) {
      error = where + " names mesh axis '" + rules.stageAxisName + "', which the mesh " +
              mesh.str() + " does not have";
      return std::nullopt;
    }
    if (auto stages = pipeline->find("stages"); stages != pipeline->end()) {
      bool valid = stages->is_array();
      for (const Json &stage : valid ? *stages : Json::array()) {
        valid = valid && stage.is_array();
        std::vector<int64_t> layers;
        for (const Json &layer : valid ? stage : Json::array()) {
          valid = valid && layer.is_number_integer() && layer.get<int64_t>() >= 0;
          if (valid)
            layers.push_back(layer.get<int64_t>());
        }
        rules.stageLayers.push_back(std::move(layers));
      }
      if (!valid) {
        error = where + ".stages must list, for each stage, the layer numbers it holds, e.g. "
                        "[[0, 1], [2, 3]]";
        return std::nullopt;
      }
      int64_t size = mesh.shape[rules.axisIndex(rules.stageAxisName)];
      if (int64_t(rules.stageLayers.size()) != size) {
        error = where + ".stages lists " + std::to_string(rules.stageLayers.size()) +
                " stages but mesh axis '" + rules.stageAxisName + "' has " + std::to_string(size);
        return std::nullopt;
      }
    }
  }
  if (auto logical = root.find("logical_axes"); logical != root.end()) {
    if (!logical->is_object()) {
      error = "rules file '" + spec.str() + "': \"logical_axes\" must be an object";
      return std::nullopt;
    }
    for (auto &[name, value] : logical->items()) {
      Rule rule{name, false, {}, {}};
      if (!axesOf(value, rule.meshAxes, "logical axis '" + name + "'"))
        return std::nullopt;
      rules.rules.push_back(rule);
    }
  }
  if (auto params = root.find("params"); params != root.end()) {
    if (!params->is_object()) {
      error = "rules file '" + spec.str() + "': \"params\" must be an object";
      return std::nullopt;
    }
    for (auto &[pattern, value] : params->items()) {
      Rule rule{pattern, true, {}, {}};
      if (!llvm::GlobPattern::create(pattern)) {
        error = "rules file '" + spec.str() + "': bad pattern '" + pattern + "'";
        return std::nullopt;
      }
      if (!value.is_array()) {
        error = "rules file '" + spec.str() + "': params pattern '" + pattern +
                "' must map to a list with one entry per dim";
        return std::nullopt;
      }
      for (size_t d = 0; d < value.size(); ++d) {
        std::vector<std::string> axes;
        if (!axesOf(value[d], axes,
                    "dim " + std::to_string(d) + " of pattern '" + pattern + "'"))
          return std::nullopt;
        rule.dims.push_back(axes);
      }
      rules.rules.push_back(rule);
    }
  }
  // Name patterns win over logical axes: put them first. A preset's rules keep their order
  // (experts, tensor, then fsdp's free dim): moved first, fsdp would take the experts' dim.
  if (rules.preset.empty())
    std::stable_partition(rules.rules.begin(), rules.rules.end(),
                          [](const Rule &r) { return r.byName; });
  return rules;
}

mlir::LogicalResult ShardingRules::apply(const ParamShape &param, DimAxes &out,
                                         std::string &error) {
  if (std::optional<Trainer> trainer = trainerOfPreset(preset)) {
    if (failed(applyTrainerPreset(*trainer, mesh, param, out, error)))
      return mlir::failure();
    for (auto &dim : out)
      if (llvm::is_contained(dim, stageAxis())) {
        error = "parameter '" + param.name + "': mesh axis '" + stageAxisName +
                "' is the pipeline stage axis, which places whole parameters: it cannot split "
                "a dim";
        return mlir::failure();
      }
    return mlir::success();
  }
  size_t rank = param.shape.size();
  out.assign(rank, {});
  std::set<int> used;
  auto assign = [&](size_t dim, StringRef axis) -> bool {
    int index = axisIndex(axis);
    if (index == stageAxis()) {
      error = "parameter '" + param.name + "': mesh axis '" + axis.str() +
              "' is the pipeline stage axis, which places whole parameters: it cannot split a "
              "dim";
      return false;
    }
    if (!used.insert(index).second) {
      error = "parameter '" + param.name + "': mesh axis '" + axis.str() +
              "' would split two dims; a mesh axis can split at most one dim of a parameter";
      return false;
    }
    out[dim].push_back(index);
    return true;
  };
  auto axisParts = [&](int index) { return mesh.shape[index]; };
  // Expert parallelism gives every rank of its axes the same number of whole experts.
  auto expertsDivide = [&](const Rule &rule, size_t d) {
    if (rule.pattern != "experts")
      return true;
    int64_t parts = 1;
    for (const std::string &axis : rule.meshAxes)
      parts *= axisParts(axisIndex(axis));
    if (param.shape[d] % parts == 0)
      return true;
    error = "parameter '" + param.name + "': its " + std::to_string(param.shape[d]) +
            " experts do not divide over mesh axis '" + llvm::join(rule.meshAxes, "', '") +
            "' of " + std::to_string(parts) + ": expert parallelism gives every rank of the " +
            "axis the same number of whole experts; use an axis size that divides " +
            std::to_string(param.shape[d]);
    return false;
  };

  if (!preset.empty()) {
    for (Rule &rule : rules) {
      if (rule.byName) {
        // fsdp: the first dim not split yet whose size is at least the number of parts; when
        // every free dim is smaller, FSDP2's own rule: dim 0 (or the first free dim) in
        // torch.chunk's uneven parts, the trailing ranks' empty, rather than a replica on
        // every rank of the axis.
        int dp = axisIndex(rule.meshAxes[0]);
        if (rank == 0 || used.count(dp))
          continue;
        std::optional<size_t> chosen;
        for (size_t d = 0; d < rank && !chosen; ++d)
          if (out[d].empty() && param.shape[d] >= axisParts(dp))
            chosen = d;
        for (size_t d = 0; d < rank && !chosen; ++d)
          if (out[d].empty() && param.shape[d] > 0)
            chosen = d;
        if (chosen) {
          if (!assign(*chosen, rule.meshAxes[0]))
            return mlir::failure();
          rule.used = true;
        }
        continue;
      }
      for (size_t d = 0; d < rank && d < param.axes.size(); ++d)
        if (param.axes[d] == rule.pattern && !used.count(axisIndex(rule.meshAxes[0]))) {
          if (!expertsDivide(rule, d))
            return mlir::failure();
          if (!assign(d, rule.meshAxes[0]))
            return mlir::failure();
          rule.used = true;
          break;
        }
    }
    return mlir::success();
  }

  // The first matching name pattern, in the file's order, decides alone; the later ones that
  // match too are shadowed for this parameter.
  Rule *decider = nullptr;
  for (Rule &rule : rules) {
    if (!rule.byName || !llvm::GlobPattern::create(rule.pattern)->match(param.name))
      continue;
    if (decider) {
      if (rule.shadowedBy.empty())
        rule.shadowedBy = decider->pattern;
      continue;
    }
    decider = &rule;
  }
  if (Rule *rule = decider) {
    rule->used = true;
    // Logical rules for this parameter's axes do not apply: the pattern decides alone.
    for (Rule &logical : rules)
      if (!logical.byName && logical.shadowedBy.empty() &&
          llvm::is_contained(param.axes, logical.pattern))
        logical.shadowedBy = rule->pattern;
    if (rule->dims.size() > rank) {
      error = "rules file '" + sourceName + "': pattern '" + rule->pattern + "' gives " +
              std::to_string(rule->dims.size()) + " dims but parameter '" + param.name +
              "' has rank " + std::to_string(rank);
      return mlir::failure();
    }
    for (size_t d = 0; d < rule->dims.size(); ++d)
      for (auto &axis : rule->dims[d])
        if (!assign(d, axis))
          return mlir::failure();
    return mlir::success();
  }
  for (size_t d = 0; d < rank && d < param.axes.size(); ++d) {
    for (Rule &rule : rules) {
      if (rule.byName || rule.pattern != param.axes[d])
        continue;
      rule.used = true;
      if (!expertsDivide(rule, d))
        return mlir::failure();
      for (auto &axis : rule.meshAxes)
        if (!assign(d, axis))
          return mlir::failure();
    }
  }
  return mlir::success();
}

void ShardingRules::noteTied(StringRef name, StringRef target) {
  for (Rule &rule : rules)
    if (rule.byName && rule.tiedExample.empty() &&
        llvm::GlobPattern::create(rule.pattern)->match(name))
      rule.tiedExample = (name + "' is tied to '" + target).str();
}

std::string ShardingRules::presetWarning() const {
  if (preset.empty()) // a rules file: checkAllRulesUsed
    return "";
  std::string tpAxis, dpAxis, epAxis;
  bool tpUsed = false;
  for (const Rule &rule : rules) {
    if (rule.byName) {
      if (!rule.used)
        dpAxis = rule.meshAxes[0];
    } else if (rule.pattern == "experts") {
      if (!rule.used)
        epAxis = rule.meshAxes[0];
    } else {
      tpAxis = rule.meshAxes[0];
      tpUsed = tpUsed || rule.used;
    }
  }
  auto parts = [&](const std::string &axis) { return mesh.shape[axisIndex(axis)]; };
  std::string warning;
  if (!tpAxis.empty() && !tpUsed && parts(tpAxis) > 1)
    warning = "--shard " + preset + " split no parameter over mesh axis '" + tpAxis +
              "': no parameter has a dim with logical axis vocab, heads, kv_heads, qkv or mlp, "
              "which it splits, so every parameter is replicated over it; name the dims so "
              "(`axes [...]` on init.param), or write a rules file for this model's axes";
  if (!dpAxis.empty() && parts(dpAxis) > 1)
    warning += std::string(warning.empty() ? "" : "; ") + "--shard " + preset +
               " split no parameter over mesh axis '" + dpAxis +
               "': none has a non-empty dim left free by the other axes, so every parameter is "
               "replicated over it";
  if (!epAxis.empty() && parts(epAxis) > 1)
    warning += std::string(warning.empty() ? "" : "; ") + "--shard " + preset +
               " split no parameter over mesh axis '" + epAxis +
               "': no parameter has a dim with logical axis experts (stacked MoE experts), so "
               "every parameter is replicated over it";
  return warning;
}

mlir::LogicalResult ShardingRules::checkAllRulesUsed(std::string &error) const {
  for (const Rule &rule : rules) {
    if (!preset.empty() || rule.used)
      continue;
    std::string what;
    if (!rule.byName && !rule.shadowedBy.empty())
      what = "logical axis '" + rule.pattern +
             "' decides no parameter: each one that has it is "
             "decided by a name pattern ('" +
             rule.shadowedBy +
             "'), and a matching pattern "
             "wins over logical axes; remove the rule, or narrow the pattern";
    else if (!rule.byName)
      what = "logical axis '" + rule.pattern + "' is used by no parameter; fix or remove the rule";
    else if (!rule.shadowedBy.empty())
      what = "pattern '" + rule.pattern + "' decides no parameter: each one it matches is "
             "decided by an earlier pattern ('" + rule.shadowedBy + "'), and the first "
             "matching pattern wins; move it up or remove it";
    else if (!rule.tiedExample.empty())
      what = "pattern '" + rule.pattern + "' matches only tied parameters ('" + rule.tiedExample +
             "', whose sharding it shares); write the rule for the parameter it is tied to";
    else
      what = "pattern '" + rule.pattern + "' matches no parameter; fix or remove the rule";
    error = "rules file '" + sourceName + "': " + what;
    return mlir::failure();
  }
  return mlir::success();
}


namespace {
// The layer a parameter belongs to: the first all-digit component of its name
// (`model.layers.3.mlp.up_proj.weight`, `transformer.h.3.attn.c_attn.weight`).
std::optional<int64_t> layerOf(StringRef name) {
  llvm::SmallVector<StringRef> parts;
  name.split(parts, '.');
  for (StringRef part : parts) {
    int64_t layer;
    if (!part.empty() && llvm::all_of(part, llvm::isDigit) && !part.getAsInteger(10, layer))
      return layer;
  }
  return std::nullopt;
}

/// The `"split": "bytes"` rule: the model as the sequence [embedding, layer 0, ..., layer L-1,
/// head], each item weighing the bytes its parameters put on one rank (a parameter outside the
/// layers weighs with the item before it, as it is placed), cut into `count` contiguous non-empty
/// runs whose heaviest is as light as can be; of the cuts that reach it, each run takes as much
/// as fits, from the first stage on. Returns each layer's stage.
std::vector<int64_t> splitLayersByBytes(llvm::ArrayRef<ParamShape> params,
                                        llvm::ArrayRef<std::optional<int64_t>> layers,
                                        llvm::ArrayRef<int64_t> rankBytes, int64_t numLayers,
                                        int64_t count) {
  std::vector<int64_t> weight(size_t(numLayers + 2), 0);
  size_t lastLayerParam = 0;
  for (size_t i = 0; i < params.size(); ++i)
    if (layers[i])
      lastLayerParam = i;
  int64_t item = 0; // the embedding until the first layer
  for (size_t i = 0; i < params.size(); ++i) {
    if (layers[i])
      item = *layers[i] + 1;
    else if (i > lastLayerParam)
      item = numLayers + 1;
    if (!params[i].shape.empty())
      weight[size_t(item)] += rankBytes[i];
  }
  // The runs of the greedy cut under `bound`: each run as long as fits, but never leaving fewer
  // items than runs to come.
  auto cut = [&](int64_t bound, std::vector<int64_t> *runOf) {
    int64_t runs = 1, sum = 0, n = int64_t(weight.size());
    for (int64_t i = 0; i < n; ++i) {
      bool full = sum > 0 && sum + weight[size_t(i)] > bound;
      bool forced = runOf && i > 0 && n - i == count - runs;
      if ((full || forced) && runs < (runOf ? count : INT64_MAX)) {
        ++runs;
        sum = 0;
      }
      sum += weight[size_t(i)];
      if (runOf)
        runOf->push_back(runs - 1);
    }
    return runs;
  };
  int64_t low = *std::max_element(weight.begin(), weight.end()), high = 0;
  for (int64_t w : weight)
    high += w;
  while (low < high) { // the lightest bound the greedy cut meets in `count` runs
    int64_t mid = low + (high - low) / 2;
    if (cut(mid, nullptr) <= count)
      high = mid;
    else
      low = mid + 1;
  }
  std::vector<int64_t> runOf;
  cut(low, &runOf);
  return std::vector<int64_t>(runOf.begin() + 1, runOf.end() - 1);
}
} // namespace

mlir::LogicalResult ShardingRules::assignStages(llvm::ArrayRef<ParamShape> params,
                                                llvm::ArrayRef<int64_t> rankBytes,
                                                std::vector<int64_t> &stages,
                                                std::string &error) const {
  const int axis = stageAxis();
  const int64_t count = mesh.shape[axis];
  const std::string &axisName = stageAxisName;
  std::vector<std::optional<int64_t>> layers;
  int64_t numLayers = 0;
  for (const ParamShape &param : params) {
    layers.push_back(layerOf(param.name));
    if (layers.back())
      numLayers = std::max(numLayers, *layers.back() + 1);
  }
  std::vector<bool> present(size_t(numLayers), false);
  for (auto &layer : layers)
    if (layer)
      present[size_t(*layer)] = true;
  for (int64_t layer = 0; layer < numLayers; ++layer)
    if (!present[size_t(layer)]) {
      error = "pipeline stages over mesh axis '" + axisName + "': layer " +
              std::to_string(layer) + " has no parameter, but layer " +
              std::to_string(numLayers - 1) +
              " does: layers are numbered 0..N-1 by the first all-digit part of a name";
      return mlir::failure();
    }
  if (numLayers == 0 && count > 1) {
    error = "mesh axis '" + axisName + "' places pipeline stages, but no parameter name has a "
            "layer number (such as model.layers.3.*): nothing to place on its " +
            std::to_string(count) + " stages; drop the axis, or rename it if it is not meant "
            "for stages";
    return mlir::failure();
  }
  // Each layer's stage.
  std::vector<int64_t> layerStage(size_t(numLayers), -1);
  if (!stageLayers.empty()) {
    for (int64_t stage = 0; stage < count; ++stage)
      for (int64_t layer : stageLayers[size_t(stage)]) {
        if (layer >= numLayers) {
          error = "rules file '" + sourceName + "': pipeline stage " + std::to_string(stage) +
                  " lists layer " + std::to_string(layer) + ", but the model has " +
                  std::to_string(numLayers) + " layers (0.." + std::to_string(numLayers - 1) +
                  ")";
          return mlir::failure();
        }
        if (layerStage[size_t(layer)] >= 0) {
          error = "rules file '" + sourceName + "': layer " + std::to_string(layer) +
                  " is listed for pipeline stages " + std::to_string(layerStage[size_t(layer)]) +
                  " and " + std::to_string(stage) + ": a layer lives on one stage";
          return mlir::failure();
        }
        layerStage[size_t(layer)] = stage;
      }
    for (int64_t layer = 0; layer < numLayers; ++layer)
      if (layerStage[size_t(layer)] < 0) {
        error = "rules file '" + sourceName + "': layer " + std::to_string(layer) +
                " is on no pipeline stage: list it under one of \"stages\"";
        return mlir::failure();
      }
  } else if (count > 1 && megatronStages) {
    // Megatron's default split (get_num_layers_to_build): L / P layers on every stage, the
    // embedding on the first stage and the final norm and output layer on the last.
    if (numLayers % count != 0) {
      error = "--shard megatron: mesh axis '" + axisName + "' has " + std::to_string(count) +
              " pipeline stages but the model has " + std::to_string(numLayers) +
              " layers: Megatron gives every stage the same number of layers, so " +
              std::to_string(count) + " must divide " + std::to_string(numLayers) +
              "; use another pp, or list the layers of each stage in a rules file "
              "({\"preset\": \"megatron\", \"pipeline\": {\"axis\": \"" + axisName +
              "\", \"stages\": [...]}})";
      return mlir::failure();
    }
    for (int64_t layer = 0; layer < numLayers; ++layer)
      layerStage[size_t(layer)] = layer / (numLayers / count);
  } else if (count > 1 && splitByBytes) {
    if (numLayers + 2 < count) {
      error = "mesh axis '" + axisName + "' has " + std::to_string(count) +
              " pipeline stages but the model has " + std::to_string(numLayers) +
              " layers: the bytes split gives every stage a layer, the embedding or the head, "
              "so it needs at most " + std::to_string(numLayers + 2) + " stages; use fewer";
      return mlir::failure();
    }
    layerStage = splitLayersByBytes(params, layers, rankBytes, numLayers, count);
  } else if (count > 1) {
    // torchtitan's generate_llm_fqn_per_model_part with its default weights: the embedding and
    // the final norm with the head count as one layer each; the L + 2 are split into `count`
    // contiguous runs, the first (L + 2) % count runs one longer.
    const int64_t effective = numLayers + 2, perStage = effective / count,
                  extra = effective % count;
    if (perStage < 1) {
      error = "mesh axis '" + axisName + "' has " + std::to_string(count) +
              " pipeline stages but the model has " + std::to_string(numLayers) +
              " layers: torchtitan's split (the embedding and the head counting as one layer "
              "each) gives every stage at least one, so it needs at most " +
              std::to_string(effective) + " stages; use fewer, or list the layers of each "
              "stage in a rules file (\"pipeline\": {\"axis\": ..., \"stages\": [...]})";
      return mlir::failure();
    }
    int64_t next = 0;
    for (int64_t stage = 0; stage < count; ++stage) {
      int64_t take = perStage + (stage < extra ? 1 : 0);
      if (stage == 0)
        --take; // the embedding
      if (stage == count - 1)
        --take; // the final norm and the head
      for (int64_t k = 0; k < take && next < numLayers; ++k)
        layerStage[size_t(next++)] = stage;
    }
  } else {
    std::fill(layerStage.begin(), layerStage.end(), 0);
  }
  // Parameters outside the layers: before the first layer (the embedding) on the first stage,
  // after the last (the final norm, the head) on the last, between two on the earlier one's.
  // (Without layers, count is 1: everything on stage 0.)
  stages.assign(params.size(), 0);
  size_t lastLayerParam = 0;
  for (size_t i = 0; i < params.size(); ++i)
    if (layers[i])
      lastLayerParam = i;
  std::optional<int64_t> previous;
  for (size_t i = 0; i < params.size(); ++i) {
    if (layers[i])
      previous = layerStage[size_t(*layers[i])];
    if (params[i].shape.empty())
      stages[i] = -1;
    else if (layers[i])
      stages[i] = *previous;
    else if (numLayers > 0 && i > lastLayerParam)
      stages[i] = count - 1;
    else
      stages[i] = previous.value_or(0);
  }
  return mlir::success();
}
