//===- TrainerPresets.cpp - the trainers' own layouts as presets ----------===//
#include "TrainerPresets.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <set>

using namespace initc;
using llvm::StringRef;

namespace {

// How torchtitan's parallelize_llama and Megatron's tensor parallel layers split a module's
// parameters over the tensor axis.
enum class Style {
  Column,     // ColwiseParallel / ColumnParallelLinear: weight and bias split on dim 0
  Row,        // RowwiseParallel / RowParallelLinear: weight split on dim 1, bias whole
  Vocab,      // the embedding (RowwiseParallel on nn.Embedding, VocabParallelEmbedding): dim 0
  Replicated, // norms (SequenceParallel keeps their weights whole)
};

// The llama plan, by the names transformers gives the parameters and by torchtitan's own.
struct PlanEntry {
  const char *suffix;
  Style style;
};
const PlanEntry kLlamaPlan[] = {
    {"embed_tokens.weight", Style::Vocab},
    {"tok_embeddings.weight", Style::Vocab},
    {"self_attn.q_proj.weight", Style::Column},
    {"self_attn.k_proj.weight", Style::Column},
    {"self_attn.v_proj.weight", Style::Column},
    {"self_attn.q_proj.bias", Style::Column},
    {"self_attn.k_proj.bias", Style::Column},
    {"self_attn.v_proj.bias", Style::Column},
    {"self_attn.o_proj.weight", Style::Row},
    {"self_attn.o_proj.bias", Style::Replicated},
    {"attention.wq.weight", Style::Column},
    {"attention.wk.weight", Style::Column},
    {"attention.wv.weight", Style::Column},
    // torchtitan 0.3.0 holds them in a QKVLinear
    {"attention.qkv_linear.wq.weight", Style::Column},
    {"attention.qkv_linear.wk.weight", Style::Column},
    {"attention.qkv_linear.wv.weight", Style::Column},
    {"attention.wo.weight", Style::Row},
    {"mlp.gate_proj.weight", Style::Column},
    {"mlp.up_proj.weight", Style::Column},
    {"mlp.down_proj.weight", Style::Row},
    {"feed_forward.w1.weight", Style::Column},
    {"feed_forward.w3.weight", Style::Column},
    {"feed_forward.w2.weight", Style::Row},
    {"lm_head.weight", Style::Column},
    {"output.weight", Style::Column},
    {"input_layernorm.weight", Style::Replicated},
    {"post_attention_layernorm.weight", Style::Replicated},
    {"self_attn.q_norm.weight", Style::Replicated},
    {"self_attn.k_norm.weight", Style::Replicated},
    {"attention.q_norm.weight", Style::Replicated},
    {"attention.k_norm.weight", Style::Replicated},
    {"attention_norm.weight", Style::Replicated},
    {"ffn_norm.weight", Style::Replicated},
    {"norm.weight", Style::Replicated},
};

std::optional<Style> styleOf(StringRef name) {
  for (const PlanEntry &entry : kLlamaPlan)
    if (name == entry.suffix || name.ends_with(std::string(".") + entry.suffix))
      return entry.style;
  return std::nullopt;
}

const char *presetName(Trainer trainer) {
  switch (trainer) {
  case Trainer::Torchtitan:
    return "torchtitan";
  case Trainer::Megatron:
    return "megatron";
  case Trainer::MaxText:
    return "maxtext";
  }
  return "";
}

int axisIndex(const MeshSpec &mesh, StringRef name) {
  for (size_t i = 0; i < mesh.axisNames.size(); ++i)
    if (mesh.axisNames[i] == name)
      return int(i);
  return -1;
}

int firstAxis(const MeshSpec &mesh, llvm::ArrayRef<const char *> names) {
  for (const char *name : names)
    if (int index = axisIndex(mesh, name); index >= 0)
      return index;
  return -1;
}

const char *const kTensorAxes[] = {"tp"};
const char *const kStageAxes[] = {"pp"};
// torchtitan's FSDP axis (dp_shard, or fsdp in its newer meshes) and Megatron's data axis.
const char *const kDataAxes[] = {"dp_shard", "fsdp", "dp"};

// MaxText's mesh_axes, in its order (src/MaxText/configs/base.yml).
const char *const kMaxTextMeshAxes[] = {
    "data",   "stage",  "fsdp",   "fsdp_transpose",  "sequence",     "context",
    "context_autoregressive", "tensor", "tensor_transpose", "tensor_sequence", "expert",
    "autoregressive"};

// MaxText's default logical_axis_rules (src/MaxText/configs/base.yml) for the logical axes
// parameters have, in its order: the first rule for a dim whose mesh axes no other dim of the
// tensor took yet decides it (flax.linen.logical_to_mesh_axes). Activation and cache rules
// are left out: no parameter has those axes.
struct MaxTextRule {
  const char *logical;
  std::vector<const char *> meshAxes;
};
const MaxTextRule kMaxTextRules[] = {
    {"mlp", {"fsdp_transpose", "tensor", "tensor_sequence", "autoregressive"}},
    {"vocab", {"tensor", "tensor_transpose", "tensor_sequence", "autoregressive"}},
    {"heads", {"tensor", "tensor_transpose", "tensor_sequence", "autoregressive"}},
    {"q_heads", {"tensor", "tensor_transpose", "tensor_sequence", "autoregressive"}},
    {"kv_heads", {"tensor", "tensor_transpose", "tensor_sequence", "autoregressive"}},
    {"embed", {"fsdp", "fsdp_transpose", "sequence", "tensor_transpose", "context", "expert"}},
    {"embed", {"fsdp", "sequence", "tensor_transpose", "context", "expert"}},
    {"embed", {"fsdp", "fsdp_transpose", "sequence", "context", "expert"}},
    {"embed", {"fsdp", "sequence", "context", "expert"}},
    {"embed_no_exp", {"fsdp", "fsdp_transpose", "sequence", "tensor_transpose", "context"}},
    {"embed_no_exp", {"fsdp", "sequence", "tensor_transpose", "context"}},
    {"embed_no_exp", {"fsdp", "fsdp_transpose", "sequence", "context"}},
    {"embed_no_exp", {"fsdp", "sequence", "context"}},
    {"q_lora", {"fsdp", "fsdp_transpose", "sequence", "context", "tensor_transpose", "expert"}},
    {"q_lora", {"fsdp", "sequence", "context", "tensor_transpose", "expert"}},
    {"q_lora", {"fsdp", "fsdp_transpose", "sequence", "context", "expert"}},
    {"q_lora", {"fsdp", "sequence", "context", "expert"}},
    {"kv_lora", {"fsdp", "fsdp_transpose", "sequence", "context", "tensor_transpose", "expert"}},
    {"kv_lora", {"fsdp", "sequence", "context", "tensor_transpose", "expert"}},
    {"kv_lora", {"fsdp", "fsdp_transpose", "sequence", "context", "expert"}},
    {"kv_lora", {"fsdp", "sequence", "context", "expert"}},
    {"norm", {"tensor", "tensor_transpose"}},
    {"qkv", {}},
    {"kv_head_dim", {}},
    {"exp", {"expert"}},
};

// initc's logical axis names (ir-spec/import-hf.md) as MaxText's layers name the same dims.
std::optional<std::string> maxTextAxis(const ParamShape &param, size_t dim) {
  StringRef axis = param.axes[dim];
  bool hasExperts = llvm::is_contained(param.axes, "experts");
  if (axis == "embed")
    // RMSNorm's scale is `norm`; MoE expert kernels take `embed_no_exp`.
    return param.shape.size() == 1 ? "norm" : hasExperts ? "embed_no_exp" : "embed";
  if (axis == "experts")
    return std::string("exp");
  if (axis == "expert_mlp")
    return std::string("mlp");
  if (axis == "head_dim")
    return std::string("kv_head_dim");
  if (axis == "router") // the gate's expert dim: its kernel is ("embed", None)
    return std::string("");
  if (llvm::is_contained({"vocab", "heads", "kv_heads", "mlp", "q_lora", "kv_lora", "qkv"},
                         axis))
    return axis.str();
  return std::nullopt;
}

mlir::LogicalResult applyMaxText(const MeshSpec &mesh, const ParamShape &param, DimAxes &out,
                                 std::string &error) {
  const size_t rank = param.shape.size();
  std::vector<std::optional<std::string>> names(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (d < param.axes.size())
      names[d] = maxTextAxis(param, d);
    if (!names[d]) {
      std::string axis = d < param.axes.size() ? "'" + param.axes[d] + "'" : "no logical axis";
      error = "--shard maxtext: parameter '" + param.name + "' dim " + std::to_string(d) +
              " has " + axis + ", which MaxText's logical_axis_rules have no counterpart for "
              "(they know vocab, embed, heads, kv_heads, mlp, experts, q_lora, kv_lora); write "
              "a rules file for this model";
      return mlir::failure();
    }
  }
  // flax's rule: rules in order; a rule decides the first dim with its logical name if that
  // dim is undecided and none of its mesh axes is taken by another dim. Every MaxText mesh
  // axis exists there (size 1 unless set), so conflicts count the axes this mesh lacks too.
  std::vector<const MaxTextRule *> decided(rank, nullptr);
  std::set<std::string> taken;
  for (const MaxTextRule &rule : kMaxTextRules) {
    auto dim = llvm::find(names, std::optional<std::string>(rule.logical));
    if (dim == names.end())
      continue;
    size_t d = size_t(dim - names.begin());
    if (decided[d] ||
        llvm::any_of(rule.meshAxes, [&](const char *a) { return taken.count(a) > 0; }))
      continue;
    decided[d] = &rule;
    taken.insert(rule.meshAxes.begin(), rule.meshAxes.end());
  }
  for (size_t d = 0; d < rank; ++d) {
    if (!decided[d])
      continue;
    int64_t parts = 1;
    for (const char *axis : decided[d]->meshAxes)
      if (int index = axisIndex(mesh, axis); index >= 0 && mesh.shape[size_t(index)] > 1) {
        out[d].push_back(index);
        parts *= mesh.shape[size_t(index)];
      }
    // jax's NamedSharding tiles a dim in equal parts only (IndivisibleError otherwise).
    if (param.shape[d] % parts != 0) {
      std::vector<std::string> split;
      for (int index : out[d])
        split.push_back(mesh.axisNames[size_t(index)]);
      error = "--shard maxtext: parameter '" + param.name + "' dim " + std::to_string(d) +
              " (" + std::to_string(param.shape[d]) + ", logical axis '" + *names[d] +
              "') is split over mesh axes '" + llvm::join(split, "', '") + "' in " +
              std::to_string(parts) + " parts, which do not divide it: jax shards a dim in "
              "equal parts only; use a mesh whose axes divide it";
      return mlir::failure();
    }
  }
  return mlir::success();
}

} // namespace

std::optional<Trainer> initc::trainerOfPreset(StringRef preset) {
  for (Trainer trainer : {Trainer::Torchtitan, Trainer::Megatron, Trainer::MaxText})
    if (preset == presetName(trainer))
      return trainer;
  return std::nullopt;
}

mlir::LogicalResult initc::checkTrainerMesh(Trainer trainer, const MeshSpec &mesh,
                                            std::string &stageAxis, std::string &error) {
  stageAxis.clear();
  std::vector<const char *> known;
  std::string expected;
  switch (trainer) {
  case Trainer::Torchtitan:
    known = {"pp", "dp_replicate", "dp_shard", "fsdp", "dp", "tp"};
    expected = "pp, dp_replicate, dp_shard (or fsdp, dp) and tp, as torchtitan's ParallelDims "
               "names them";
    break;
  case Trainer::Megatron:
    known = {"pp", "dp", "tp"};
    expected = "pp, dp and tp";
    break;
  case Trainer::MaxText:
    known.assign(std::begin(kMaxTextMeshAxes), std::end(kMaxTextMeshAxes));
    expected = "MaxText's mesh_axes (data, stage, fsdp, fsdp_transpose, sequence, context, "
               "context_autoregressive, tensor, tensor_transpose, tensor_sequence, expert, "
               "autoregressive)";
    break;
  }
  for (size_t i = 0; i < mesh.axisNames.size(); ++i)
    if (!llvm::is_contained(known, StringRef(mesh.axisNames[i]))) {
      error = "preset '" + std::string(presetName(trainer)) + "' lays parameters out over " +
              expected + "; the mesh " + mesh.str() + " has axis '" + mesh.axisNames[i] +
              "', which that layout does not have";
      return mlir::failure();
    }
  if (trainer != Trainer::MaxText && firstAxis(mesh, kDataAxes) >= 0) {
    int count = 0;
    for (const char *name : kDataAxes)
      count += axisIndex(mesh, name) >= 0;
    if (count > 1) {
      error = "preset '" + std::string(presetName(trainer)) + "': the mesh " + mesh.str() +
              " has more than one of dp_shard, fsdp, dp; name one data axis";
      return mlir::failure();
    }
  }
  if (trainer == Trainer::MaxText) {
    // MaxText's pipeline is circular (layer l on stage l % stages by default) and replicates the
    // embedding over the stages: not a placement of whole parameters on one stage each.
    if (int stage = axisIndex(mesh, "stage"); stage >= 0 && mesh.shape[size_t(stage)] > 1) {
      error = "preset 'maxtext' does not place MaxText's pipeline stages (mesh axis 'stage' of " +
              std::to_string(mesh.shape[size_t(stage)]) + "): its circular pipeline puts layer "
              "l on stage l % stages and keeps the embedding on every stage; drop the axis, or "
              "write a rules file with a \"pipeline\"";
      return mlir::failure();
    }
    return mlir::success();
  }
  if (int stage = firstAxis(mesh, kStageAxes); stage >= 0)
    stageAxis = mesh.axisNames[size_t(stage)];
  return mlir::success();
}

mlir::LogicalResult initc::applyTrainerPreset(Trainer trainer, const MeshSpec &mesh,
                                              const ParamShape &param, DimAxes &out,
                                              std::string &error) {
  out.assign(param.shape.size(), {});
  // FSDP2, tensor parallel styles and Megatron's layers shard parameters only: a buffer (RoPE's
  // inv_freq) stays whole on every rank.
  if (param.buffer)
    return mlir::success();
  if (trainer == Trainer::MaxText)
    return applyMaxText(mesh, param, out, error);
  const std::string preset = presetName(trainer);
  std::optional<Style> style = styleOf(param.name);
  const size_t rank = param.shape.size();
  const size_t wantRank = style == Style::Row ? 2 : 1;
  if (!style || rank < wantRank || rank > 2) {
    error = "--shard " + preset + ": parameter '" + param.name + "' is none of those " +
            (trainer == Trainer::Torchtitan ? "torchtitan's llama plan (parallelize_llama)"
                                            : "Megatron's llama layers (GPTModel)") +
            " shard: the preset fits llama-style models (embed_tokens, self_attn.{q,k,v,o}_proj, "
            "mlp.{gate,up,down}_proj, the norms, lm_head); write a rules file for this model";
    return mlir::failure();
  }
  const int tp = firstAxis(mesh, kTensorAxes);
  const int dp = firstAxis(mesh, kDataAxes);
  std::optional<size_t> tensorDim;
  if (style == Style::Column || style == Style::Vocab)
    tensorDim = 0;
  else if (style == Style::Row && rank == 2)
    tensorDim = 1;
  if (tp >= 0 && tensorDim) {
    int64_t size = param.shape[*tensorDim], parts = mesh.shape[size_t(tp)];
    // Megatron's layers divide their dims exactly (megatron.core.utils.divide).
    if (trainer == Trainer::Megatron && size % parts != 0) {
      error = "--shard megatron: parameter '" + param.name + "' dim " +
              std::to_string(*tensorDim) + " (" + std::to_string(size) +
              ") does not divide over mesh axis 'tp' of " + std::to_string(parts) +
              ": Megatron's tensor parallel layers need it to (a vocabulary is padded to a "
              "multiple of tp first, which initc does not do); use a tp that divides it";
      return mlir::failure();
    }
    // Megatron splits the fused linear_qkv's rows (per query group: its q heads, k, v) over
    // tp. With fewer groups than ranks (tp a multiple of them, which Megatron allows) a rank
    // holds part of one group: some of its q heads and all or none of its k and v, which is
    // no split of q_proj, k_proj and v_proj.
    if (trainer == Trainer::Megatron && *tensorDim == 0 && param.heads > 0 &&
        !param.axes.empty() && param.axes[0] == "kv_heads" && param.heads % parts != 0) {
      error = "--shard megatron: parameter '" + param.name + "' holds " +
              std::to_string(param.heads) + " key/value head" + (param.heads == 1 ? "" : "s") +
              " (num_key_value_heads), which mesh axis 'tp' of " + std::to_string(parts) +
              " does not divide: Megatron's fused linear_qkv then gives a rank part of a query "
              "group (some of its q heads, all or none of its k and v), which no split of "
              "q_proj, k_proj and v_proj reproduces; use a tp that divides num_key_value_heads";
      return mlir::failure();
    }
    out[*tensorDim].push_back(tp);
  }
  // torchtitan's FSDP2 shards dim 0 of each tensor-parallel local shard: dp nested inside tp
  // when tp split dim 0 too. Megatron's data parallel replicates parameters.
  if (trainer == Trainer::Torchtitan && dp >= 0 && rank > 0) {
    int64_t size = param.shape[0], dpParts = mesh.shape[size_t(dp)];
    int64_t tpParts = !out[0].empty() ? mesh.shape[size_t(tp)] : 1;
    // Nested torch.chunk equals one chunk over tp * dp only when the tp chunks are equal and
    // divide over dp exactly.
    if (tpParts > 1 && dpParts > 1 && size % (tpParts * dpParts) != 0) {
      error = "--shard torchtitan: parameter '" + param.name + "' dim 0 (" +
              std::to_string(size) + ") is split over 'tp' (" + std::to_string(tpParts) +
              ") and then, within each tp shard, over '" + mesh.axisNames[size_t(dp)] + "' (" +
              std::to_string(dpParts) + ") by FSDP2: that nests evenly only when " +
              std::to_string(tpParts * dpParts) + " divides it; use a mesh whose tp * " +
              mesh.axisNames[size_t(dp)] + " divides " + std::to_string(size);
      return mlir::failure();
    }
    out[0].push_back(dp);
  }
  return mlir::success();
}
