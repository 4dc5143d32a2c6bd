//===- HFConfig.cpp - Hugging Face config.json -> init IR -----------------===//
//
// Names, shapes and defaults follow transformers' config classes and modeling files; the init
// recipes follow `_init_weights` (style hf) or the PyTorch module constructors (style torch).
// ir-spec/import-hf.md is the specification; keep the two in step.
//
//===----------------------------------------------------------------------===//
#include "initc/Import/HFConfig.h"

#include "initc/Dialect/Init/IR/InitOps.h"
#include "initc/Support/Nesting.h"
#include "initrt/base/program_io.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cfloat>
#include <cmath>
#include <optional>

using namespace mlir;
using namespace initc;
using namespace initc::import;
namespace json = llvm::json;

namespace {

// A tensor larger than this is a typo in the config, not a model (the largest released
// embedding tables are ~2^31 elements).
constexpr int64_t kMaxTensorElements = int64_t(1) << 40;
// Bounds the IR size: even 2^16 layers is far past any released model.
constexpr int64_t kMaxLayers = 65536;

const StringRef kModelTypes[] = {"llama",     "mistral",     "qwen2", "mixtral",
                                 "qwen3_moe", "deepseek_v3", "gpt2"};

std::string supportedList() { return llvm::join(ArrayRef<StringRef>(kModelTypes), ", "); }

/// A JSON value as a message shows it, with what kind of value it is when that is the problem.
std::string describe(const json::Value &value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << value;
  os.flush();
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  switch (value.kind()) {
  case json::Value::String:
    return text + " (a string)";
  case json::Value::Boolean:
    return text + " (a boolean)";
  case json::Value::Array:
    return text + " (an array)";
  case json::Value::Object:
    return text + " (an object)";
  default:
    return text;
  }
}

/// Typed access to the fields of a config object. Every failure sets one message that names the
/// file and the field and says how to fix it; callers just propagate `false`.
class ConfigFields {
public:
  ConfigFields(const json::Object &object, StringRef fileName, StringRef modelType,
               std::string &error)
      : object(object), fileName(fileName), modelType(modelType), error(error) {}

  /// Present and not null (transformers treats null as "use the default").
  const json::Value *find(StringRef field) const {
    const json::Value *value = object.get(field);
    return value && value->kind() != json::Value::Null ? value : nullptr;
  }

  bool fail(const Twine &message) {
    error = (fileName + ": " + message).str();
    return false;
  }

  /// A required positive integer.
  bool requirePositive(StringRef field, int64_t &out) {
    const json::Value *value = find(field);
    if (!value)
      return fail("missing field '" + field + "', which model_type '" + modelType +
                  "' requires; add it as a positive integer");
    return positiveFrom(field, *value, out);
  }

  /// A required positive integer that may also be spelled `alias` (transformers' attribute_map).
  bool requirePositive(StringRef field, StringRef alias, int64_t &out) {
    const json::Value *value = find(field), *aliased = find(alias);
    if (!value && !aliased)
      return fail("missing field '" + field + "' (or its alias '" + alias + "'), which model_type '" +
                  modelType + "' requires; add it as a positive integer");
    if (value && aliased) {
      int64_t a, b;
      if (!positiveFrom(field, *value, a) || !positiveFrom(alias, *aliased, b))
        return false;
      if (a != b)
        return fail("'" + field + "' (" + Twine(a) + ") and its alias '" + alias + "' (" + Twine(b) +
                    ") disagree; keep one of them");
      out = a;
      return true;
    }
    return value ? positiveFrom(field, *value, out) : positiveFrom(alias, *aliased, out);
  }

  /// An optional positive integer; `out` is left alone when the field is absent or null.
  bool optionalPositive(StringRef field, std::optional<int64_t> &out) {
    const json::Value *value = find(field);
    if (!value)
      return true;
    int64_t v;
    if (!positiveFrom(field, *value, v))
      return false;
    out = v;
    return true;
  }

  /// An optional integer of any sign.
  bool optionalInteger(StringRef field, std::optional<int64_t> &out) {
    const json::Value *value = find(field);
    if (!value)
      return true;
    std::optional<int64_t> v = value->getAsInteger();
    if (!v)
      return fail("'" + field + "' must be an integer or null, but it is " + describe(*value) +
                  "; fix or remove it");
    out = *v;
    return true;
  }

  /// An optional positive number, finite and normal as an f32 (the samples' precision): a
  /// subnormal initializer_range would make stds derived from it (GPT-2's std / sqrt(2 n_layer))
  /// 0 in f32.
  bool optionalPositiveNumber(StringRef field, double &out) {
    const json::Value *value = find(field);
    return !value || positiveNumberFrom(field, *value, out);
  }

  /// `value` (of `field`, as the messages name it) as a positive number that f32 holds.
  bool positiveNumberFrom(StringRef field, const json::Value &value, double &out) {
    std::optional<double> v = value.getAsNumber();
    if (!v || !std::isfinite(*v) || !(*v > 0))
      return fail("'" + field + "' must be a positive number, but it is " + describe(value) +
                  "; fix or remove it");
    if (!std::isfinite((float)*v) || !((float)*v >= FLT_MIN))
      return fail("'" + field + "' is " + describe(value) + ", which is " +
                  (std::isfinite((float)*v) ? ((float)*v > 0 ? "subnormal" : "0") : "infinite") +
                  " in f32, the precision initc computes in; use a value from 1.2e-38 to 3.4e38");
    out = *v;
    return true;
  }

  /// An optional boolean.
  bool optionalBool(StringRef field, bool &out) {
    const json::Value *value = find(field);
    if (!value)
      return true;
    std::optional<bool> v = value->getAsBoolean();
    if (!v)
      return fail("'" + field + "' must be true or false, but it is " + describe(*value));
    out = *v;
    return true;
  }

  /// An optional list of layer numbers, each in [0, layers) (qwen3_moe's mlp_only_layers).
  bool optionalLayerList(StringRef field, int64_t layers, std::vector<bool> &listed) {
    listed.assign(size_t(layers), false);
    const json::Value *value = find(field);
    if (!value)
      return true;
    const json::Array *array = value->getAsArray();
    if (!array)
      return fail("'" + field + "' must be a list of layer numbers, but it is " +
                  describe(*value));
    for (const json::Value &entry : *array) {
      std::optional<int64_t> layer = entry.getAsInteger();
      if (!layer || *layer < 0 || *layer >= layers)
        return fail("'" + field + "' lists " + describe(entry) + ", which is not a layer: the " +
                    "model has layers 0.." + Twine(layers - 1) + " ('num_hidden_layers')");
      listed[size_t(*layer)] = true;
    }
    return true;
  }

  /// `a * b` into `out`, or a message naming `what` when the product passes 2^40.
  bool product(int64_t a, int64_t b, const Twine &what, int64_t &out) {
    if (llvm::MulOverflow(a, b, out) || out > kMaxTensorElements)
      return fail(what + " (" + Twine(a) + " x " + Twine(b) + ") is more than 2^40; check the "
                  "values");
    return true;
  }

  StringRef getFileName() const { return fileName; }

private:
  bool positiveFrom(StringRef field, const json::Value &value, int64_t &out) {
    // getAsInteger also accepts whole numbers written as floats (4096.0).
    std::optional<int64_t> v = value.getAsInteger();
    if (!v || *v <= 0)
      return fail("'" + field + "' must be a positive integer, but it is " + describe(value) +
                  "; write it as a whole number such as 4096");
    // Bounding every size keeps the products of a few of them (3 * n_embd, ...) within int64.
    if (*v > kMaxTensorElements)
      return fail("'" + field + "' is " + Twine(*v) + ", more than 2^40; check the value");
    out = *v;
    return true;
  }

  const json::Object &object;
  StringRef fileName;
  StringRef modelType;
  std::string &error;
};

/// DeepSeek's multi-head latent attention: low-rank q and kv projections.
struct LatentAttention {
  std::optional<int64_t> qLoraRank; // null: one q_proj instead of q_a_proj / q_b_proj
  int64_t kvLoraRank = 0, ropeDim = 0, nopeDim = 0, vDim = 0;
  int64_t qOut = 0, kvOut = 0, oIn = 0; // heads x (nope + rope), x (nope + v), x v
};

/// The sizes and switches of a llama-family config (llama, mistral, qwen2, and the MoE models
/// mixtral, qwen3_moe, deepseek_v3).
struct LlamaConfig {
  int64_t vocab = 0, hidden = 0, intermediate = 0, layers = 0, heads = 0, kvHeads = 0, headDim = 0;
  int64_t qDim = 0, kvDim = 0; // heads * headDim, kvHeads * headDim
  // Mixture of experts: which layers hold a sparse block in place of the dense MLP, with
  // `experts` stacked experts of intermediate size `expertIntermediate` each.
  int64_t experts = 0, expertIntermediate = 0;
  std::vector<bool> sparseLayers;
  StringRef expertsField, expertSizeField; // the config fields of the two, for messages
  int64_t sharedIntermediate = 0; // deepseek's shared experts as one MLP (0: none)
  bool routerFirst = true;        // mixtral registers the router before the experts
  bool routerFloat32 = false;     // deepseek keeps the router in f32 whatever the dtype
  bool routerBias = false;        // deepseek's e_score_correction_bias buffer
  bool qkNorm = false;            // qwen3's RMSNorm of each head of q and k
  std::optional<LatentAttention> latent;
  double initializerRange = 0.02, ropeTheta = 10000.0;
  bool tieEmbeddings = false;
  bool qkvBias = false, oBias = false, mlpBias = false;
  std::optional<int64_t> paddingRow; // already wrapped into [0, vocab)
  bool emitInvFreq = true;
};

/// The sizes and switches of a gpt2 config.
struct GPT2Config {
  int64_t vocab = 0, embed = 0, layers = 0, heads = 0, positions = 0, inner = 0;
  double initializerRange = 0.02;
  bool tieEmbeddings = true;
};

bool checkLayers(ConfigFields &fields, StringRef field, int64_t layers) {
  if (layers > kMaxLayers)
    return fields.fail("'" + field + "' is " + Twine(layers) + "; initc imports at most " +
                       Twine(kMaxLayers) + " layers: check the value");
  return true;
}

/// Follows torch.nn.Embedding: padding_idx in [-num_embeddings, num_embeddings), negative values
/// counting from the end.
bool readPaddingRow(ConfigFields &fields, int64_t vocab, std::optional<int64_t> &row) {
  std::optional<int64_t> pad;
  if (!fields.optionalInteger("pad_token_id", pad))
    return false;
  if (!pad)
    return true;
  if (*pad >= vocab || *pad < -vocab)
    return fields.fail("'pad_token_id' is " + Twine(*pad) + " but 'vocab_size' is " +
                       Twine(vocab) +
                       "; torch.nn.Embedding needs a padding row in [-vocab_size, vocab_size): "
                       "fix it, or set it to null for no padding row");
  row = *pad < 0 ? vocab + *pad : *pad;
  return true;
}

bool readRopeScaling(ConfigFields &fields, LlamaConfig &c);

bool readLlamaConfig(ConfigFields &fields, StringRef modelType, LlamaConfig &c) {
  if (!fields.requirePositive("vocab_size", c.vocab) ||
      !fields.requirePositive("hidden_size", c.hidden) ||
      !fields.requirePositive("intermediate_size", c.intermediate) ||
      !fields.requirePositive("num_hidden_layers", c.layers) ||
      !fields.requirePositive("num_attention_heads", c.heads))
    return false;
  if (!checkLayers(fields, "num_hidden_layers", c.layers))
    return false;
  if (modelType == "mixtral") {
    if (!fields.requirePositive("num_local_experts", c.experts))
      return false;
    c.expertIntermediate = c.intermediate;
    c.expertsField = "num_local_experts", c.expertSizeField = "intermediate_size";
    c.sparseLayers.assign(size_t(c.layers), true);
    c.ropeTheta = 1000000.0; // MixtralConfig.default_theta
  } else if (modelType == "qwen3_moe") {
    // Qwen3MoeDecoderLayer: a sparse block unless the layer is in mlp_only_layers or not a
    // multiple of decoder_sparse_step (counting from 1); those keep a dense MLP.
    std::optional<int64_t> step;
    std::vector<bool> mlpOnly;
    if (!fields.requirePositive("num_experts", "num_local_experts", c.experts) ||
        !fields.requirePositive("moe_intermediate_size", c.expertIntermediate) ||
        !fields.optionalPositive("decoder_sparse_step", step) ||
        !fields.optionalLayerList("mlp_only_layers", c.layers, mlpOnly))
      return false;
    for (int64_t i = 0; i < c.layers; ++i)
      c.sparseLayers.push_back(!mlpOnly[size_t(i)] && (i + 1) % step.value_or(1) == 0);
    c.expertsField = "num_experts", c.expertSizeField = "moe_intermediate_size";
    c.routerFirst = false;
    c.qkNorm = true;
  }

  std::optional<int64_t> kvHeads, headDim;
  if (!fields.optionalPositive("num_key_value_heads", kvHeads) ||
      !fields.optionalPositive("head_dim", headDim))
    return false;
  // Qwen3MoeConfig defaults it to 4, not to num_attention_heads: a size left out would give a
  // model of another size without a word.
  if (!kvHeads && modelType == "qwen3_moe")
    return fields.fail("missing field 'num_key_value_heads', which model_type 'qwen3_moe' "
                       "requires; add it as a positive integer");
  c.kvHeads = kvHeads.value_or(c.heads);
  if (c.heads % c.kvHeads != 0)
    return fields.fail("'num_attention_heads' (" + Twine(c.heads) +
                       ") is not a multiple of 'num_key_value_heads' (" + Twine(c.kvHeads) +
                       "); grouped-query attention needs whole groups: fix one of them");
  if (headDim) {
    c.headDim = *headDim;
  } else {
    // LlamaConfig refuses such a config; the others (MistralConfig, Qwen2Config, MixtralConfig,
    // Qwen3MoeConfig) floor the quotient, so their q_proj has fewer rows than hidden_size.
    if (modelType == "llama" && c.hidden % c.heads != 0)
      return fields.fail("'hidden_size' (" + Twine(c.hidden) +
                         ") is not divisible by 'num_attention_heads' (" + Twine(c.heads) +
                         "); fix one of them, or give 'head_dim' explicitly");
    c.headDim = c.hidden / c.heads;
    if (c.headDim == 0)
      return fields.fail("'hidden_size' (" + Twine(c.hidden) +
                         ") is smaller than 'num_attention_heads' (" + Twine(c.heads) +
                         "), so a head would have no dimensions: fix one of them, or give "
                         "'head_dim' explicitly");
  }
  if (c.headDim % 2 != 0)
    return fields.fail("the head dimension is " + Twine(c.headDim) +
                       (headDim ? " ('head_dim')" : " ('hidden_size' / 'num_attention_heads')") +
                       ", but rotary embeddings need an even one: fix the sizes");
  if (llvm::MulOverflow(c.heads, c.headDim, c.qDim) || c.qDim > kMaxTensorElements)
    return fields.fail("'num_attention_heads' (" + Twine(c.heads) + ") times the head dimension (" +
                       Twine(c.headDim) + ") is more than 2^40; check the values");
  c.kvDim = c.kvHeads * c.headDim; // kvHeads <= heads

  if (!fields.optionalPositiveNumber("initializer_range", c.initializerRange) ||
      !fields.optionalPositiveNumber("rope_theta", c.ropeTheta) ||
      !fields.optionalBool("tie_word_embeddings", c.tieEmbeddings))
    return false;

  // Which projections have biases: qwen2 hard-codes q/k/v biases; llama reads its switches;
  // mistral has neither (transformers ignores the switches there, and so do we).
  if (modelType == "qwen2") {
    c.qkvBias = true;
  } else if (modelType == "llama" || modelType == "qwen3_moe") {
    bool attentionBias = false;
    if (!fields.optionalBool("attention_bias", attentionBias) ||
        (modelType == "llama" && !fields.optionalBool("mlp_bias", c.mlpBias)))
      return false;
    c.qkvBias = c.oBias = attentionBias;
  }

  return readPaddingRow(fields, c.vocab, c.paddingRow) && readRopeScaling(fields, c);
}

bool readRopeScaling(ConfigFields &fields, LlamaConfig &c) {
  // The RoPE fields as transformers 5 reads them (PreTrainedConfig.convert_rope_params_to_dict):
  // a non-empty `rope_scaling` object, else `rope_parameters`, is the one dict; its `rope_theta`
  // wins over the top-level one. rope types other than default/dynamic rescale inv_freq at
  // construction; the buffer is non-persistent (in no checkpoint), so it is left out rather
  // than emitted wrong.
  const json::Value *scaling = fields.find("rope_scaling");
  StringRef field = "rope_scaling";
  if (scaling && scaling->getAsObject() && scaling->getAsObject()->empty())
    scaling = nullptr;
  if (!scaling) {
    scaling = fields.find("rope_parameters");
    field = "rope_parameters";
  }
  if (!scaling)
    return true;
  const json::Object *object = scaling->getAsObject();
  if (!object)
    return fields.fail("'" + field + "' must be an object or null, but it is " +
                       describe(*scaling));
  for (const auto &[key, value] : *object)
    if (value.getAsObject())
      return fields.fail("'" + field + "." + key.str() + "' is an object, but the models " +
                         "initc imports have one RoPE for every layer: give one flat object " +
                         "such as {\"rope_type\": \"default\", \"rope_theta\": 10000.0}");
  if (const json::Value *theta = object->get("rope_theta");
      theta && theta->kind() != json::Value::Null &&
      !fields.positiveNumberFrom((field + ".rope_theta").str(), *theta, c.ropeTheta))
    return false;
  std::optional<StringRef> type;
  for (StringRef key : {"rope_type", "type"}) {
    const json::Value *entry = object->get(key);
    if (!entry || entry->kind() == json::Value::Null || type)
      continue;
    type = entry->getAsString();
    if (!type)
      return fields.fail("'" + field + "." + key.str() + "' must be a string such as " +
                         "\"default\" or \"linear\", but it is " + describe(*entry));
  }
  c.emitInvFreq = !type || *type == "default" || *type == "dynamic";
  return true;
}

/// DeepseekV3Config: MLA attention, the first `first_k_dense_replace` layers dense and the others
/// a sparse block with routed and shared experts.
bool readDeepseekConfig(ConfigFields &fields, LlamaConfig &c) {
  LatentAttention a;
  std::optional<int64_t> qLoraRank, shared, denseLayers;
  if (!fields.requirePositive("vocab_size", c.vocab) ||
      !fields.requirePositive("hidden_size", c.hidden) ||
      !fields.requirePositive("intermediate_size", c.intermediate) ||
      !fields.requirePositive("moe_intermediate_size", c.expertIntermediate) ||
      !fields.requirePositive("num_hidden_layers", c.layers) ||
      !fields.requirePositive("num_attention_heads", c.heads) ||
      !fields.requirePositive("n_routed_experts", "num_local_experts", c.experts) ||
      !fields.requirePositive("kv_lora_rank", a.kvLoraRank) ||
      !fields.requirePositive("qk_rope_head_dim", a.ropeDim) ||
      !fields.requirePositive("qk_nope_head_dim", a.nopeDim) ||
      !fields.requirePositive("v_head_dim", a.vDim) ||
      !fields.optionalPositive("q_lora_rank", qLoraRank) ||
      !fields.optionalPositive("n_shared_experts", shared) ||
      !fields.optionalInteger("first_k_dense_replace", denseLayers))
    return false;
  if (!checkLayers(fields, "num_hidden_layers", c.layers))
    return false;
  if (a.ropeDim % 2 != 0)
    return fields.fail("'qk_rope_head_dim' is " + Twine(a.ropeDim) +
                       ", but rotary embeddings need an even one: fix it");
  if (denseLayers && *denseLayers < 0)
    return fields.fail("'first_k_dense_replace' is " + Twine(*denseLayers) +
                       "; it counts the leading dense layers, so it must be 0 or more");
  a.qLoraRank = qLoraRank;
  if (!fields.product(c.heads, a.nopeDim + a.ropeDim,
                      "'num_attention_heads' times the q head dimension", a.qOut) ||
      !fields.product(c.heads, a.nopeDim + a.vDim,
                      "'num_attention_heads' times the k and v head dimensions", a.kvOut) ||
      !fields.product(c.heads, a.vDim, "'num_attention_heads' times 'v_head_dim'", a.oIn) ||
      !fields.product(c.expertIntermediate, shared.value_or(1),
                      "'moe_intermediate_size' times 'n_shared_experts'", c.sharedIntermediate))
    return false;
  c.latent = a;
  // Transformers' defaults: 3 dense layers, 1 shared expert.
  for (int64_t i = 0; i < c.layers; ++i)
    c.sparseLayers.push_back(i >= denseLayers.value_or(3));
  c.expertsField = "n_routed_experts", c.expertSizeField = "moe_intermediate_size";
  c.routerFirst = false;
  c.routerFloat32 = c.routerBias = true;
  c.headDim = a.ropeDim; // the rotary part of each head (DeepseekV3Config.head_dim)
  bool attentionBias = false;
  if (!fields.optionalPositiveNumber("initializer_range", c.initializerRange) ||
      !fields.optionalPositiveNumber("rope_theta", c.ropeTheta) ||
      !fields.optionalBool("tie_word_embeddings", c.tieEmbeddings) ||
      !fields.optionalBool("attention_bias", attentionBias))
    return false;
  c.qkvBias = c.oBias = attentionBias;
  return readPaddingRow(fields, c.vocab, c.paddingRow) && readRopeScaling(fields, c);
}

bool readGPT2Config(ConfigFields &fields, GPT2Config &c) {
  if (!fields.requirePositive("vocab_size", c.vocab) ||
      !fields.requirePositive("n_embd", "hidden_size", c.embed) ||
      !fields.requirePositive("n_layer", "num_hidden_layers", c.layers) ||
      !fields.requirePositive("n_head", "num_attention_heads", c.heads) ||
      !fields.requirePositive("n_positions", "max_position_embeddings", c.positions))
    return false;
  if (!checkLayers(fields, "n_layer", c.layers))
    return false;
  if (c.embed % c.heads != 0)
    return fields.fail("'n_embd' (" + Twine(c.embed) + ") is not divisible by 'n_head' (" +
                       Twine(c.heads) + "); fix one of them");
  std::optional<int64_t> inner;
  if (!fields.optionalPositive("n_inner", inner))
    return false;
  c.inner = inner.value_or(4 * c.embed);
  bool crossAttention = false;
  if (!fields.optionalPositiveNumber("initializer_range", c.initializerRange) ||
      !fields.optionalBool("tie_word_embeddings", c.tieEmbeddings) ||
      !fields.optionalBool("add_cross_attention", crossAttention))
    return false;
  if (crossAttention)
    return fields.fail("'add_cross_attention' is true, which initc does not import (the "
                       "encoder-decoder variant of GPT-2); set it to false");
  return true;
}

//===----------------------------------------------------------------------===//
// Recipes: the ops of one parameter body
//===----------------------------------------------------------------------===//

using Recipe = llvm::function_ref<Value(OpBuilder &, Location, RankedTensorType)>;

Value normal(OpBuilder &b, Location loc, RankedTensorType type, double std) {
  return b.create<init::NormalOp>(loc, type, b.getF64FloatAttr(0.0), b.getF64FloatAttr(std),
                                  b.getI64IntegerAttr(0));
}

Value uniform(OpBuilder &b, Location loc, RankedTensorType type, double bound) {
  return b.create<init::UniformOp>(loc, type, b.getF64FloatAttr(-bound), b.getF64FloatAttr(bound),
                                   b.getI64IntegerAttr(0));
}

Value fill(OpBuilder &b, Location loc, RankedTensorType type, double value) {
  return b.create<init::FillOp>(loc, type, b.getF64FloatAttr(value));
}

/// nn.Linear's default weight: kaiming_uniform_(a=sqrt(5)) = U(+-1/sqrt(fan_in)).
Value linearDefault(OpBuilder &b, Location loc, RankedTensorType type) {
  return b.create<init::VarianceScalingOp>(loc, type, llvm::APFloat(1.0 / 3.0),
                                           init::FanMode::fan_in, init::Distribution::uniform,
                                           /*stream=*/0);
}

/// `value` with row `row` of dim 0 set to zero (nn.Embedding's padding_idx).
Value zeroRow(OpBuilder &b, Location loc, Value value, int64_t row) {
  auto type = cast<RankedTensorType>(value.getType());
  auto maskType = RankedTensorType::get(type.getShape(), b.getI1Type());
  Value mask = b.create<init::IndexMaskOp>(loc, maskType, b.getI64IntegerAttr(0),
                                           b.getI64IntegerAttr(row));
  return b.create<init::SelectOp>(loc, type, mask, fill(b, loc, type, 0.0), value);
}

//===----------------------------------------------------------------------===//
// StateDict: appends one init.param per tensor, in state-dict order
//===----------------------------------------------------------------------===//

class StateDict {
public:
  StateDict(ModuleOp module, StringRef fileName, std::string &error)
      : module(module), builder(OpBuilder::atBlockEnd(module.getBody())), fileName(fileName),
        error(error) {}

  MLIRContext *getContext() { return module.getContext(); }

  /// A parameter (or buffer) whose body is built by `recipe`. `fields` names the config fields
  /// the shape comes from, for the size error.
  bool param(const Twine &name, ArrayRef<int64_t> shape, ArrayRef<StringRef> axes, Type element,
             StringRef fields, Recipe recipe, bool buffer = false, bool persistent = true) {
    init::ParamOp op = declare(name, shape, axes, element, fields);
    if (!op)
      return false;
    if (buffer)
      op.setBuffer(true);
    if (!persistent)
      op.setNonpersistent(true);
    Block *body = new Block();
    op.getBody().push_back(body);
    OpBuilder inner = OpBuilder::atBlockEnd(body);
    Value value = recipe(inner, op.getLoc(), op.getTensorType());
    inner.create<init::YieldOp>(op.getLoc(), value);
    return true;
  }

  /// A parameter that is the same tensor as `target` (tie_word_embeddings).
  bool tied(const Twine &name, ArrayRef<int64_t> shape, ArrayRef<StringRef> axes, Type element,
            StringRef fields, StringRef target) {
    init::ParamOp op = declare(name, shape, axes, element, fields);
    if (!op)
      return false;
    op.setTiedToAttr(FlatSymbolRefAttr::get(getContext(), target));
    return true;
  }

private:
  init::ParamOp declare(const Twine &name, ArrayRef<int64_t> shape, ArrayRef<StringRef> axes,
                        Type element, StringRef fields) {
    std::string nameStr = name.str();
    // Checked multiplication: the product of config values may overflow int64.
    int64_t elements = 1;
    for (int64_t dim : shape) {
      if (dim > kMaxTensorElements || elements > kMaxTensorElements / dim) {
        std::string dims;
        llvm::raw_string_ostream os(dims);
        llvm::interleave(shape, os, "x");
        os.flush();
        error = (fileName + ": tensor '" + nameStr + "' would have shape " + dims +
                 ", more than 2^40 elements; check " + fields)
                    .str();
        return {};
      }
      elements *= dim;
    }
    MLIRContext *ctx = getContext();
    Location loc = NameLoc::get(StringAttr::get(ctx, nameStr),
                                FileLineColLoc::get(ctx, fileName, 1, 1));
    SmallVector<Attribute> axisAttrs;
    for (StringRef axis : axes)
      axisAttrs.push_back(StringAttr::get(ctx, axis));
    auto type = RankedTensorType::get(shape, element);
    return builder.create<init::ParamOp>(loc, nameStr, type, builder.getArrayAttr(axisAttrs),
                                         /*sharding=*/nullptr, /*tied_to=*/nullptr,
                                         /*kernel=*/nullptr);
  }

  ModuleOp module;
  OpBuilder builder;
  StringRef fileName;
  std::string &error;
};

/// The init recipes of one style for the module kinds the importers use.
struct InitStyle {
  bool hf;
  double initializerRange;

  /// nn.Linear / Conv1D-less weight [out, in].
  Value linearWeight(OpBuilder &b, Location loc, RankedTensorType t) const {
    return hf ? normal(b, loc, t, initializerRange) : linearDefault(b, loc, t);
  }
  /// nn.Linear bias; `fanIn` is in_features.
  Value linearBias(OpBuilder &b, Location loc, RankedTensorType t, int64_t fanIn) const {
    return hf ? fill(b, loc, t, 0.0) : uniform(b, loc, t, 1.0 / std::sqrt((double)fanIn));
  }
  /// nn.Embedding weight with an optional padding row.
  Value embedding(OpBuilder &b, Location loc, RankedTensorType t,
                  std::optional<int64_t> paddingRow) const {
    Value v = normal(b, loc, t, hf ? initializerRange : 1.0);
    return paddingRow ? zeroRow(b, loc, v, *paddingRow) : v;
  }
  /// transformers' Conv1D weight; `hfStd` is the std _init_weights gives it.
  Value conv1dWeight(OpBuilder &b, Location loc, RankedTensorType t, double hfStd) const {
    return normal(b, loc, t, hf ? hfStd : 0.02); // Conv1D's constructor: normal_(std=0.02)
  }
};

//===----------------------------------------------------------------------===//
// Families
//===----------------------------------------------------------------------===//

bool buildLlama(StateDict &sd, const LlamaConfig &c, const InitStyle &style, Type w) {
  const int64_t V = c.vocab, H = c.hidden, I = c.intermediate;
  const int64_t qDim = c.qDim, kvDim = c.kvDim;
  auto ones = [](OpBuilder &b, Location loc, RankedTensorType t) { return fill(b, loc, t, 1.0); };
  auto weight = [&](OpBuilder &b, Location loc, RankedTensorType t) {
    return style.linearWeight(b, loc, t);
  };

  // One nn.Linear(in, out): weight [out, in], optional bias [out].
  auto linear = [&](const std::string &name, int64_t out, int64_t in, StringRef outAxis,
                    StringRef inAxis, bool bias, StringRef fields) {
    if (!sd.param(name + ".weight", {out, in}, {outAxis, inAxis}, w, fields, weight))
      return false;
    if (!bias)
      return true;
    return sd.param(name + ".bias", {out}, {outAxis}, w, fields,
                    [&](OpBuilder &b, Location loc, RankedTensorType t) {
                      return style.linearBias(b, loc, t, in);
                    });
  };

  if (!sd.param("model.embed_tokens.weight", {V, H}, {"vocab", "embed"}, w,
                "vocab_size and hidden_size", [&](OpBuilder &b, Location loc, RankedTensorType t) {
                  return style.embedding(b, loc, t, c.paddingRow);
                }))
    return false;

  const char *qFields = "num_attention_heads, head_dim and hidden_size";
  const char *kvFields = "num_key_value_heads, head_dim and hidden_size";
  auto attention = [&](const std::string &p) {
    if (!c.latent)
      return linear(p + "self_attn.q_proj", qDim, H, "heads", "embed", c.qkvBias, qFields) &&
             linear(p + "self_attn.k_proj", kvDim, H, "kv_heads", "embed", c.qkvBias, kvFields) &&
             linear(p + "self_attn.v_proj", kvDim, H, "kv_heads", "embed", c.qkvBias, kvFields) &&
             linear(p + "self_attn.o_proj", H, qDim, "embed", "heads", c.oBias, qFields) &&
             (!c.qkNorm ||
              (sd.param(p + "self_attn.q_norm.weight", {c.headDim}, {"head_dim"}, w, "head_dim",
                        ones) &&
               sd.param(p + "self_attn.k_norm.weight", {c.headDim}, {"head_dim"}, w, "head_dim",
                        ones)));
    // MLA: the low-rank projections keep their rank dims whole (q_lora, kv_lora); the
    // per-head ones split over heads as q/o do, column- then row-parallel.
    const LatentAttention &a = *c.latent;
    const char *rankFields = "kv_lora_rank, qk_rope_head_dim and hidden_size";
    const char *headFields = "num_attention_heads, qk_nope_head_dim, qk_rope_head_dim, v_head_dim";
    bool q = a.qLoraRank
                 ? linear(p + "self_attn.q_a_proj", *a.qLoraRank, H, "q_lora", "embed",
                          c.qkvBias, "q_lora_rank and hidden_size") &&
                       sd.param(p + "self_attn.q_a_layernorm.weight", {*a.qLoraRank},
                                {"q_lora"}, w, "q_lora_rank", ones) &&
                       linear(p + "self_attn.q_b_proj", a.qOut, *a.qLoraRank, "heads", "q_lora",
                              false, headFields)
                 : linear(p + "self_attn.q_proj", a.qOut, H, "heads", "embed", false, headFields);
    return q &&
           linear(p + "self_attn.kv_a_proj_with_mqa", a.kvLoraRank + a.ropeDim, H,
                  "kv_lora_rope", "embed", c.qkvBias, rankFields) &&
           sd.param(p + "self_attn.kv_a_layernorm.weight", {a.kvLoraRank}, {"kv_lora"}, w,
                    "kv_lora_rank", ones) &&
           linear(p + "self_attn.kv_b_proj", a.kvOut, a.kvLoraRank, "heads", "kv_lora", false,
                  headFields) &&
           linear(p + "self_attn.o_proj", H, a.oIn, "embed", "heads", c.oBias, headFields);
  };

  const char *mlpFields = "intermediate_size and hidden_size";
  auto denseMlp = [&](const std::string &p, int64_t size, const char *fields) {
    return linear(p + "gate_proj", size, H, "mlp", "embed", c.mlpBias, fields) &&
           linear(p + "up_proj", size, H, "mlp", "embed", c.mlpBias, fields) &&
           linear(p + "down_proj", H, size, "embed", "mlp", c.mlpBias, fields);
  };
  // A sparse MoE block as transformers 5 stores it: the experts stacked along dim 0, gate and
  // up projections fused, and a router (nn.Linear-like [E, H], no bias), all
  // normal(0, initializer_range) (the *PreTrainedModel._init_weights of each family).
  auto sparseMlp = [&](const std::string &p) {
    const int64_t E = c.experts, X = c.expertIntermediate;
    std::string expertFields =
        (c.expertsField + ", " + c.expertSizeField + " and hidden_size").str();
    std::string routerFields = (c.expertsField + " and hidden_size").str();
    // The router is replicated by the expert axis (each rank routes every token); the experts'
    // own dims are `expert_mlp`, which tensor parallelism leaves whole (torchtitan's default
    // expert_tensor_parallel_degree of 1).
    Type routerType = c.routerFloat32 ? Type(Float32Type::get(sd.getContext())) : w;
    auto router = [&] {
      return sd.param(p + "mlp.gate.weight", {E, H}, {"router", "embed"}, routerType,
                      routerFields, weight) &&
             (!c.routerBias ||
              sd.param(p + "mlp.gate.e_score_correction_bias", {E}, {"router"}, routerType,
                       c.expertsField,
                       [](OpBuilder &b, Location loc, RankedTensorType t) {
                         return fill(b, loc, t, 0.0);
                       },
                       /*buffer=*/true));
    };
    auto experts = [&] {
      return sd.param(p + "mlp.experts.gate_up_proj", {E, 2 * X, H},
                      {"experts", "expert_mlp", "embed"}, w, expertFields, weight) &&
             sd.param(p + "mlp.experts.down_proj", {E, H, X}, {"experts", "embed", "expert_mlp"},
                      w, expertFields, weight);
    };
    // Shared experts run on every token like a dense MLP, and split over tp as one.
    return (c.routerFirst ? router() && experts() : experts() && router()) &&
           (c.sharedIntermediate == 0 ||
            denseMlp(p + "mlp.shared_experts.", c.sharedIntermediate,
                     "moe_intermediate_size, n_shared_experts and hidden_size"));
  };
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    bool sparse = !c.sparseLayers.empty() && c.sparseLayers[size_t(i)];
    if (!attention(p) || !(sparse ? sparseMlp(p) : denseMlp(p + "mlp.", I, mlpFields)) ||
        !sd.param(p + "input_layernorm.weight", {H}, {"embed"}, w, "hidden_size", ones) ||
        !sd.param(p + "post_attention_layernorm.weight", {H}, {"embed"}, w, "hidden_size", ones))
      return false;
  }
  if (!sd.param("model.norm.weight", {H}, {"embed"}, w, "hidden_size", ones))
    return false;

  if (c.emitInvFreq) {
    Type f32 = Float32Type::get(sd.getContext());
    if (!sd.param("model.rotary_emb.inv_freq", {c.headDim / 2}, {"head_dim"}, f32, "head_dim",
                  [&](OpBuilder &b, Location loc, RankedTensorType t) -> Value {
                    return b.create<init::RopeInvFreqOp>(loc, t, b.getF64FloatAttr(c.ropeTheta),
                                                         b.getI64IntegerAttr(c.headDim));
                  },
                  /*buffer=*/true, /*persistent=*/false))
      return false;
  }

  if (c.tieEmbeddings)
    return sd.tied("lm_head.weight", {V, H}, {"vocab", "embed"}, w, "vocab_size and hidden_size",
                   "model.embed_tokens.weight");
  return sd.param("lm_head.weight", {V, H}, {"vocab", "embed"}, w, "vocab_size and hidden_size",
                  weight);
}

bool buildGPT2(StateDict &sd, const GPT2Config &c, const InitStyle &style, Type w) {
  const int64_t V = c.vocab, E = c.embed, P = c.positions, N = c.inner;
  auto zeros = [](OpBuilder &b, Location loc, RankedTensorType t) { return fill(b, loc, t, 0.0); };
  auto ones = [](OpBuilder &b, Location loc, RankedTensorType t) { return fill(b, loc, t, 1.0); };
  auto embedding = [&](OpBuilder &b, Location loc, RankedTensorType t) {
    return style.embedding(b, loc, t, std::nullopt); // GPT-2's wte has no padding_idx
  };
  // GPT-2 paper scheme: c_proj weights get std / sqrt(2 * n_layer) (two residual adds per block).
  const double projStd = c.initializerRange / std::sqrt(2.0 * (double)c.layers);
  auto conv1d = [&](const std::string &name, int64_t in, int64_t out, StringRef inAxis,
                    StringRef outAxis, StringRef biasAxis, double hfStd, StringRef fields) {
    return sd.param(name + ".weight", {in, out}, {inAxis, outAxis}, w, fields,
                    [&](OpBuilder &b, Location loc, RankedTensorType t) {
                      return style.conv1dWeight(b, loc, t, hfStd);
                    }) &&
           sd.param(name + ".bias", {out}, {biasAxis}, w, fields, zeros);
  };
  auto layerNorm = [&](const std::string &name) {
    return sd.param(name + ".weight", {E}, {"embed"}, w, "n_embd", ones) &&
           sd.param(name + ".bias", {E}, {"embed"}, w, "n_embd", zeros);
  };

  if (!sd.param("transformer.wte.weight", {V, E}, {"vocab", "embed"}, w,
                "vocab_size and n_embd", embedding) ||
      !sd.param("transformer.wpe.weight", {P, E}, {"positions", "embed"}, w,
                "n_positions and n_embd", embedding))
    return false;

  Type i1 = IntegerType::get(sd.getContext(), 1);
  Type f32 = Float32Type::get(sd.getContext());
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "transformer.h." + std::to_string(i) + ".";
    if (!layerNorm(p + "ln_1") ||
        !sd.param(p + "attn.bias", {1, 1, P, P},
                  {"mask_batch", "mask_heads", "mask_query", "mask_key"}, i1, "n_positions",
                  [](OpBuilder &b, Location loc, RankedTensorType t) -> Value {
                    return b.create<init::TrilOp>(loc, t, b.getI64IntegerAttr(0));
                  },
                  /*buffer=*/true, /*persistent=*/false) ||
        !sd.param(p + "attn.masked_bias", {}, {}, f32, "",
                  [](OpBuilder &b, Location loc, RankedTensorType t) {
                    return fill(b, loc, t, -1e4);
                  },
                  /*buffer=*/true, /*persistent=*/false) ||
        !conv1d(p + "attn.c_attn", E, 3 * E, "embed", "qkv", "qkv", c.initializerRange,
                "n_embd") ||
        !conv1d(p + "attn.c_proj", E, E, "heads", "embed", "embed", projStd, "n_embd") ||
        !layerNorm(p + "ln_2") ||
        !conv1d(p + "mlp.c_fc", E, N, "embed", "mlp", "mlp", c.initializerRange,
                "n_embd and n_inner") ||
        !conv1d(p + "mlp.c_proj", N, E, "mlp", "embed", "embed", projStd, "n_embd and n_inner"))
      return false;
  }
  if (!layerNorm("transformer.ln_f"))
    return false;

  if (c.tieEmbeddings)
    return sd.tied("lm_head.weight", {V, E}, {"vocab", "embed"}, w, "vocab_size and n_embd",
                   "transformer.wte.weight");
  return sd.param("lm_head.weight", {V, E}, {"vocab", "embed"}, w, "vocab_size and n_embd",
                  [&](OpBuilder &b, Location loc, RankedTensorType t) {
                    return style.linearWeight(b, loc, t);
                  });
}

std::optional<Type> parseDType(MLIRContext &ctx, StringRef dtype) {
  if (dtype == "f32")
    return Type(Float32Type::get(&ctx));
  if (dtype == "bf16")
    return Type(BFloat16Type::get(&ctx));
  if (dtype == "f16")
    return Type(Float16Type::get(&ctx));
  return std::nullopt;
}

} // namespace

ArrayRef<StringRef> initc::import::supportedModelTypes() { return kModelTypes; }

OwningOpRef<ModuleOp> initc::import::importHFConfigText(MLIRContext &ctx, StringRef text,
                                                        StringRef name,
                                                        const HFImportOptions &options,
                                                        std::string &error) {
  error.clear();
  if (options.initStyle != "hf" && options.initStyle != "torch") {
    error = "unknown init style '" + options.initStyle + "': use hf or torch";
    return nullptr;
  }
  std::optional<Type> weightType = parseDType(ctx, options.dtype);
  if (!weightType) {
    error = "unknown dtype '" + options.dtype + "': use f32, bf16 or f16";
    return nullptr;
  }

  if (unsigned line = lineNestedDeeperThan(text)) {
    error = (name + ":" + llvm::Twine(line) + ": JSON nested more than " +
             llvm::Twine(kMaxNesting) + " levels deep; pass the model's config.json")
                .str();
    return nullptr;
  }
  llvm::Expected<json::Value> parsed = json::parse(text);
  if (!parsed) {
    error = (name + ": not valid JSON (" + llvm::toString(parsed.takeError()) +
             "); pass the model's config.json")
                .str();
    return nullptr;
  }
  const json::Object *root = parsed->getAsObject();
  if (!root) {
    error = (name + ": the top level is " + describe(*parsed) +
             ", but a config.json holds one JSON object ({...})")
                .str();
    return nullptr;
  }

  // What program.json must carry of the config is checked here, where the user can fix it:
  // llvm::json keeps one of two equal keys silently and nests deeper than program.json may.
  {
    std::string canonical, why;
    if (!initrt::canonicalHfConfig(text.str(), canonical, why)) {
      error = (name + ": the config " + why).str();
      return nullptr;
    }
  }

  const json::Value *modelTypeValue = root->get("model_type");
  if (!modelTypeValue || modelTypeValue->kind() == json::Value::Null) {
    error = (name + ": missing field 'model_type'; set it to one of " + supportedList()).str();
    return nullptr;
  }
  std::optional<StringRef> modelType = modelTypeValue->getAsString();
  if (!modelType) {
    error = (name + ": 'model_type' must be a string, but it is " + describe(*modelTypeValue) +
             "; set it to one of " + supportedList())
                .str();
    return nullptr;
  }
  if (!llvm::is_contained(kModelTypes, *modelType)) {
    error = (name + ": model_type '" + *modelType + "' is not supported; supported: " +
             supportedList())
                .str();
    return nullptr;
  }

  ConfigFields fields(*root, name, *modelType, error);
  LlamaConfig llama;
  GPT2Config gpt2;
  bool isGPT2 = *modelType == "gpt2";
  if (isGPT2                       ? !readGPT2Config(fields, gpt2)
      : *modelType == "deepseek_v3" ? !readDeepseekConfig(fields, llama)
                                    : !readLlamaConfig(fields, *modelType, llama))
    return nullptr;
  if (llvm::is_contained(llama.sparseLayers, true) && options.initStyle == "torch") {
    error = (name + ": --init-style torch has no recipe for " + *modelType +
             "'s experts: transformers creates them with torch.empty and only _init_weights "
             "(--init-style hf) gives them values")
                .str();
    return nullptr;
  }

  ctx.getOrLoadDialect<init::InitDialect>();
  Location fileLoc = FileLineColLoc::get(&ctx, name, 1, 1);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr(kModelAttrName, StringAttr::get(&ctx, *modelType));
  // The text as given, not a re-serialization: the checkpoint's config.json is then the user's.
  (*module)->setAttr(init::InitDialect::kHfConfigAttr, StringAttr::get(&ctx, text));
  OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
  builder.create<init::SeedOp>(fileLoc, options.seed);

  StateDict sd(*module, name, error);
  InitStyle style{options.initStyle == "hf",
                  isGPT2 ? gpt2.initializerRange : llama.initializerRange};
  if (isGPT2 ? !buildGPT2(sd, gpt2, style, *weightType)
             : !buildLlama(sd, llama, style, *weightType))
    return nullptr;

  // The importer's output must verify; a failure here is a bug in the importer, not the config.
  std::string diagnostic;
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      if (diagnostic.empty())
        diagnostic = diag.str();
      return success();
    });
    if (failed(verify(*module)) || failed(init::verifyModel(*module))) {
      error = (name + ": internal error: the imported module is invalid (" + diagnostic +
               "); please report this with the config")
                  .str();
      return nullptr;
    }
  }
  return module;
}

OwningOpRef<ModuleOp> initc::import::importHFConfig(MLIRContext &ctx, StringRef path,
                                                    const HFImportOptions &options,
                                                    std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buffer) {
    error = ("cannot read config '" + path + "': " + buffer.getError().message() +
             "; pass the path of a config.json")
                .str();
    return nullptr;
  }
  return importHFConfigText(ctx, (*buffer)->getBuffer(), path, options, error);
}
