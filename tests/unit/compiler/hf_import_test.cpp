// `initc import hf`: names, shapes, axes, recipes per style, tying, parameter counts of real
// configs, and one clear message per bad config.
#include "initc/Import/HFConfig.h"

#include "initc/Dialect/Init/IR/InitOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

using namespace mlir;
using initc::import::HFImportOptions;
using initc::import::importHFConfig;
using initc::import::importHFConfigText;
namespace init = initc::init;

namespace {

// Small configs of each family, as transformers would write them.
constexpr const char *kLlamaTiny = R"json({
  "model_type": "llama", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "initializer_range": 0.02, "rope_theta": 10000.0, "pad_token_id": null,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16"
})json";

constexpr const char *kQwen2Tiny = R"json({
  "model_type": "qwen2", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
  "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
  "rope_theta": 1000000.0, "tie_word_embeddings": true
})json";

constexpr const char *kGPT2Tiny = R"json({
  "model_type": "gpt2", "vocab_size": 50, "n_embd": 16, "n_layer": 2, "n_head": 2,
  "n_positions": 8, "n_ctx": 8, "n_inner": null, "initializer_range": 0.02
})json";

struct Imported {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  std::string error;
  std::vector<init::ParamOp> params;
  std::map<std::string, init::ParamOp> byName;

  Imported(const std::string &text, const HFImportOptions &options = {}) {
    module = importHFConfigText(ctx, text, "config.json", options, error);
    if (!module)
      return;
    for (auto p : module->getOps<init::ParamOp>()) {
      params.push_back(p);
      byName[p.getSymName().str()] = p;
    }
  }

  init::ParamOp operator[](const std::string &name) {
    auto it = byName.find(name);
    return it == byName.end() ? init::ParamOp() : it->second;
  }

  std::vector<std::string> names() {
    std::vector<std::string> out;
    for (auto p : params)
      out.push_back(p.getSymName().str());
    return out;
  }
};

std::vector<int64_t> shapeOf(init::ParamOp p) {
  auto shape = p.getTensorType().getShape();
  return {shape.begin(), shape.end()};
}

std::vector<std::string> axesOf(init::ParamOp p) {
  std::vector<std::string> out;
  if (auto axes = p.getAxes())
    for (Attribute a : *axes)
      out.push_back(cast<StringAttr>(a).getValue().str());
  return out;
}

/// The op that produces the yielded value.
Operation *recipeOf(init::ParamOp p) {
  Value v = p.getYieldedValue();
  return v ? v.getDefiningOp() : nullptr;
}

/// Trainable parameters as transformers counts them: tied tensors once, buffers not at all.
int64_t countParameters(Imported &m) {
  int64_t total = 0;
  for (auto p : m.params)
    if (!p.getBuffer() && !p.getTiedTo())
      total += p.getTensorType().getNumElements();
  return total;
}

int64_t countBuffers(Imported &m, bool persistentOnly) {
  int64_t total = 0;
  for (auto p : m.params)
    if (p.getBuffer() && !(persistentOnly && p.getNonpersistent()))
      total += p.getTensorType().getNumElements();
  return total;
}

std::string errorOf(const std::string &text, const HFImportOptions &options = {}) {
  Imported m(text, options);
  EXPECT_FALSE(m.module) << "expected an error for: " << text;
  return m.error;
}

//===----------------------------------------------------------------------===//
// Names, shapes, axes
//===----------------------------------------------------------------------===//

TEST(HFImport, LlamaNamesShapesAxesInStateDictOrder) {
  Imported m(kLlamaTiny);
  ASSERT_TRUE(m.module) << m.error;
  std::vector<std::string> expected = {"model.embed_tokens.weight"};
  for (int i = 0; i < 2; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    for (const char *s : {"self_attn.q_proj.weight", "self_attn.k_proj.weight",
                          "self_attn.v_proj.weight", "self_attn.o_proj.weight",
                          "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
                          "input_layernorm.weight", "post_attention_layernorm.weight"})
      expected.push_back(p + s);
  }
  for (const char *s : {"model.norm.weight", "model.rotary_emb.inv_freq", "lm_head.weight"})
    expected.push_back(s);
  EXPECT_EQ(m.names(), expected);

  using Shape = std::vector<int64_t>;
  using Axes = std::vector<std::string>;
  EXPECT_EQ(shapeOf(m["model.embed_tokens.weight"]), (Shape{64, 32}));
  EXPECT_EQ(axesOf(m["model.embed_tokens.weight"]), (Axes{"vocab", "embed"}));
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.q_proj.weight"]), (Shape{32, 32}));
  EXPECT_EQ(axesOf(m["model.layers.0.self_attn.q_proj.weight"]), (Axes{"heads", "embed"}));
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.k_proj.weight"]), (Shape{16, 32}));
  EXPECT_EQ(axesOf(m["model.layers.0.self_attn.k_proj.weight"]), (Axes{"kv_heads", "embed"}));
  EXPECT_EQ(shapeOf(m["model.layers.1.self_attn.v_proj.weight"]), (Shape{16, 32}));
  EXPECT_EQ(shapeOf(m["model.layers.1.self_attn.o_proj.weight"]), (Shape{32, 32}));
  EXPECT_EQ(axesOf(m["model.layers.1.self_attn.o_proj.weight"]), (Axes{"embed", "heads"}));
  EXPECT_EQ(shapeOf(m["model.layers.0.mlp.gate_proj.weight"]), (Shape{48, 32}));
  EXPECT_EQ(axesOf(m["model.layers.0.mlp.up_proj.weight"]), (Axes{"mlp", "embed"}));
  EXPECT_EQ(shapeOf(m["model.layers.0.mlp.down_proj.weight"]), (Shape{32, 48}));
  EXPECT_EQ(axesOf(m["model.layers.0.mlp.down_proj.weight"]), (Axes{"embed", "mlp"}));
  EXPECT_EQ(shapeOf(m["model.norm.weight"]), (Shape{32}));
  EXPECT_EQ(shapeOf(m["lm_head.weight"]), (Shape{64, 32}));
  EXPECT_FALSE(m["lm_head.weight"].getTiedTo());

  auto invFreq = m["model.rotary_emb.inv_freq"];
  EXPECT_EQ(shapeOf(invFreq), (Shape{4}));
  EXPECT_EQ(axesOf(invFreq), (Axes{"head_dim"}));
  EXPECT_TRUE(invFreq.getBuffer());
  EXPECT_TRUE(invFreq.getNonpersistent());
  EXPECT_TRUE(invFreq.getTensorType().getElementType().isF32());
  auto rope = dyn_cast_or_null<init::RopeInvFreqOp>(recipeOf(invFreq));
  ASSERT_TRUE(rope);
  EXPECT_EQ(rope.getTheta().convertToDouble(), 10000.0);
  EXPECT_EQ(rope.getHeadDim(), 8);

  auto model = (*m.module)->getAttrOfType<StringAttr>(initc::import::kModelAttrName);
  ASSERT_TRUE(model);
  EXPECT_EQ(model.getValue(), "llama");
  // The config's text as given, for the checkpoint's config.json.
  auto config = (*m.module)->getAttrOfType<StringAttr>(init::InitDialect::kHfConfigAttr);
  ASSERT_TRUE(config);
  EXPECT_EQ(config.getValue().str(), kLlamaTiny);
  EXPECT_TRUE(succeeded(verify(*m.module)));
}

TEST(HFImport, Qwen2HasQKVBiasesAndTiesWhenAsked) {
  Imported m(kQwen2Tiny);
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_TRUE(m["model.layers.0.self_attn.q_proj.bias"]);
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.q_proj.bias"]), (std::vector<int64_t>{32}));
  EXPECT_EQ(axesOf(m["model.layers.0.self_attn.q_proj.bias"]), (std::vector<std::string>{"heads"}));
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.k_proj.bias"]), (std::vector<int64_t>{16}));
  EXPECT_EQ(axesOf(m["model.layers.0.self_attn.v_proj.bias"]),
            (std::vector<std::string>{"kv_heads"}));
  EXPECT_FALSE(m["model.layers.0.self_attn.o_proj.bias"]);
  EXPECT_FALSE(m["model.layers.0.mlp.gate_proj.bias"]);
  // The bias follows its weight, as in the state dict.
  auto names = m.names();
  auto at = std::find(names.begin(), names.end(), "model.layers.0.self_attn.q_proj.weight");
  ASSERT_NE(at, names.end());
  EXPECT_EQ(*(at + 1), "model.layers.0.self_attn.q_proj.bias");

  auto head = m["lm_head.weight"];
  ASSERT_TRUE(head.getTiedTo());
  EXPECT_EQ(head.getTiedToAttr().getValue(), "model.embed_tokens.weight");
  EXPECT_TRUE(head.getBody().empty());
  auto rope = cast<init::RopeInvFreqOp>(recipeOf(m["model.rotary_emb.inv_freq"]));
  EXPECT_EQ(rope.getTheta().convertToDouble(), 1e6);
}

TEST(HFImport, Qwen2AndMistralDefaultToUntied) {
  for (const char *type : {"qwen2", "mistral", "llama"}) {
    Imported m(std::string(R"({"model_type": ")") + type +
               R"(", "vocab_size": 8, "hidden_size": 8, "intermediate_size": 8,
               "num_hidden_layers": 1, "num_attention_heads": 2})");
    ASSERT_TRUE(m.module) << m.error;
    EXPECT_FALSE(m["lm_head.weight"].getTiedTo()) << type;
    EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.k_proj.weight"]),
              (std::vector<int64_t>{8, 8}))
        << type << ": num_key_value_heads defaults to num_attention_heads";
  }
}

TEST(HFImport, LlamaBiasSwitches) {
  Imported m(R"({"model_type": "llama", "vocab_size": 8, "hidden_size": 8,
    "intermediate_size": 12, "num_hidden_layers": 1, "num_attention_heads": 2,
    "attention_bias": true, "mlp_bias": true})");
  ASSERT_TRUE(m.module) << m.error;
  for (const char *s : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                        "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
    EXPECT_TRUE(m[std::string("model.layers.0.") + s + ".bias"]) << s;
  EXPECT_EQ(axesOf(m["model.layers.0.self_attn.o_proj.bias"]), (std::vector<std::string>{"embed"}));
  EXPECT_EQ(axesOf(m["model.layers.0.mlp.up_proj.bias"]), (std::vector<std::string>{"mlp"}));
  EXPECT_EQ(shapeOf(m["model.layers.0.mlp.down_proj.bias"]), (std::vector<int64_t>{8}));

  // Mistral has no such switches in transformers: they are ignored.
  Imported mistral(R"({"model_type": "mistral", "vocab_size": 8, "hidden_size": 8,
    "intermediate_size": 12, "num_hidden_layers": 1, "num_attention_heads": 2,
    "attention_bias": true})");
  ASSERT_TRUE(mistral.module) << mistral.error;
  EXPECT_FALSE(mistral["model.layers.0.self_attn.q_proj.bias"]);
}

TEST(HFImport, ExplicitHeadDim) {
  // Mistral-Nemo style: head_dim * heads != hidden_size.
  Imported m(R"({"model_type": "mistral", "vocab_size": 8, "hidden_size": 40,
    "intermediate_size": 12, "num_hidden_layers": 1, "num_attention_heads": 4,
    "num_key_value_heads": 1, "head_dim": 16})");
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.q_proj.weight"]), (std::vector<int64_t>{64, 40}));
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.k_proj.weight"]), (std::vector<int64_t>{16, 40}));
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.o_proj.weight"]), (std::vector<int64_t>{40, 64}));
  EXPECT_EQ(shapeOf(m["model.rotary_emb.inv_freq"]), (std::vector<int64_t>{8}));
}

TEST(HFImport, HiddenSizeNotAMultipleOfTheHeadsFloorsTheHeadDim) {
  // Qwen2Config (and Mistral's, Mixtral's, Qwen3-MoE's) floor hidden_size / heads: 100 / 6 = 16.
  for (const char *type : {"qwen2", "mistral"}) {
    Imported m(std::string(R"({"model_type": ")") + type + R"(", "vocab_size": 8,
      "hidden_size": 100, "intermediate_size": 12, "num_hidden_layers": 1,
      "num_attention_heads": 6, "num_key_value_heads": 2})");
    ASSERT_TRUE(m.module) << type << ": " << m.error;
    EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.q_proj.weight"]),
              (std::vector<int64_t>{96, 100})) << type;
    EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.k_proj.weight"]),
              (std::vector<int64_t>{32, 100})) << type;
    EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.o_proj.weight"]),
              (std::vector<int64_t>{100, 96})) << type;
    EXPECT_EQ(shapeOf(m["model.rotary_emb.inv_freq"]), (std::vector<int64_t>{8})) << type;
  }
}

TEST(HFImport, HiddenSizeBelowTheHeadsIsRefused) {
  // Flooring 28 / 42 would give heads of no dimensions (found by the config fuzzer, which
  // divided by that zero).
  Imported m(R"({"model_type": "qwen2", "vocab_size": 8, "hidden_size": 28,
    "intermediate_size": 12, "num_hidden_layers": 1, "num_attention_heads": 42})");
  EXPECT_FALSE(m.module);
  EXPECT_NE(m.error.find("'hidden_size' (28) is smaller than 'num_attention_heads' (42), so a "
                         "head would have no dimensions"),
            std::string::npos)
      << m.error;
}

TEST(HFImport, RopeScalingThatRescalesInvFreqDropsTheBuffer) {
  std::string base = R"({"model_type": "llama", "vocab_size": 8, "hidden_size": 8,
    "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "rope_scaling": )";
  Imported llama3(base + R"({"rope_type": "llama3", "factor": 8.0}})");
  ASSERT_TRUE(llama3.module) << llama3.error;
  EXPECT_FALSE(llama3["model.rotary_emb.inv_freq"]);
  Imported linear(base + R"({"type": "linear", "factor": 2.0}})");
  ASSERT_TRUE(linear.module) << linear.error;
  EXPECT_FALSE(linear["model.rotary_emb.inv_freq"]);
  Imported dynamic(base + R"({"type": "dynamic", "factor": 2.0}})");
  ASSERT_TRUE(dynamic.module) << dynamic.error;
  EXPECT_TRUE(dynamic["model.rotary_emb.inv_freq"]);
  Imported none(base + "null}");
  ASSERT_TRUE(none.module) << none.error;
  EXPECT_TRUE(none["model.rotary_emb.inv_freq"]);
}

TEST(HFImport, GPT2NamesShapesAxesBuffers) {
  Imported m(kGPT2Tiny);
  ASSERT_TRUE(m.module) << m.error;
  std::vector<std::string> expected = {"transformer.wte.weight", "transformer.wpe.weight"};
  for (int i = 0; i < 2; ++i) {
    std::string p = "transformer.h." + std::to_string(i) + ".";
    for (const char *s :
         {"ln_1.weight", "ln_1.bias", "attn.bias", "attn.masked_bias", "attn.c_attn.weight",
          "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight",
          "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"})
      expected.push_back(p + s);
  }
  for (const char *s : {"transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight"})
    expected.push_back(s);
  EXPECT_EQ(m.names(), expected);

  using Shape = std::vector<int64_t>;
  using Axes = std::vector<std::string>;
  EXPECT_EQ(shapeOf(m["transformer.wte.weight"]), (Shape{50, 16}));
  EXPECT_EQ(shapeOf(m["transformer.wpe.weight"]), (Shape{8, 16}));
  EXPECT_EQ(axesOf(m["transformer.wpe.weight"]), (Axes{"positions", "embed"}));
  // Conv1D stores [in, out].
  EXPECT_EQ(shapeOf(m["transformer.h.0.attn.c_attn.weight"]), (Shape{16, 48}));
  EXPECT_EQ(axesOf(m["transformer.h.0.attn.c_attn.weight"]), (Axes{"embed", "qkv"}));
  EXPECT_EQ(axesOf(m["transformer.h.0.attn.c_attn.bias"]), (Axes{"qkv"}));
  EXPECT_EQ(axesOf(m["transformer.h.0.attn.c_proj.weight"]), (Axes{"heads", "embed"}));
  EXPECT_EQ(shapeOf(m["transformer.h.0.mlp.c_fc.weight"]), (Shape{16, 64}));
  EXPECT_EQ(axesOf(m["transformer.h.0.mlp.c_fc.weight"]), (Axes{"embed", "mlp"}));
  EXPECT_EQ(shapeOf(m["transformer.h.1.mlp.c_proj.weight"]), (Shape{64, 16}));
  EXPECT_EQ(axesOf(m["transformer.h.1.mlp.c_proj.weight"]), (Axes{"mlp", "embed"}));
  EXPECT_EQ(axesOf(m["transformer.h.1.mlp.c_proj.bias"]), (Axes{"embed"}));

  auto mask = m["transformer.h.0.attn.bias"];
  EXPECT_EQ(shapeOf(mask), (Shape{1, 1, 8, 8}));
  EXPECT_TRUE(mask.getBuffer());
  EXPECT_TRUE(mask.getNonpersistent()); // transformers saves it in no checkpoint
  EXPECT_TRUE(mask.getTensorType().getElementType().isInteger(1));
  auto tril = dyn_cast_or_null<init::TrilOp>(recipeOf(mask));
  ASSERT_TRUE(tril);
  EXPECT_EQ(tril.getDiagonal(), 0);
  // Mask dims use logical names no preset shards.
  for (const std::string &axis : axesOf(mask))
    for (const char *sharded : {"vocab", "heads", "kv_heads", "qkv", "mlp", "embed"})
      EXPECT_NE(axis, sharded);

  auto maskedBias = m["transformer.h.1.attn.masked_bias"];
  EXPECT_EQ(shapeOf(maskedBias), (Shape{}));
  EXPECT_TRUE(maskedBias.getBuffer());
  EXPECT_TRUE(maskedBias.getNonpersistent());
  EXPECT_TRUE(maskedBias.getTensorType().getElementType().isF32());
  auto fill = dyn_cast_or_null<init::FillOp>(recipeOf(maskedBias));
  ASSERT_TRUE(fill);
  EXPECT_EQ(fill.getValue().convertToDouble(), -1e4);

  auto head = m["lm_head.weight"];
  ASSERT_TRUE(head.getTiedTo()) << "GPT-2 ties by default";
  EXPECT_EQ(head.getTiedToAttr().getValue(), "transformer.wte.weight");
  EXPECT_EQ(cast<StringAttr>((*m.module)->getAttr("init.model")).getValue(), "gpt2");
}

TEST(HFImport, GPT2UntiedAndInnerAndAliases) {
  Imported m(R"({"model_type": "gpt2", "vocab_size": 10, "hidden_size": 8,
    "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 4,
    "n_inner": 20, "tie_word_embeddings": false})");
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_EQ(shapeOf(m["transformer.h.0.mlp.c_fc.weight"]), (std::vector<int64_t>{8, 20}));
  EXPECT_EQ(shapeOf(m["transformer.h.0.attn.bias"]), (std::vector<int64_t>{1, 1, 4, 4}));
  auto head = m["lm_head.weight"];
  EXPECT_FALSE(head.getTiedTo());
  auto normal = dyn_cast_or_null<init::NormalOp>(recipeOf(head));
  ASSERT_TRUE(normal);
  EXPECT_DOUBLE_EQ(normal.getStd().convertToDouble(), 0.02);
}

//===----------------------------------------------------------------------===//
// Parameter counts of real configs (values from their config.json on the Hub)
//===----------------------------------------------------------------------===//

TEST(HFImport, GPT2SmallCount) {
  Imported m(R"({"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
    "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
    "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
    "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
    "resid_pdrop": 0.1, "summary_activation": null, "summary_first_dropout": 0.1,
    "summary_proj_to_labels": true, "summary_type": "cls_index", "summary_use_proj": true,
    "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
    "vocab_size": 50257})");
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_EQ(countParameters(m), 124439808);
  // The 12 masks and 12 masked_bias scalars (137,022,720 values with the weights) are buffers
  // transformers does not save: non-persistent, in no checkpoint.
  int64_t masks = 0;
  for (auto p : m.params)
    if (p.getTensorType().getElementType().isInteger(1))
      masks += p.getTensorType().getNumElements();
  EXPECT_EQ(countParameters(m) + masks, 137022720);
  EXPECT_EQ(countBuffers(m, false), masks + 12);
  EXPECT_EQ(countBuffers(m, true), 0);
  auto proj = cast<init::NormalOp>(recipeOf(m["transformer.h.11.mlp.c_proj.weight"]));
  EXPECT_DOUBLE_EQ(proj.getStd().convertToDouble(), 0.004082482904638631);
}

TEST(HFImport, TinyLlamaCount) {
  Imported m(R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false,
    "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 2048,
    "initializer_range": 0.02, "intermediate_size": 5632, "max_position_embeddings": 2048,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 22,
    "num_key_value_heads": 4, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null,
    "rope_theta": 10000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.35.0", "use_cache": true, "vocab_size": 32000})");
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_EQ(countParameters(m), 1100048384);
  EXPECT_EQ(countBuffers(m, /*persistentOnly=*/true), 0);
}

TEST(HFImport, Llama3_8BCount) {
  Imported m(R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false,
    "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": 128001,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 8192, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 500000.0,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.40.0.dev0",
    "use_cache": true, "vocab_size": 128256})",
             HFImportOptions{"hf", "bf16", 7});
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_EQ(countParameters(m), 8030261248);
  EXPECT_EQ(m.params.size(), 1u + 32 * 9 + 1 + 1 + 1);
}

TEST(HFImport, MistralAndQwen2Counts) {
  Imported mistral(R"({"architectures": ["MistralForCausalLM"], "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 32000})");
  ASSERT_TRUE(mistral.module) << mistral.error;
  EXPECT_EQ(countParameters(mistral), 7241732096); // Mistral-7B-v0.1

  Imported qwen(R"({"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896,
    "initializer_range": 0.02, "intermediate_size": 4864, "max_position_embeddings": 131072,
    "max_window_layers": 24, "model_type": "qwen2", "num_attention_heads": 14,
    "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": true,
    "torch_dtype": "bfloat16", "use_cache": true, "use_sliding_window": false,
    "vocab_size": 151936})");
  ASSERT_TRUE(qwen.module) << qwen.error;
  EXPECT_EQ(countParameters(qwen), 494032768); // Qwen2-0.5B
}

//===----------------------------------------------------------------------===//
// Recipes per init style, dtype, seed
//===----------------------------------------------------------------------===//

TEST(HFImport, HFStyleRecipes) {
  Imported m(std::string(R"({"model_type": "llama", "vocab_size": 16, "hidden_size": 8,
    "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
    "initializer_range": 0.05, "pad_token_id": 3})"));
  ASSERT_TRUE(m.module) << m.error;
  // Embedding: N(0, range) with the padding row zeroed.
  auto select = dyn_cast_or_null<init::SelectOp>(recipeOf(m["model.embed_tokens.weight"]));
  ASSERT_TRUE(select);
  auto mask = select.getCondition().getDefiningOp<init::IndexMaskOp>();
  ASSERT_TRUE(mask);
  EXPECT_EQ(mask.getDim(), 0);
  EXPECT_EQ(mask.getIndex(), 3);
  auto zeros = select.getTrueValue().getDefiningOp<init::FillOp>();
  ASSERT_TRUE(zeros);
  EXPECT_EQ(zeros.getValue().convertToDouble(), 0.0);
  auto normal = select.getFalseValue().getDefiningOp<init::NormalOp>();
  ASSERT_TRUE(normal);
  EXPECT_EQ(normal.getMean().convertToDouble(), 0.0);
  EXPECT_EQ(normal.getStd().convertToDouble(), 0.05);
  EXPECT_EQ(normal.getStream(), 0);

  for (const char *name : {"model.layers.0.self_attn.o_proj.weight", "model.layers.0.mlp.down_proj.weight",
                           "lm_head.weight"}) {
    auto w = dyn_cast_or_null<init::NormalOp>(recipeOf(m[name]));
    ASSERT_TRUE(w) << name;
    EXPECT_EQ(w.getStd().convertToDouble(), 0.05) << name << ": no depth scaling in llama";
  }
  auto norm = dyn_cast_or_null<init::FillOp>(recipeOf(m["model.norm.weight"]));
  ASSERT_TRUE(norm);
  EXPECT_EQ(norm.getValue().convertToDouble(), 1.0);

  Imported q(kQwen2Tiny);
  auto bias = dyn_cast_or_null<init::FillOp>(recipeOf(q["model.layers.0.self_attn.k_proj.bias"]));
  ASSERT_TRUE(bias);
  EXPECT_EQ(bias.getValue().convertToDouble(), 0.0);
}

TEST(HFImport, NegativePadTokenCountsFromTheEnd) {
  Imported m(R"({"model_type": "llama", "vocab_size": 16, "hidden_size": 8,
    "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
    "pad_token_id": -1})");
  ASSERT_TRUE(m.module) << m.error;
  auto select = cast<init::SelectOp>(recipeOf(m["model.embed_tokens.weight"]));
  EXPECT_EQ(select.getCondition().getDefiningOp<init::IndexMaskOp>().getIndex(), 15);
}

TEST(HFImport, GPT2HFStyleRecipes) {
  Imported m(kGPT2Tiny);
  ASSERT_TRUE(m.module) << m.error;
  double scaled = 0.02 / std::sqrt(4.0);
  for (const char *name : {"transformer.h.0.attn.c_proj.weight", "transformer.h.1.mlp.c_proj.weight"}) {
    auto w = dyn_cast_or_null<init::NormalOp>(recipeOf(m[name]));
    ASSERT_TRUE(w) << name;
    EXPECT_DOUBLE_EQ(w.getStd().convertToDouble(), scaled) << name;
  }
  for (const char *name : {"transformer.wte.weight", "transformer.wpe.weight",
                           "transformer.h.0.attn.c_attn.weight", "transformer.h.0.mlp.c_fc.weight"}) {
    auto w = dyn_cast_or_null<init::NormalOp>(recipeOf(m[name]));
    ASSERT_TRUE(w) << name << ": wte has no padding row, even with pad_token_id";
    EXPECT_DOUBLE_EQ(w.getStd().convertToDouble(), 0.02) << name;
  }
  for (const char *name : {"transformer.h.0.attn.c_attn.bias", "transformer.h.0.ln_1.bias",
                           "transformer.ln_f.bias", "transformer.h.1.mlp.c_proj.bias"})
    EXPECT_EQ(cast<init::FillOp>(recipeOf(m[name])).getValue().convertToDouble(), 0.0) << name;
  EXPECT_EQ(cast<init::FillOp>(recipeOf(m["transformer.ln_f.weight"])).getValue().convertToDouble(),
            1.0);
}

TEST(HFImport, TorchStyleRecipes) {
  HFImportOptions options;
  options.initStyle = "torch";
  Imported m(R"({"model_type": "qwen2", "vocab_size": 16, "hidden_size": 8,
    "intermediate_size": 12, "num_hidden_layers": 1, "num_attention_heads": 2,
    "pad_token_id": 0})",
             options);
  ASSERT_TRUE(m.module) << m.error;
  auto select = cast<init::SelectOp>(recipeOf(m["model.embed_tokens.weight"]));
  EXPECT_EQ(select.getFalseValue().getDefiningOp<init::NormalOp>().getStd().convertToDouble(), 1.0);

  for (const char *name : {"model.layers.0.self_attn.q_proj.weight",
                           "model.layers.0.mlp.down_proj.weight", "lm_head.weight"}) {
    auto vs = dyn_cast_or_null<init::VarianceScalingOp>(recipeOf(m[name]));
    ASSERT_TRUE(vs) << name;
    EXPECT_DOUBLE_EQ(vs.getScale().convertToDouble(), 1.0 / 3.0);
    EXPECT_EQ(vs.getMode(), init::FanMode::fan_in);
    EXPECT_EQ(vs.getDistribution(), init::Distribution::uniform);
    EXPECT_EQ(vs.getStream(), 0);
  }
  auto down = cast<init::VarianceScalingOp>(recipeOf(m["model.layers.0.mlp.down_proj.weight"]));
  EXPECT_EQ(down.getFan(), 12.0);
  auto bias = dyn_cast_or_null<init::UniformOp>(recipeOf(m["model.layers.0.self_attn.v_proj.bias"]));
  ASSERT_TRUE(bias);
  EXPECT_DOUBLE_EQ(bias.getHigh().convertToDouble(), 1.0 / std::sqrt(8.0));
  EXPECT_DOUBLE_EQ(bias.getLow().convertToDouble(), -1.0 / std::sqrt(8.0));
  EXPECT_EQ(cast<init::FillOp>(recipeOf(m["model.norm.weight"])).getValue().convertToDouble(), 1.0);

  Imported g(kGPT2Tiny, options);
  ASSERT_TRUE(g.module) << g.error;
  for (const char *name : {"transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_proj.weight",
                           "transformer.h.1.mlp.c_proj.weight"}) {
    auto w = dyn_cast_or_null<init::NormalOp>(recipeOf(g[name]));
    ASSERT_TRUE(w) << name;
    EXPECT_DOUBLE_EQ(w.getStd().convertToDouble(), 0.02) << name << ": Conv1D's constructor";
  }
  EXPECT_EQ(cast<init::NormalOp>(recipeOf(g["transformer.wpe.weight"])).getStd().convertToDouble(),
            1.0);
  EXPECT_EQ(cast<init::FillOp>(recipeOf(g["transformer.h.0.mlp.c_fc.bias"])).getValue().convertToDouble(),
            0.0);
}

TEST(HFImport, DTypeAndSeed) {
  HFImportOptions options;
  options.dtype = "bf16";
  options.seed = 1234;
  Imported m(kGPT2Tiny, options);
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_TRUE(m["transformer.wte.weight"].getTensorType().getElementType().isBF16());
  EXPECT_TRUE(m["transformer.h.0.ln_1.bias"].getTensorType().getElementType().isBF16());
  EXPECT_TRUE(m["transformer.h.0.attn.bias"].getTensorType().getElementType().isInteger(1));
  EXPECT_TRUE(m["transformer.h.0.attn.masked_bias"].getTensorType().getElementType().isF32());
  EXPECT_EQ(init::getModelSeed(*m.module), 1234u);
  EXPECT_EQ(llvm::range_size(m.module->getOps<init::SeedOp>()), 1u);

  options.dtype = "f16";
  Imported l(kLlamaTiny, options);
  ASSERT_TRUE(l.module) << l.error;
  EXPECT_TRUE(l["model.norm.weight"].getTensorType().getElementType().isF16());
  EXPECT_TRUE(l["model.rotary_emb.inv_freq"].getTensorType().getElementType().isF32());
}

TEST(HFImport, WholeNumberFloatsAreIntegers) {
  Imported m(R"({"model_type": "llama", "vocab_size": 16.0, "hidden_size": 8,
    "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2})");
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_EQ(shapeOf(m["model.embed_tokens.weight"]), (std::vector<int64_t>{16, 8}));
}

TEST(HFImport, ReadsFiles) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("hf_import", "json", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << kGPT2Tiny;
  }
  MLIRContext ctx;
  std::string error;
  auto module = importHFConfig(ctx, path, {}, error);
  EXPECT_TRUE(module) << error;
  llvm::sys::fs::remove(path);

  module = importHFConfig(ctx, "/nonexistent/config.json", {}, error);
  EXPECT_FALSE(module);
  EXPECT_NE(error.find("cannot read config '/nonexistent/config.json'"), std::string::npos)
      << error;
}

TEST(HFImport, PrintedModuleParsesBack) {
  for (const char *config : {kLlamaTiny, kQwen2Tiny, kGPT2Tiny}) {
    Imported m(config);
    ASSERT_TRUE(m.module) << m.error;
    std::string text;
    llvm::raw_string_ostream os(text);
    m.module->print(os);
    os.flush();
    OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(text, &m.ctx);
    ASSERT_TRUE(parsed) << text;
    ASSERT_TRUE(succeeded(verify(*parsed)));
    std::string again;
    llvm::raw_string_ostream os2(again);
    parsed->print(os2);
    os2.flush();
    EXPECT_EQ(text, again);
  }
}

//===----------------------------------------------------------------------===//
// Errors: one line, naming the file and field, saying what to do
//===----------------------------------------------------------------------===//

/// A small llama config with `extra`'s fields, which replace the base's of the same name (a key
/// given twice is itself an error).
std::string llamaWith(const std::string &extra) {
  const std::pair<const char *, const char *> base[] = {
      {"model_type", "\"llama\""}, {"vocab_size", "16"},       {"hidden_size", "8"},
      {"intermediate_size", "8"},   {"num_hidden_layers", "1"}, {"num_attention_heads", "2"}};
  std::string text = "{";
  for (const auto &[key, value] : base)
    if (extra.find("\"" + std::string(key) + "\":") == std::string::npos)
      text += (text.size() > 1 ? ", \"" : "\"") + std::string(key) + "\": " + value;
  return text + (extra.empty() ? std::string() : ", " + extra) + "}";
}

struct ErrorCase {
  std::string config;
  std::string expected; // a substring of the message
};

TEST(HFImport, Errors) {
  std::string noVocab = R"({"model_type": "llama", "hidden_size": 8, "intermediate_size": 8,
    "num_hidden_layers": 1, "num_attention_heads": 2})";
  std::vector<ErrorCase> cases = {
      {"{\"model_type\": ", "config.json: not valid JSON"},
      {"[1, 2]", "config.json: the top level is [1,2] (an array), but a config.json holds one "
                 "JSON object"},
      {"{}", "config.json: missing field 'model_type'; set it to one of llama, mistral, qwen2, "
             "mixtral, qwen3_moe, deepseek_v3, gpt2"},
      {R"({"model_type": 7})", "'model_type' must be a string, but it is 7"},
      {R"({"model_type": "bert"})",
       "config.json: model_type 'bert' is not supported; supported: llama, mistral, qwen2, "
       "mixtral, qwen3_moe, deepseek_v3, gpt2"},
      {noVocab, "config.json: missing field 'vocab_size', which model_type 'llama' requires; add "
                "it as a positive integer"},
      {R"({"model_type": "mistral", "vocab_size": 16, "hidden_size": "4096"})",
       "config.json: 'hidden_size' must be a positive integer, but it is \"4096\" (a string); "
       "write it as a whole number such as 4096"},
      {R"({"model_type": "llama", "vocab_size": -16})",
       "'vocab_size' must be a positive integer, but it is -16"},
      {R"({"model_type": "llama", "vocab_size": 0})",
       "'vocab_size' must be a positive integer, but it is 0"},
      {R"({"model_type": "llama", "vocab_size": 16.5})",
       "'vocab_size' must be a positive integer, but it is 16.5"},
      {R"({"model_type": "llama", "vocab_size": true})",
       "'vocab_size' must be a positive integer, but it is true (a boolean)"},
      {R"({"model_type": "llama", "vocab_size": 18446744073709551615})",
       "'vocab_size' must be a positive integer"},
      {R"({"model_type": "llama", "vocab_size": 4611686018427387904})",
       "'vocab_size' is 4611686018427387904, more than 2^40; check the value"},
      {R"({"model_type": "llama", "vocab_size": 16, "hidden_size": 30, "intermediate_size": 8,
          "num_hidden_layers": 1, "num_attention_heads": 4})",
       "'hidden_size' (30) is not divisible by 'num_attention_heads' (4); fix one of them, or "
       "give 'head_dim' explicitly"},
      {llamaWith(R"("num_key_value_heads": 3)"),
       "'num_attention_heads' (2) is not a multiple of 'num_key_value_heads' (3)"},
      {llamaWith(R"("head_dim": 5)"),
       "the head dimension is 5 ('head_dim'), but rotary embeddings need an even one"},
      {R"({"model_type": "llama", "vocab_size": 16, "hidden_size": 6, "intermediate_size": 8,
          "num_hidden_layers": 1, "num_attention_heads": 2})",
       "the head dimension is 3 ('hidden_size' / 'num_attention_heads')"},
      {llamaWith(R"("num_key_value_heads": 0)"), "'num_key_value_heads' must be a positive integer"},
      {llamaWith(R"("pad_token_id": 16)"),
       "config.json: 'pad_token_id' is 16 but 'vocab_size' is 16; torch.nn.Embedding needs a "
       "padding row in [-vocab_size, vocab_size): fix it, or set it to null for no padding row"},
      {llamaWith(R"("pad_token_id": -17)"), "'pad_token_id' is -17 but 'vocab_size' is 16"},
      {llamaWith(R"("pad_token_id": "0")"),
       "'pad_token_id' must be an integer or null, but it is \"0\" (a string)"},
      {llamaWith(R"("tie_word_embeddings": "yes")"),
       "'tie_word_embeddings' must be true or false, but it is \"yes\" (a string)"},
      {llamaWith(R"("initializer_range": -0.02)"),
       "'initializer_range' must be a positive number, but it is -0.02"},
      {llamaWith(R"("rope_theta": 0)"), "'rope_theta' must be a positive number, but it is 0"},
      {llamaWith(R"("rope_scaling": 2.0)"),
       "'rope_scaling' must be an object or null, but it is 2"},
      {llamaWith(R"("num_hidden_layers": 100000)"),
       "'num_hidden_layers' is 100000; initc imports at most 65536 layers"},
      {R"({"model_type": "llama", "vocab_size": 1099511627776, "hidden_size": 4,
          "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2})",
       "config.json: tensor 'model.embed_tokens.weight' would have shape 1099511627776x4, more "
       "than 2^40 elements; check vocab_size and hidden_size"},
      {R"({"model_type": "llama", "vocab_size": 16, "hidden_size": 8, "intermediate_size": 8,
          "num_hidden_layers": 1, "num_attention_heads": 1048576, "num_key_value_heads": 1,
          "head_dim": 2097152})",
       "'num_attention_heads' (1048576) times the head dimension (2097152) is more than 2^40"},
      {R"({"model_type": "llama", "vocab_size": 16, "hidden_size": 8, "intermediate_size": 1099511627776,
          "num_hidden_layers": 1, "num_attention_heads": 2})",
       "tensor 'model.layers.0.mlp.gate_proj.weight' would have shape 1099511627776x8"},
      {R"({"model_type": "gpt2", "vocab_size": 10, "n_embd": 8, "n_layer": 1, "n_head": 2})",
       "missing field 'n_positions' (or its alias 'max_position_embeddings'), which model_type "
       "'gpt2' requires"},
      {R"({"model_type": "gpt2", "vocab_size": 10, "n_embd": 8, "hidden_size": 16, "n_layer": 1,
          "n_head": 2, "n_positions": 4})",
       "'n_embd' (8) and its alias 'hidden_size' (16) disagree; keep one of them"},
      {R"({"model_type": "gpt2", "vocab_size": 10, "n_embd": 9, "n_layer": 1, "n_head": 2,
          "n_positions": 4})",
       "'n_embd' (9) is not divisible by 'n_head' (2)"},
      {R"({"model_type": "gpt2", "vocab_size": 10, "n_embd": 8, "n_layer": 1, "n_head": 2,
          "n_positions": 4, "add_cross_attention": true})",
       "'add_cross_attention' is true, which initc does not import"},
      {R"({"model_type": "gpt2", "vocab_size": 10, "n_embd": 8, "n_layer": 1, "n_head": 2,
          "n_positions": 2097152})",
       "tensor 'transformer.h.0.attn.bias' would have shape 1x1x2097152x2097152, more than 2^40 "
       "elements; check n_positions"},
  };
  for (const ErrorCase &c : cases) {
    Imported m(c.config);
    ASSERT_FALSE(m.module) << c.config;
    EXPECT_NE(m.error.find(c.expected), std::string::npos)
        << "message: " << m.error << "\nexpected: " << c.expected;
    EXPECT_EQ(m.error.rfind("config.json: ", 0), 0u) << "names the file: " << m.error;
    EXPECT_EQ(m.error.find('\n'), std::string::npos) << "one line: " << m.error;
  }
}

// Every field, every kind of junk: either an import or one clean message, never a crash.
TEST(HFImport, JunkInAnyFieldGivesOneMessage) {
  const char *junk[] = {"\"x\"", "-1", "0", "1.5", "true", "[]", "{}", "null", "1e300",
                        "99999999999999999999", "-9223372036854775808"};
  using Fields = std::vector<std::pair<std::string, std::string>>;
  std::vector<Fields> families = {
      {{"model_type", "\"llama\""}, {"vocab_size", "16"}, {"hidden_size", "8"},
       {"intermediate_size", "8"}, {"num_hidden_layers", "1"}, {"num_attention_heads", "2"},
       {"num_key_value_heads", "1"}, {"head_dim", "4"}, {"initializer_range", "0.02"},
       {"rope_theta", "10000"}, {"tie_word_embeddings", "false"}, {"attention_bias", "false"},
       {"mlp_bias", "false"}, {"pad_token_id", "0"}, {"rope_scaling", "null"}},
      {{"model_type", "\"gpt2\""}, {"vocab_size", "16"}, {"n_embd", "8"}, {"n_layer", "1"},
       {"n_head", "2"}, {"n_positions", "4"}, {"n_inner", "12"}, {"hidden_size", "8"},
       {"initializer_range", "0.02"}, {"tie_word_embeddings", "true"},
       {"add_cross_attention", "false"}},
  };
  int imported = 0, rejected = 0;
  for (const Fields &fields : families) {
    for (size_t bad = 0; bad < fields.size(); ++bad) {
      for (const char *value : junk) {
        std::string config = "{";
        for (size_t i = 0; i < fields.size(); ++i)
          config += (i ? ", \"" : "\"") + fields[i].first + "\": " +
                    (i == bad ? std::string(value) : fields[i].second);
        config += "}";
        Imported m(config);
        if (m.module) {
          ++imported;
          continue;
        }
        ++rejected;
        EXPECT_EQ(m.error.rfind("config.json: ", 0), 0u) << m.error;
        EXPECT_EQ(m.error.find('\n'), std::string::npos) << m.error;
        EXPECT_EQ(m.error.find("internal error"), std::string::npos) << config << "\n" << m.error;
      }
    }
  }
  EXPECT_GT(imported, 0);
  EXPECT_GT(rejected, imported);
}

TEST(HFImport, TruncatedConfigsGiveOneMessage) {
  std::string text = kGPT2Tiny;
  for (size_t n = 0; n + 1 < text.size(); ++n) {
    Imported m(text.substr(0, n));
    ASSERT_FALSE(m.module);
    EXPECT_EQ(m.error.rfind("config.json: ", 0), 0u) << m.error;
  }
}

TEST(HFImport, OptionErrors) {
  HFImportOptions style;
  style.initStyle = "jax";
  EXPECT_EQ(errorOf(kLlamaTiny, style), "unknown init style 'jax': use hf or torch");
  HFImportOptions dtype;
  dtype.dtype = "fp8";
  EXPECT_EQ(errorOf(kLlamaTiny, dtype), "unknown dtype 'fp8': use f32, bf16 or f16");
}

TEST(HFImport, NullMeansDefault) {
  Imported m(llamaWith(R"("num_key_value_heads": null, "head_dim": null, "rope_theta": null,
    "tie_word_embeddings": null, "rope_scaling": null, "pad_token_id": null)"));
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.k_proj.weight"]), (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(cast<init::RopeInvFreqOp>(recipeOf(m["model.rotary_emb.inv_freq"]))
                .getTheta()
                .convertToDouble(),
            10000.0);
  EXPECT_FALSE(m["lm_head.weight"].getTiedTo());
  EXPECT_TRUE(isa<init::NormalOp>(recipeOf(m["model.embed_tokens.weight"])));
}

} // namespace

// Mixtral-8x7B's config.json: 46,702,792,704 parameters, as transformers 5's
// MixtralForCausalLM built on the meta device counts them, with its experts stacked
// (mlp.experts.gate_up_proj [E, 2I, H], mlp.experts.down_proj [E, H, I]) beside the router.
TEST(HFImport, Mixtral8x7BCountAndStackedExperts) {
  Imported m(R"({"architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0,
    "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768,
    "model_type": "mixtral", "num_attention_heads": 32, "num_experts_per_tok": 2,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
    "output_router_logits": false, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
    "router_aux_loss_coef": 0.02, "sliding_window": null, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "transformers_version": "4.36.0.dev0", "use_cache": true,
    "vocab_size": 32000})",
             HFImportOptions{"hf", "bf16", 7});
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_EQ(countParameters(m), 46702792704);
  EXPECT_EQ(m.params.size(), 1u + 32 * 9 + 1 + 1 + 1);
  bool found = false;
  for (auto param : m.module->getOps<init::ParamOp>())
    if (param.getSymName() == "model.layers.31.mlp.experts.gate_up_proj") {
      found = true;
      EXPECT_EQ(param.getTensorType().getShape(), (llvm::ArrayRef<int64_t>{8, 28672, 4096}));
    }
  EXPECT_TRUE(found);
  Imported torchStyle(R"({"model_type": "mixtral", "vocab_size": 10, "hidden_size": 8,
    "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
    "num_local_experts": 2})",
                      HFImportOptions{"torch", "f32", 7});
  EXPECT_FALSE(torchStyle.module);
  EXPECT_NE(torchStyle.error.find("no recipe for mixtral's experts"), std::string::npos)
      << torchStyle.error;
}

namespace {
// A config of benchmarks/configs/, written out from the model card's config.json.
std::string benchmarkConfig(const std::string &file) {
  auto buffer = llvm::MemoryBuffer::getFile(std::string(INITC_SOURCE_DIR) + "/benchmarks/configs/" +
                                            file);
  return buffer ? (*buffer)->getBuffer().str() : "";
}

} // namespace

// Qwen3-30B-A3B: 30,532,122,624 parameters (the model card's "30.5B in total"); 48 layers,
// each with q/k norms and 128 experts stacked behind the router, which follows them.
TEST(HFImport, Qwen3MoE30BCountAndLayout) {
  Imported m(benchmarkConfig("qwen3-30b-a3b.json"), HFImportOptions{"hf", "bf16", 7});
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_EQ(countParameters(m), 30532122624);
  EXPECT_EQ(m.params.size(), 1u + 48 * 11 + 1 + 1 + 1);
  EXPECT_EQ(shapeOf(m["model.layers.47.mlp.experts.gate_up_proj"]),
            (std::vector<int64_t>{128, 1536, 2048}));
  EXPECT_EQ(shapeOf(m["model.layers.47.mlp.experts.down_proj"]),
            (std::vector<int64_t>{128, 2048, 768}));
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.q_proj.weight"]),
            (std::vector<int64_t>{4096, 2048})); // head_dim 128, not 2048 / 32
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.k_norm.weight"]), (std::vector<int64_t>{128}));
  std::vector<std::string> names = m.names();
  auto at = [&](const std::string &n) { return std::find(names.begin(), names.end(), n); };
  EXPECT_LT(at("model.layers.3.mlp.experts.down_proj"), at("model.layers.3.mlp.gate.weight"));
  EXPECT_TRUE(m["model.layers.3.mlp.gate.weight"].getTensorType().getElementType().isBF16());
}

// qwen3_moe's dense layers: mlp_only_layers and decoder_sparse_step keep an MLP of
// intermediate_size; a missing num_key_value_heads (4 in Qwen3MoeConfig, not the head count)
// and a layer list naming no layer are errors.
TEST(HFImport, Qwen3MoEDenseLayersAndErrors) {
  const std::string base = R"({"model_type": "qwen3_moe", "vocab_size": 16, "hidden_size": 8,
    "intermediate_size": 12, "moe_intermediate_size": 4, "num_hidden_layers": 4,
    "num_attention_heads": 2, "num_experts": 2, )";
  Imported m(base + R"("num_key_value_heads": 1, "mlp_only_layers": [0],
    "decoder_sparse_step": 2})");
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_TRUE(m["model.layers.0.mlp.gate_proj.weight"]); // listed
  EXPECT_TRUE(m["model.layers.1.mlp.experts.gate_up_proj"]); // (1 + 1) % 2 == 0
  EXPECT_TRUE(m["model.layers.2.mlp.up_proj.weight"]);
  EXPECT_TRUE(m["model.layers.3.mlp.gate.weight"]);
  EXPECT_EQ(shapeOf(m["model.layers.2.mlp.down_proj.weight"]), (std::vector<int64_t>{8, 12}));
  Imported noKv(base + R"("mlp_only_layers": []})");
  EXPECT_NE(noKv.error.find("missing field 'num_key_value_heads', which model_type 'qwen3_moe' "
                            "requires"),
            std::string::npos)
      << noKv.error;
  Imported badList(base + R"("num_key_value_heads": 1, "mlp_only_layers": [4]})");
  EXPECT_NE(badList.error.find("'mlp_only_layers' lists 4, which is not a layer: the model has "
                               "layers 0..3"),
            std::string::npos)
      << badList.error;
}

// DeepSeek-V3: 671,026,404,352 parameters (the model card's 671B, the multi-token prediction
// module excluded, as transformers builds no layer 61), with MLA attention, 3 dense layers and
// 58 sparse ones of 256 routed experts and a shared one; the router and its correction bias
// stay f32 under --dtype bf16 (_keep_in_fp32_modules_strict).
TEST(HFImport, DeepSeekV3CountAndLayout) {
  Imported m(benchmarkConfig("deepseek-v3.json"), HFImportOptions{"hf", "bf16", 7});
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_EQ(countParameters(m), 671026404352);
  EXPECT_EQ(countBuffers(m, true), 58 * 256);
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.q_b_proj.weight"]),
            (std::vector<int64_t>{24576, 1536}));
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.kv_a_proj_with_mqa.weight"]),
            (std::vector<int64_t>{576, 7168}));
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.kv_b_proj.weight"]),
            (std::vector<int64_t>{32768, 512}));
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.o_proj.weight"]),
            (std::vector<int64_t>{7168, 16384}));
  EXPECT_EQ(shapeOf(m["model.layers.2.mlp.gate_proj.weight"]),
            (std::vector<int64_t>{18432, 7168}));
  EXPECT_FALSE(m["model.layers.3.mlp.gate_proj.weight"]);
  EXPECT_EQ(shapeOf(m["model.layers.3.mlp.experts.gate_up_proj"]),
            (std::vector<int64_t>{256, 4096, 7168}));
  EXPECT_EQ(shapeOf(m["model.layers.60.mlp.shared_experts.down_proj.weight"]),
            (std::vector<int64_t>{7168, 2048}));
  init::ParamOp gate = m["model.layers.3.mlp.gate.weight"];
  init::ParamOp bias = m["model.layers.3.mlp.gate.e_score_correction_bias"];
  ASSERT_TRUE(gate && bias);
  EXPECT_TRUE(gate.getTensorType().getElementType().isF32());
  EXPECT_TRUE(bias.getTensorType().getElementType().isF32());
  EXPECT_TRUE(bias.getBuffer() && !bias.getNonpersistent());
  EXPECT_TRUE(m["model.layers.3.mlp.experts.down_proj"].getTensorType().getElementType().isBF16());
  // yarn rope scaling rescales inv_freq: left out, as for llama.
  EXPECT_FALSE(m["model.rotary_emb.inv_freq"]);
}

TEST(HFImport, DeepSeekV3WithoutQLoraAndErrors) {
  const std::string base = R"({"model_type": "deepseek_v3", "vocab_size": 16, "hidden_size": 8,
    "intermediate_size": 12, "moe_intermediate_size": 4, "num_hidden_layers": 2,
    "num_attention_heads": 2, "n_routed_experts": 2, "kv_lora_rank": 4, "qk_nope_head_dim": 2,
    "v_head_dim": 3, )";
  Imported m(base + R"("qk_rope_head_dim": 2, "q_lora_rank": null, "n_shared_experts": 2})");
  ASSERT_TRUE(m.module) << m.error;
  EXPECT_EQ(shapeOf(m["model.layers.0.self_attn.q_proj.weight"]), (std::vector<int64_t>{8, 8}));
  EXPECT_FALSE(m["model.layers.0.self_attn.q_a_proj.weight"]);
  // first_k_dense_replace defaults to 3: both layers dense.
  EXPECT_TRUE(m["model.layers.1.mlp.gate_proj.weight"]);
  EXPECT_EQ(shapeOf(m["model.rotary_emb.inv_freq"]), (std::vector<int64_t>{1}));
  Imported sparse(base + R"("qk_rope_head_dim": 2, "n_shared_experts": 2,
    "first_k_dense_replace": 0})");
  ASSERT_TRUE(sparse.module) << sparse.error;
  EXPECT_EQ(shapeOf(sparse["model.layers.0.mlp.shared_experts.up_proj.weight"]),
            (std::vector<int64_t>{8, 8})); // 2 shared experts of 4
  Imported odd(base + R"("qk_rope_head_dim": 3})");
  EXPECT_NE(odd.error.find("'qk_rope_head_dim' is 3, but rotary embeddings need an even one"),
            std::string::npos)
      << odd.error;
  Imported torchStyle(base + R"("qk_rope_head_dim": 2, "first_k_dense_replace": 1})",
                      HFImportOptions{"torch", "f32", 7});
  EXPECT_NE(torchStyle.error.find("no recipe for deepseek_v3's experts"), std::string::npos)
      << torchStyle.error;
}
