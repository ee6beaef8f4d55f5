//===- SpecTest.cpp - Unit tests for the JSON spec frontend -------------------===//
//
// Every rule in docs/spec.md is checked with its exact message; parameter counts are
// checked against an independent closed formula.
//
//===----------------------------------------------------------------------------===//

#include "frontend/Spec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace tgc;
using json = nlohmann::json;

namespace {

/// Parses `text` with `overrides`; returns the error text ("" on success).
std::string errorOf(const std::string &text, const std::vector<std::string> &overrides = {}) {
  Spec s;
  SpecError err;
  if (parseSpec(text, overrides, s, err)) return "";
  return err.str();
}

/// The error for the default spec with `overrides` applied.
std::string overrideError(const std::vector<std::string> &overrides) {
  return errorOf(defaultSpecJson(), overrides);
}

/// Parses `text` and expects success.
Spec parseOk(const std::string &text, const std::vector<std::string> &overrides = {}) {
  Spec s;
  SpecError err;
  EXPECT_TRUE(parseSpec(text, overrides, s, err)) << err.str();
  return s;
}

/// Closed-form parameter count of the GPT-2 layout (independent of modelParameters):
/// per layer 2 layernorms (4D), qkv (3D^2 [+3D]), proj (D^2 [+D]), fc (DF [+F]),
/// proj (FD [+D]); plus wte VD, wpe CD, ln_f 2D, and lm_head VD when untied.
int64_t closedFormCount(int64_t V, int64_t C, int64_t D, int64_t L, int64_t F, bool tied,
                        bool attnBias = true, bool mlpBias = true) {
  int64_t layer = 4 * D + 4 * D * D + 2 * D * F + (attnBias ? 4 * D : 0) +
                  (mlpBias ? F + D : 0);
  return V * D + C * D + L * layer + 2 * D + (tied ? 0 : V * D);
}

/// The first ancestor of `dir` (itself included) holding examples/gpt2-small.json.
std::string findRootFrom(std::string dir) {
  while (!dir.empty()) {
    if (std::ifstream(dir + "/examples/gpt2-small.json").good()) return dir;
    size_t slash = dir.find_last_of('/');
    if (slash == std::string::npos) return "";
    dir = dir.substr(0, slash);
  }
  return "";
}

/// The repository root: $TGC_SOURCE_DIR, else an ancestor of the working directory
/// holding examples/gpt2-small.json, else the tree this file was compiled from ("" if
/// none of these).
std::string sourceDir() {
  if (const char *env = std::getenv("TGC_SOURCE_DIR")) return env;
  char buf[4096];
  if (getcwd(buf, sizeof buf)) {
    std::string root = findRootFrom(buf);
    if (!root.empty()) return root;
  }
  std::string self = __FILE__;  // absolute under CMake: <root>/test/unit/SpecTest.cpp
  size_t slash = self.find_last_of('/');
  return slash == std::string::npos ? "" : findRootFrom(self.substr(0, slash));
}

} // namespace

//===----------------------------------------------------------------------------===//
// Defaults
//===----------------------------------------------------------------------------===//

TEST(SpecDefaults, EmptyObjectGetsStructDefaults) {
  Spec s = parseOk("{}");
  EXPECT_EQ(s.name, "model");
  EXPECT_EQ(s.model.vocab_size, 50304);
  EXPECT_EQ(s.model.context, 1024);
  EXPECT_EQ(s.model.d_model, 768);
  EXPECT_EQ(s.model.n_layers, 12);
  EXPECT_EQ(s.model.n_heads, 12);
  EXPECT_EQ(s.model.d_ff, 3072);
  EXPECT_TRUE(s.model.tie_embeddings);
  EXPECT_TRUE(s.model.attention_bias);
  EXPECT_TRUE(s.model.mlp_bias);
  EXPECT_EQ(s.model.dropout, 0.0);
  EXPECT_EQ(s.model.positional, "learned");
  EXPECT_EQ(s.model.activation, "gelu_tanh");
  EXPECT_DOUBLE_EQ(s.model.layer_norm_eps, 1e-5);
  EXPECT_EQ(s.training.batch_size, 8);
  EXPECT_EQ(s.training.grad_accum, 1);
  EXPECT_EQ(s.training.precision, "fp32");
  EXPECT_EQ(s.training.attention.kernel, "naive");
  EXPECT_EQ(s.training.attention.window, 0);
  EXPECT_EQ(s.training.checkpointing, "auto");
  EXPECT_EQ(s.training.optimizer.name, "adamw");
  EXPECT_DOUBLE_EQ(s.training.optimizer.lr, 6e-4);
  EXPECT_DOUBLE_EQ(s.training.optimizer.min_lr, 6e-5);
  EXPECT_DOUBLE_EQ(s.training.optimizer.beta1, 0.9);
  EXPECT_DOUBLE_EQ(s.training.optimizer.beta2, 0.95);
  EXPECT_DOUBLE_EQ(s.training.optimizer.eps, 1e-8);
  EXPECT_DOUBLE_EQ(s.training.optimizer.weight_decay, 0.1);
  EXPECT_DOUBLE_EQ(s.training.optimizer.grad_clip, 1.0);
  EXPECT_EQ(s.training.optimizer.warmup_steps, 100);
  EXPECT_EQ(s.training.optimizer.decay, "cosine");
  EXPECT_FALSE(s.training.optimizer.decay_embeddings);
  EXPECT_EQ(s.training.seed, 1337);
  EXPECT_EQ(s.training.ignore_index, -1);
}

TEST(SpecDefaults, JsonHasEveryFieldFilledIn) {
  Spec s = parseOk(R"({"model": {"d_model": 512, "n_heads": 8}})");
  json j = json::parse(s.json);
  EXPECT_EQ(j["name"], "model");
  EXPECT_EQ(j["model"]["d_model"], 512);
  EXPECT_EQ(j["model"]["n_heads"], 8);
  EXPECT_EQ(j["model"]["vocab_size"], 50304);
  EXPECT_EQ(j["training"]["attention"]["kernel"], "naive");
  EXPECT_EQ(j["training"]["optimizer"]["betas"], json::array({0.9, 0.95}));
  EXPECT_EQ(j["training"]["checkpointing"], "auto");
  EXPECT_EQ(j["training"]["ignore_index"], -1);
  EXPECT_EQ(j["model"].size(), 19u); // GPT-2's 13 and the Llama family's 6
  EXPECT_EQ(j["model"]["norm"], "layernorm");
  EXPECT_EQ(j["model"]["n_kv_heads"], 0);
  EXPECT_EQ(j["model"]["rope_scaling"]["factor"], 0.0);
  EXPECT_EQ(j["training"].size(), 15u);
  EXPECT_EQ(j["training"]["gradients"], "auto");
  EXPECT_EQ(j["training"]["gradient_dtype"], "auto");
  EXPECT_EQ(j["training"]["master_values"], "auto");
  EXPECT_EQ(j["training"]["bias_rows"], "auto");
  EXPECT_EQ(j["training"]["loss_chunk_bytes"], 512 << 20);
  EXPECT_EQ(j["training"]["distributed"], json({{"ranks", 1}, {"zero", 0}}));
  EXPECT_EQ(j["training"]["loss_scaling"]["init"], 65536.0);
  EXPECT_EQ(j["training"]["loss_scaling"]["growth_interval"], 2000);
  EXPECT_EQ(j["training"]["optimizer"].size(), 11u);
  EXPECT_EQ(j["training"]["optimizer"]["offload"], "none");
  EXPECT_EQ(j["training"]["attention"].size(), 3u);
  EXPECT_EQ(j["training"]["attention"]["impl"], "auto");
  // Pretty-printed, name first.
  EXPECT_EQ(s.json.rfind("{\n  \"name\": \"model\",\n  \"model\": {", 0), 0u) << s.json;
}

TEST(SpecDefaults, FilledJsonRoundTrips) {
  Spec a = parseOk(R"({"training": {"precision": "bf16-mixed", "optimizer": {"betas": [0.8, 0.9]}}})");
  Spec b = parseOk(a.json);
  EXPECT_EQ(a.json, b.json);
  EXPECT_EQ(b.training.precision, "bf16-mixed");
  EXPECT_DOUBLE_EQ(b.training.optimizer.beta1, 0.8);
}

TEST(SpecDefaults, DefaultSpecIsTheTinyModel) {
  Spec s = parseOk(defaultSpecJson());
  EXPECT_EQ(s.name, "tiny");
  EXPECT_EQ(s.model.vocab_size, 2048);
  EXPECT_EQ(s.model.context, 64);
  EXPECT_EQ(s.model.d_model, 64);
  EXPECT_EQ(s.model.n_layers, 2);
  EXPECT_EQ(s.model.n_heads, 4);
  EXPECT_EQ(s.model.d_model / s.model.n_heads, 16);
  EXPECT_EQ(s.model.d_ff, 256);
  EXPECT_TRUE(s.model.tie_embeddings);
  EXPECT_EQ(s.training.batch_size, 8);
  EXPECT_DOUBLE_EQ(s.training.optimizer.lr, 1e-3);
  EXPECT_DOUBLE_EQ(s.training.optimizer.min_lr, 1e-4);
  EXPECT_EQ(s.training.optimizer.warmup_steps, 20);
  EXPECT_EQ(parameterCount(s.model), closedFormCount(2048, 64, 64, 2, 256, true));
  EXPECT_EQ(parameterCount(s.model), 235264);
}

TEST(SpecDefaults, NullMeansDefault) {
  Spec s = parseOk(R"({"model": {"d_model": null}, "training": null})");
  EXPECT_EQ(s.model.d_model, 768);
  EXPECT_EQ(s.training.batch_size, 8);
}

TEST(SpecDefaults, IntegralFloatsAreIntegers) {
  Spec s = parseOk(R"({"training": {"optimizer": {"warmup_steps": 1e3}, "batch_size": 16.0}})");
  EXPECT_EQ(s.training.optimizer.warmup_steps, 1000);
  EXPECT_EQ(s.training.batch_size, 16);
}

//===----------------------------------------------------------------------------===//
// Types and unknown fields
//===----------------------------------------------------------------------------===//

TEST(SpecTypes, NamesTheExpectedType) {
  EXPECT_EQ(errorOf(R"({"training": {"batch_size": "8"}})"),
            "training.batch_size: expected a positive integer, got \"8\"");
  EXPECT_EQ(errorOf(R"({"training": {"batch_size": 8.5}})"),
            "training.batch_size: expected a positive integer, got 8.5");
  EXPECT_EQ(errorOf(R"({"model": {"tie_embeddings": 1}})"),
            "model.tie_embeddings: expected true or false, got 1");
  EXPECT_EQ(errorOf(R"({"model": {"dropout": "0.1"}})"),
            "model.dropout: expected a number, got \"0.1\"");
  EXPECT_EQ(errorOf(R"({"training": {"precision": 16}})"),
            "training.precision: expected a string, got 16");
  EXPECT_EQ(errorOf(R"({"model": 3})"), "model: expected an object, got 3");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"betas": [0.9]}}})"),
            "training.optimizer.betas: expected an array of 2 numbers, got [0.9]");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"betas": 0.9}}})"),
            "training.optimizer.betas: expected an array of 2 numbers, got 0.9");
  EXPECT_EQ(errorOf(R"({"training": {"seed": -1}})"),
            "training.seed: expected a non-negative integer, got -1");
  EXPECT_EQ(errorOf(R"({"training": {"ignore_index": "x"}})"),
            "training.ignore_index: expected an integer, got \"x\"");
  EXPECT_EQ(errorOf("[1, 2]"), "(root): expected a JSON object, got [1,2]");
  EXPECT_EQ(errorOf(R"({"name": 5})"), "name: expected a string, got 5");
}

TEST(SpecTypes, AllSizesArePositiveIntegers) {
  for (const char *f : {"vocab_size", "context", "d_model", "n_layers", "n_heads", "d_ff"}) {
    for (const char *bad : {"0", "-4"}) {
      std::string text = std::string(R"({"model": {")") + f + "\": " + bad + "}}";
      EXPECT_EQ(errorOf(text),
                std::string("model.") + f + ": expected a positive integer, got " + bad);
    }
  }
  EXPECT_EQ(errorOf(R"({"training": {"batch_size": 0}})"),
            "training.batch_size: expected a positive integer, got 0");
  EXPECT_EQ(errorOf(R"({"training": {"grad_accum": 0}})"),
            "training.grad_accum: expected a positive integer, got 0");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"warmup_steps": -5}}})"),
            "training.optimizer.warmup_steps: expected a non-negative integer, got -5");
  EXPECT_EQ(errorOf(R"({"training": {"attention": {"window": -1}}})"),
            "training.attention.window: expected a non-negative integer, got -1");
}

TEST(SpecTypes, HugeIntegers) {
  EXPECT_EQ(errorOf(R"({"model": {"d_model": 18446744073709551615}})"),
            "model.d_model: 18446744073709551615 is too large");
  EXPECT_EQ(errorOf(R"({"model": {"d_model": 1e300}})"),
            "model.d_model: 1e+300 is too large");
}

TEST(SpecUnknown, DidYouMean) {
  EXPECT_EQ(errorOf(R"({"model": {"d_modle": 768}})"),
            "model.d_modle: unknown field (did you mean 'd_model'?)");
  EXPECT_EQ(errorOf(R"({"model": {"layers": 12}})"),
            "model.layers: unknown field (did you mean 'n_layers'?)");
  EXPECT_EQ(errorOf(R"({"trainig": {}})"), "trainig: unknown field (did you mean 'training'?)");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"betas1": 0.9}}})"),
            "training.optimizer.betas1: unknown field (did you mean 'betas'?)");
  EXPECT_EQ(errorOf(R"({"training": {"attention": {"windw": 3}}})"),
            "training.attention.windw: unknown field (did you mean 'window'?)");
}

TEST(SpecUnknown, DuplicateFields) {
  EXPECT_EQ(errorOf(R"({"model": {"d_model": 512, "n_heads": 8, "d_model": 768}})"),
            "model.d_model: duplicate field (it appears more than once)");
  EXPECT_EQ(errorOf(R"({"training": {}, "training": {}})"),
            "training: duplicate field (it appears more than once)");
  // The same key in different objects, and inside arrays, is fine.
  parseOk(R"({"name": "a", "training": {"attention": {"window": 0}, "optimizer":
             {"name": "adamw", "betas": [0.9, 0.95]}, "seed": 1}})");
  // Paths inside arrays are indexed (an array of objects is still a type error later).
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"betas": [{"a": 1, "a": 2}, 0.9]}}})"),
            "training.optimizer.betas[0].a: duplicate field (it appears more than once)");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"betas": [1, {"a": 1, "a": 2}]}}})"),
            "training.optimizer.betas[1].a: duplicate field (it appears more than once)");
}

// Nesting is bounded before parsing (100 KB of '[' used to grow memory quadratically
// until "out of memory"); the error is located at the bracket that goes over.
TEST(SpecLimits, DeepNestingIsRefusedWithALocation) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(errorOf(deep),
            "<spec>:1:65: arrays and objects nested deeper than 64 levels (byte offset 64; a "
            "spec needs 4)");
  EXPECT_EQ(jsonNestingTooDeep(deep), 64u);
  std::string nested = "{\n  \"model\": ";
  for (int i = 0; i < 70; ++i) nested += "{\"a\": ";
  // Level 65 opens at byte 13 + 6 * 63 = 391, line 2 column 390.
  EXPECT_EQ(errorOf(nested), "<spec>:2:390: arrays and objects nested deeper than 64 levels "
                             "(byte offset 391; a spec needs 4)");
  // Brackets inside strings (escaped quotes included) do not count; 64 levels parse.
  EXPECT_EQ(jsonNestingTooDeep("[\"" + std::string(100, '[') + "\\\"[\"]"),
            std::string::npos);
  EXPECT_EQ(jsonNestingTooDeep(std::string(64, '[') + std::string(64, ']')), std::string::npos);
  EXPECT_EQ(errorOf(R"({"name": ")" + std::string(100, '{') + R"("})").rfind("name: ", 0), 0u);
  // A --set value too.
  EXPECT_EQ(overrideError({"name=" + std::string(70, '[') + std::string(70, ']')}),
            "--set name: the value nests arrays and objects deeper than 64 levels");
}

// One object with 300k keys: the duplicate check is a hash set per object (a linear
// search per key took ~50 s); the first unknown field is reported.
TEST(SpecLimits, ObjectWithManyKeys) {
  std::string text = "{";
  for (int i = 0; i < 300000; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\": 0";
  text += "}";
  EXPECT_EQ(errorOf(text), "k0: unknown field");
  std::string dup = text.substr(0, text.size() - 1) + ", \"k299999\": 1}";
  EXPECT_EQ(errorOf(dup), "k299999: duplicate field (it appears more than once)");
}

TEST(SpecUnknown, NoSuggestionWhenNothingIsClose) {
  EXPECT_EQ(errorOf(R"({"model": {"xyzzy": 1}})"), "model.xyzzy: unknown field");
  EXPECT_EQ(errorOf(R"({"description": "x"})"), "description: unknown field");
}

TEST(SpecUnknown, SuggestsTheRightSection) {
  EXPECT_EQ(errorOf(R"({"model": {"batch_size": 8}})"),
            "model.batch_size: unknown field (did you mean 'training.batch_size'?)");
  EXPECT_EQ(errorOf(R"({"training": {"lr": 0.1}})"),
            "training.lr: unknown field (did you mean 'training.optimizer.lr'?)");
}

TEST(SpecUnknown, UnknownFieldsComeBeforeTypeErrors) {
  EXPECT_EQ(errorOf(R"({"model": {"d_model": "x", "n_head": 2}})"),
            "model.n_head: unknown field (did you mean 'n_heads'?)");
}

//===----------------------------------------------------------------------------===//
// Semantic rules, one exact message each
//===----------------------------------------------------------------------------===//

TEST(SpecRules, DModelDivisibleByHeads) {
  EXPECT_EQ(errorOf(R"({"model": {"d_model": 770, "n_heads": 12}})"),
            "model.d_model: 770 is not divisible by model.n_heads=12");
}

TEST(SpecRules, FlashHeadDims) {
  EXPECT_EQ(errorOf(R"({"model": {"d_model": 1152, "n_heads": 12},
                       "training": {"attention": {"kernel": "flash"}}})"),
            "training.attention.kernel: flash attention supports head dims 32, 64, 128; "
            "model has 96");
  // The same model is fine with naive attention, and head dims 32/64/128 with flash.
  parseOk(R"({"model": {"d_model": 1152, "n_heads": 12}})");
  for (int hd : {32, 64, 128}) {
    std::string t = R"({"model": {"d_model": )" + std::to_string(hd * 4) +
                    R"(, "n_heads": 4}, "training": {"attention": {"kernel": "flash"}}})";
    parseOk(t);
  }
  // The tiny default (head dim 16) is naive only.
  EXPECT_EQ(overrideError({"training.attention.kernel=flash"}),
            "--set training.attention.kernel: flash attention supports head dims 32, 64, 128; "
            "model has 16");
}

TEST(SpecRules, AttentionImpl) {
  // cudnn runs bf16 / f16 flash attention only: naive or fp32 is refused, naming both.
  EXPECT_EQ(errorOf(R"({"model": {"d_model": 256, "n_heads": 4},
                       "training": {"attention": {"kernel": "naive", "impl": "cudnn"},
                                    "precision": "bf16-mixed"}})"),
            "training.attention.impl: \"cudnn\" runs bf16 / f16 flash attention; this spec has "
            "kernel \"naive\" and precision \"bf16-mixed\" (use kernel \"flash\" with a bf16 or "
            "f16 precision, or impl \"auto\")");
  EXPECT_EQ(errorOf(R"({"model": {"d_model": 256, "n_heads": 4},
                       "training": {"attention": {"kernel": "flash", "impl": "cudnn"}}})"),
            "training.attention.impl: \"cudnn\" runs bf16 / f16 flash attention; this spec has "
            "kernel \"flash\" and precision \"fp32\" (use kernel \"flash\" with a bf16 or "
            "f16 precision, or impl \"auto\")");
  parseOk(R"({"model": {"d_model": 256, "n_heads": 4},
             "training": {"attention": {"kernel": "flash", "impl": "cudnn"},
                          "precision": "fp16-mixed"}})");
  // auto and own go with anything; another word is refused with the choices.
  parseOk(R"({"training": {"attention": {"impl": "own"}}})");
  EXPECT_NE(errorOf(R"({"training": {"attention": {"impl": "cuDNN"}}})")
                .find("training.attention.impl"),
            std::string::npos);
}

TEST(SpecRules, Dropout) {
  EXPECT_EQ(errorOf(R"({"model": {"dropout": 1}})"), "model.dropout: 1 is not in [0, 1)");
  EXPECT_EQ(errorOf(R"({"model": {"dropout": -0.1}})"), "model.dropout: -0.1 is not in [0, 1)");
  EXPECT_EQ(parseOk(R"({"model": {"dropout": 0.1}})").model.dropout, 0.1);
}

TEST(SpecRules, EnumsAndSupportedValues) {
  EXPECT_EQ(errorOf(R"({"training": {"precision": "fp8"}})"),
            "training.precision: \"fp8\" is not one of fp32, bf16-mixed, fp16-mixed, bf16");
  EXPECT_EQ(errorOf(R"({"training": {"precision": "bf16_mixed"}})"),
            "training.precision: \"bf16_mixed\" is not one of fp32, bf16-mixed, fp16-mixed, "
            "bf16 (did you mean 'bf16-mixed'?)");
  for (const char *p : {"fp32", "bf16-mixed", "fp16-mixed", "bf16"})
    EXPECT_EQ(parseOk(std::string(R"({"training": {"precision": ")") + p + "\"}}")
                  .training.precision,
              p);
  // The policies' values are the dialect's enums (dialect/TgEnums.td); offload too.
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"offload": "gpu"}}})"),
            "training.optimizer.offload: \"gpu\" is not one of none, cpu (did you mean 'cpu'?)");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"offload": "CPU"}}})"),
            "training.optimizer.offload: \"CPU\" is not one of none, cpu"); // case-sensitive
  EXPECT_EQ(errorOf(R"({"training": {"attention": {"kernel": "sdpa"}}})"),
            "training.attention.kernel: \"sdpa\" is not one of naive, flash");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"decay": "cosin"}}})"),
            "training.optimizer.decay: \"cosin\" is not one of cosine, linear, none "
            "(did you mean 'cosine'?)");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"name": "sgd"}}})"),
            "training.optimizer.name: only \"adamw\" is supported, got \"sgd\"");
  EXPECT_EQ(errorOf(R"({"model": {"positional": "alibi"}})"),
            "model.positional: \"alibi\" is not one of learned, rope");
  EXPECT_EQ(errorOf(R"({"model": {"activation": "relu"}})"),
            "model.activation: \"relu\" is not one of gelu_tanh, silu");
  EXPECT_EQ(errorOf(R"({"model": {"norm": "rms"}})"),
            "model.norm: \"rms\" is not one of layernorm, rmsnorm");
}

/// The Llama family's fields: each rule names its JSON path.
TEST(SpecRules, LlamaFamily) {
  EXPECT_EQ(errorOf(R"({"model": {"n_heads": 4, "n_kv_heads": 3}})"),
            "model.n_kv_heads: 3 does not divide model.n_heads=4 (each key/value head serves "
            "n_heads / n_kv_heads query heads)");
  EXPECT_EQ(errorOf(R"({"model": {"activation": "silu"}})"),
            "model.activation: \"silu\" is supported in the gated MLP only (SwiGLU): set "
            "model.mlp_gated to true");
  EXPECT_EQ(errorOf(R"({"model": {"mlp_gated": true}})"),
            "model.mlp_gated: the gated MLP supports model.activation \"silu\" (SwiGLU) only, "
            "got \"gelu_tanh\"");
  EXPECT_EQ(errorOf(R"({"model": {"positional": "rope", "d_model": 60, "n_heads": 4}})"),
            "model.d_model: rotary position embeddings need an even head dim, got 15");
  EXPECT_EQ(errorOf(R"({"model": {"positional": "rope", "head_dim": 7}})"),
            "model.head_dim: rotary position embeddings need an even head dim, got 7");
  EXPECT_EQ(errorOf(R"({"model": {"positional": "rope", "rope_theta": 1}})"),
            "model.rope_theta: must be > 1, got 1");
  EXPECT_EQ(errorOf(R"({"model": {"rope_scaling": {"factor": 8}}})"),
            "model.rope_scaling.factor: applies to model.positional \"rope\" only");
  EXPECT_EQ(errorOf(R"({"model": {"positional": "rope", "rope_scaling": {"factor": 8,
              "low_freq_factor": 4, "high_freq_factor": 4}}})"),
            "model.rope_scaling.high_freq_factor: 4 must exceed "
            "model.rope_scaling.low_freq_factor=4");
  EXPECT_EQ(errorOf(R"({"model": {"n_kv_heads": -1}})").rfind("model.n_kv_heads:", 0), 0u);
  // head_dim frees d_model from divisibility by n_heads.
  Spec s = parseOk(R"({"model": {"d_model": 48, "n_heads": 2, "head_dim": 32}})");
  EXPECT_EQ(s.model.headDim(), 32);
  EXPECT_EQ(s.model.kvHeads(), 2);
  EXPECT_EQ(errorOf(R"({"model": {"d_model": 50, "n_heads": 4}})"),
            "model.d_model: 50 is not divisible by model.n_heads=4");
}

/// The family's parameter table: shapes, no wpe / ln biases, HF names and column ranges.
TEST(SpecParams, LlamaTable) {
  Spec s = parseOk(R"({"model": {"vocab_size": 100, "context": 16, "d_model": 48,
    "n_layers": 1, "n_heads": 4, "n_kv_heads": 2, "head_dim": 16, "d_ff": 40,
    "tie_embeddings": false, "attention_bias": false, "mlp_bias": false, "norm": "rmsnorm",
    "positional": "rope", "activation": "silu", "mlp_gated": true}})");
  auto ps = modelParameters(s.model);
  std::vector<std::string> names;
  for (const auto &p : ps) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"wte", "layers.0.ln1.weight",
                                              "layers.0.attn.qkv.weight",
                                              "layers.0.attn.proj.weight", "layers.0.ln2.weight",
                                              "layers.0.mlp.fc.weight",
                                              "layers.0.mlp.proj.weight", "ln_f.weight",
                                              "lm_head.weight"}));
  EXPECT_EQ(hfArchitecture(s.model), "LlamaForCausalLM");
  const ParamInfo &qkv = ps[2];
  EXPECT_EQ(qkv.shape, (std::vector<int64_t>{48, (4 + 2 * 2) * 16}));
  ASSERT_EQ(qkv.hf.size(), 3u);
  EXPECT_EQ(qkv.hf[0].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(qkv.hf[1].name, "model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(qkv.hf[1].col_begin, 64);
  EXPECT_EQ(qkv.hf[1].col_end, 96);
  EXPECT_EQ(qkv.hf[2].col_end, 128);
  EXPECT_TRUE(qkv.hf[2].transpose);
  EXPECT_EQ(ps[3].shape, (std::vector<int64_t>{64, 48})); // o_proj: [H hd, D]
  const ParamInfo &fc = ps[5];
  EXPECT_EQ(fc.shape, (std::vector<int64_t>{48, 80}));
  ASSERT_EQ(fc.hf.size(), 2u);
  EXPECT_EQ(fc.hf[0].name, "model.layers.0.mlp.gate_proj.weight");
  EXPECT_EQ(fc.hf[1].col_begin, 40);
  EXPECT_EQ(ps[6].hf[0].name, "model.layers.0.mlp.down_proj.weight");
  // The untied head is [V, D], HF's own layout: whole, not transposed.
  EXPECT_EQ(ps.back().shape, (std::vector<int64_t>{100, 48}));
  EXPECT_EQ(ps.back().hf[0].name, "lm_head.weight");
  EXPECT_FALSE(ps.back().hf[0].transpose);
  int64_t n = 0;
  for (const auto &p : ps) n += p.numel();
  EXPECT_EQ(parameterCount(s.model), n);
  // A mixed family has no HF class, and says why.
  std::string why;
  Spec mixed = parseOk(R"({"model": {"norm": "rmsnorm"}})");
  EXPECT_EQ(hfArchitecture(mixed.model, &why), "");
  EXPECT_NE(why.find("no Hugging Face class"), std::string::npos);
  for (const auto &p : modelParameters(mixed.model)) EXPECT_TRUE(p.hf.empty()) << p.name;
}

/// GPT-2's table names its transformers tensors (Conv1D layout: whole, untransposed).
TEST(SpecParams, Gpt2HfNames) {
  Spec s = parseOk(R"({"model": {"n_layers": 1, "tie_embeddings": false}})");
  auto ps = modelParameters(s.model);
  EXPECT_EQ(hfArchitecture(s.model), "GPT2LMHeadModel");
  EXPECT_EQ(ps[0].hf[0].name, "transformer.wte.weight");
  EXPECT_EQ(ps[1].hf[0].name, "transformer.wpe.weight");
  for (const auto &p : ps) {
    ASSERT_EQ(p.hf.size(), 1u) << p.name;
    EXPECT_FALSE(p.hf[0].transpose) << p.name; // Conv1D [in, out]; lm_head [V, D] as HF's
  }
  EXPECT_EQ(ps.back().name, "lm_head.weight");
  EXPECT_EQ(ps.back().shape, (std::vector<int64_t>{50304, 768}));
  EXPECT_EQ(ps.back().hf[0].name, "lm_head.weight");
}

TEST(SpecRules, Window) {
  EXPECT_EQ(errorOf(R"({"model": {"context": 64}, "training": {"attention": {"window": 65}}})"),
            "training.attention.window: 65 exceeds model.context=64");
  EXPECT_EQ(parseOk(R"({"model": {"context": 64}, "training": {"attention": {"window": 64}}})")
                .training.attention.window,
            64);
}

TEST(SpecRules, Checkpointing) {
  for (const char *ok : {"none", "gelu", "layer", "layer-attn", "selective", "budget:1000", "budget:512MiB",
                         "budget:2GiB", "budget:4KiB"})
    parseOk(std::string(R"({"training": {"checkpointing": ")") + ok + "\"}}");
  EXPECT_EQ(errorOf(R"({"training": {"checkpointing": "full"}})"),
            "training.checkpointing: \"full\" is not one of none, gelu, layer, layer-attn, selective, "
            "budget:<bytes>, auto, auto:<memory>");
  EXPECT_EQ(errorOf(R"({"training": {"checkpointing": "layers"}})"),
            "training.checkpointing: \"layers\" is not one of none, gelu, layer, layer-attn, selective, "
            "budget:<bytes>, auto, auto:<memory> (did you mean 'layer'?)");
  const std::string budgetMsg =
      " is not a valid budget: expected budget:<positive integer bytes>, with an optional "
      "suffix KiB, MiB or GiB (budget:512MiB)";
  for (const char *bad : {"budget:", "budget:0", "budget:-5", "budget:2GB", "budget:1.5GiB",
                          "budget:99999999999999999999", "budget"})
    EXPECT_EQ(errorOf(std::string(R"({"training": {"checkpointing": ")") + bad + "\"}}"),
              std::string("training.checkpointing: \"") + bad + "\"" + budgetMsg);
  int64_t bytes = 0;
  EXPECT_TRUE(parseCheckpointBudget("budget:512MiB", bytes));
  EXPECT_EQ(bytes, 512LL << 20);
  EXPECT_TRUE(parseCheckpointBudget("budget:3GiB", bytes));
  EXPECT_EQ(bytes, 3LL << 30);
  EXPECT_TRUE(parseCheckpointBudget("budget:7", bytes));
  EXPECT_EQ(bytes, 7);
  EXPECT_FALSE(parseCheckpointBudget("layer", bytes));
  // auto:<memory>: the device's whole memory, the same syntax; tgc resolves it to a policy
  // (test/e2e/checkpoint-auto.test).
  // Bare auto (the memory tgc knows) is the default.
  for (const char *ok : {"auto", "auto:80GiB", "auto:24000000000", "auto:512MiB"})
    parseOk(std::string(R"({"training": {"checkpointing": ")") + ok + "\"}}");
  EXPECT_EQ(Spec().training.checkpointing, "auto");
  const std::string autoMsg =
      " is not a valid auto policy: expected auto (the memory tgc knows) or auto:<the device's "
      "whole memory in bytes>, with an optional suffix KiB, MiB or GiB (auto:80GiB)";
  for (const char *bad : {"automatic", "auto:", "auto:0", "auto:80GB", "auto:budget:1GiB"})
    EXPECT_EQ(errorOf(std::string(R"({"training": {"checkpointing": ")") + bad + "\"}}"),
              std::string("training.checkpointing: \"") + bad + "\"" + autoMsg);
  EXPECT_TRUE(parseCheckpointAuto("auto:80GiB", bytes));
  EXPECT_EQ(bytes, 80LL << 30);
  EXPECT_FALSE(parseCheckpointAuto("budget:80GiB", bytes));
}

TEST(SpecRules, Optimizer) {
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"lr": 0}}})"),
            "training.optimizer.lr: must be > 0, got 0");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"lr": 0.001, "min_lr": 0.01}}})"),
            "training.optimizer.min_lr: 0.01 is not in [0, training.optimizer.lr=0.001]");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"min_lr": -1e-5}}})"),
            "training.optimizer.min_lr: -1e-05 is not in [0, training.optimizer.lr=0.0006]");
  parseOk(R"({"training": {"optimizer": {"lr": 0.001, "min_lr": 0.001}}})");
  parseOk(R"({"training": {"optimizer": {"min_lr": 0}}})");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"betas": [1.0, 0.95]}}})"),
            "training.optimizer.betas[0]: 1 is not in [0, 1)");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"betas": [0.9, -0.5]}}})"),
            "training.optimizer.betas[1]: -0.5 is not in [0, 1)");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"eps": 0}}})"),
            "training.optimizer.eps: must be > 0, got 0");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"weight_decay": -0.1}}})"),
            "training.optimizer.weight_decay: must be >= 0, got -0.1");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"grad_clip": -1}}})"),
            "training.optimizer.grad_clip: must be >= 0, got -1");
  Spec s = parseOk(R"({"training": {"optimizer": {"grad_clip": 0, "weight_decay": 0,
                       "warmup_steps": 0, "decay": "none", "decay_embeddings": true}}})");
  EXPECT_EQ(s.training.optimizer.grad_clip, 0);
  EXPECT_EQ(s.training.optimizer.decay, "none");
  EXPECT_TRUE(s.training.optimizer.decay_embeddings);
}

// The compiler stores these fields as float32: a value that would overflow, become 0
// (lr=1e-50 trained with lr 0; grad_clip=1e-50 turned clipping off) or round a beta to
// 1 is refused at its JSON path instead of later in the IR verifier.
TEST(SpecRules, Float32Narrowing) {
  const std::string below = " is below float32's smallest normal number (1.17549e-38) and "
                            "would become 0; tgc stores this field as a 32-bit float";
  const std::string over = " overflows float32 (largest 3.40282e+38); tgc stores this field "
                           "as a 32-bit float";
  EXPECT_EQ(overrideError({"training.optimizer.min_lr=0", "training.optimizer.lr=1e-50"}),
            "--set training.optimizer.lr: 1e-50" + below);
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"lr": 1e300, "min_lr": 0}}})"),
            "training.optimizer.lr: 1e+300" + over);
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"min_lr": 1e-45}}})"),
            "training.optimizer.min_lr: 1e-45" + below);
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"grad_clip": 1e-50}}})"),
            "training.optimizer.grad_clip: 1e-50" + below);
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"grad_clip": 1e39}}})"),
            "training.optimizer.grad_clip: 1e+39" + over);
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"eps": 1e-50}}})"),
            "training.optimizer.eps: 1e-50" + below);
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"weight_decay": 1e-40}}})"),
            "training.optimizer.weight_decay: 1e-40" + below);
  EXPECT_EQ(errorOf(R"({"model": {"layer_norm_eps": 1e-300}})"),
            "model.layer_norm_eps: 1e-300" + below);
  EXPECT_EQ(errorOf(R"({"model": {"dropout": 1e-39}})"), "model.dropout: 1e-39" + below);
  EXPECT_EQ(errorOf(R"({"model": {"dropout": 0.99999999}})"),
            "model.dropout: 0.99999999 rounds to 1 in float32, which is not < 1; tgc stores "
            "this field as a 32-bit float");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"betas": [0.9, 0.99999999]}}})"),
            "training.optimizer.betas[1]: 0.99999999 rounds to 1 in float32, which is not "
            "< 1; tgc stores this field as a 32-bit float");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"betas": [0.999999999999, 0.9]}}})"),
            "training.optimizer.betas[0]: 0.999999999999 rounds to 1 in float32, which is "
            "not < 1; tgc stores this field as a 32-bit float");
  EXPECT_EQ(errorOf(R"({"model": {"positional": "rope", "rope_theta": 1.00000001}})"),
            "model.rope_theta: 1.00000001 rounds to 1 in float32, which is not > 1; tgc "
            "stores this field as a 32-bit float");
  EXPECT_EQ(errorOf(R"({"model": {"positional": "rope", "rope_theta": 1e39}})"),
            "model.rope_theta: 1e+39" + over);
  EXPECT_EQ(errorOf(R"({"model": {"positional": "rope", "rope_scaling": {"factor": 8,
                       "low_freq_factor": 1, "high_freq_factor": 1.00000001}}})"),
            "model.rope_scaling.high_freq_factor: 1.00000001 and "
            "model.rope_scaling.low_freq_factor=1 are equal in float32; tgc stores them as "
            "32-bit floats");
  // The extremes that survive: the smallest normal float32, the largest float32 below 1
  // (0.99999994), zero where zero is allowed.
  Spec s = parseOk(R"({"training": {"optimizer": {"lr": 1.2e-38, "min_lr": 0, "eps": 1.2e-38,
                       "grad_clip": 0, "weight_decay": 0, "betas": [0, 0.99999994]}},
                       "model": {"layer_norm_eps": 3e38}})");
  EXPECT_EQ((float)s.training.optimizer.beta2, 0.99999994f);
  EXPECT_GT((float)s.training.optimizer.lr, 0.0f);
}

TEST(SpecRules, LayerNormEps) {
  EXPECT_EQ(errorOf(R"({"model": {"layer_norm_eps": 0}})"),
            "model.layer_norm_eps: must be > 0, got 0");
}

TEST(SpecRules, VocabAndIgnoreIndex) {
  EXPECT_EQ(errorOf(R"({"model": {"vocab_size": 2147483648}})"),
            "model.vocab_size: 2147483648 exceeds 2^31-1");
  parseOk(R"({"model": {"vocab_size": 2147483647, "d_model": 8, "n_heads": 1, "d_ff": 8,
             "n_layers": 1, "context": 4}, "training": {"batch_size": 1}})");
  EXPECT_EQ(errorOf(R"({"model": {"vocab_size": 100}, "training": {"ignore_index": 100}})"),
            "training.ignore_index: 100 must be -1 or in [0, model.vocab_size=100)");
  EXPECT_EQ(errorOf(R"({"training": {"ignore_index": -2}})"),
            "training.ignore_index: -2 must be -1 or in [0, model.vocab_size=50304)");
  EXPECT_EQ(parseOk(R"({"model": {"vocab_size": 100}, "training": {"ignore_index": 99}})")
                .training.ignore_index,
            99);
}

TEST(SpecRules, LossScaling) {
  Spec s = parseOk(R"({"training": {"precision": "fp16-mixed",
                                    "loss_scaling": {"init": 1024, "growth_interval": 50}}})");
  EXPECT_EQ(s.training.loss_scale_init, 1024.0);
  EXPECT_EQ(s.training.loss_scale_growth_interval, 50);
  EXPECT_EQ(errorOf(R"({"training": {"loss_scaling": {"init": 0.5}}})"),
            "training.loss_scaling.init: must be in [1, 1e38] (a float32 power of two is "
            "usual), got 0.5");
  EXPECT_NE(errorOf(R"({"training": {"loss_scaling": {"growth_interval": 0}}})").find(
                "training.loss_scaling.growth_interval"),
            std::string::npos);
}

TEST(SpecRules, SizeLimits) {
  // Refused before any IR is built, naming the field, the limit and why.
  EXPECT_EQ(errorOf(R"({"model": {"n_layers": 100000}})"),
            "model.n_layers: 100000 exceeds the limit of 1024 layers (the IR and the memory "
            "plan grow with every layer; see docs/spec.md, Limits)");
  parseOk(R"({"model": {"n_layers": 1024, "d_model": 8, "n_heads": 1, "d_ff": 8,
             "vocab_size": 16, "context": 4}, "training": {"batch_size": 1}})");
  EXPECT_EQ(errorOf(R"({"model": {"d_model": 1000000, "n_heads": 1, "d_ff": 1000000}})"),
            "model: 7.21e+13 parameters exceed the limit of 1e12 (each needs 16 bytes of values, "
            "gradients and AdamW state)");
  EXPECT_EQ(errorOf(R"({"model": {"context": 1000000}, "training": {"batch_size": 1000000}})"),
            "training.batch_size: 1000000 sequences of 1000000 tokens make a tensor of 1.2e+19 "
            "elements (logits or attention scores), over the limit of 2^40; lower the "
            "micro-batch and raise training.grad_accum");
}

TEST(SpecRules, Distributed) {
  Spec d = parseOk("{}");
  EXPECT_EQ(d.training.distributed.ranks, 1);
  EXPECT_EQ(d.training.distributed.zero, 0);
  Spec s = parseOk(R"({"training": {"distributed": {"ranks": 4, "zero": 0}}})");
  EXPECT_EQ(s.training.distributed.ranks, 4);
  EXPECT_EQ(parseOk("{}", {"training.distributed.ranks=2"}).training.distributed.ranks, 2);
  EXPECT_EQ(parseOk(R"({"training": {"distributed": {"ranks": 64}}})").training.distributed.ranks,
            64);
  EXPECT_EQ(errorOf(R"({"training": {"distributed": {"ranks": 65}}})"),
            "training.distributed.ranks: 65 exceeds the limit of 64 ranks");
  EXPECT_NE(errorOf(R"({"training": {"distributed": {"ranks": 0}}})")
                .find("training.distributed.ranks: "),
            std::string::npos);
  EXPECT_EQ(parseOk("{}", {"training.distributed.ranks=2", "training.distributed.zero=1"})
                .training.distributed.zero,
            1);
  for (int z : {2, 3})
    EXPECT_EQ(parseOk("{}", {"training.distributed.ranks=2",
                             "training.distributed.zero=" + std::to_string(z)})
                  .training.distributed.zero,
              z);
  EXPECT_EQ(errorOf(R"({"training": {"distributed": {"zero": 4}}})"),
            "training.distributed.zero: 4 is not a ZeRO stage; use 0 (replicated), 1 (AdamW "
            "state sharded), 2 (+ gradients sharded) or 3 (+ parameters sharded)");
  EXPECT_EQ(overrideError({"training.distributed.zero=7"}),
            "--set training.distributed.zero: 7 is not a ZeRO stage; use 0 (replicated), 1 "
            "(AdamW state sharded), 2 (+ gradients sharded) or 3 (+ parameters sharded)");
  EXPECT_EQ(errorOf(R"({"training": {"distributed": {"rank": 2}}})"),
            "training.distributed.rank: unknown field (did you mean 'ranks'?)");
  EXPECT_NE(errorOf(R"({"training": {"distributed": {"ranks": "2"}}})")
                .find("training.distributed.ranks"),
            std::string::npos);
}

TEST(SpecRules, ParameterCountOverflow) {
  EXPECT_EQ(errorOf(R"({"model": {"d_model": 2000000000, "n_heads": 1, "n_layers": 2000000000}})"),
            "model: the parameter count overflows a 64-bit integer");
}

TEST(SpecRules, Name) {
  EXPECT_EQ(parseOk(R"({"name": "gpt2-small_v1.0"})").name, "gpt2-small_v1.0");
  EXPECT_EQ(errorOf(R"({"name": "my model"})"),
            "name: must be non-empty and use only letters, digits, '_', '-' and '.', got "
            "\"my model\"");
  EXPECT_EQ(errorOf(R"({"name": ""})"),
            "name: must be non-empty and use only letters, digits, '_', '-' and '.', got \"\"");
}

//===----------------------------------------------------------------------------===//
// Syntax errors
//===----------------------------------------------------------------------------===//

TEST(SpecSyntax, LineAndColumn) {
  Spec s;
  SpecError err;
  //                 line 1   line 2                  line 3
  std::string text = "{\n  \"model\": {\"d_model\": 768,}\n}\n";
  ASSERT_FALSE(parseSpec(text, {}, s, err, ""));
  // The '}' after the trailing comma is on line 2, column 28.
  EXPECT_EQ(err.path, "line 2, column 28");
  EXPECT_EQ(err.message,
            "syntax error while parsing object key - unexpected '}'; expected string literal");

  ASSERT_FALSE(parseSpec(text, {}, s, err, "spec.json"));
  EXPECT_EQ(err.path, "spec.json:2:28");
  EXPECT_EQ(formatSpecError("spec.json", err),
            "spec.json:2:28: syntax error while parsing object key - unexpected '}'; expected "
            "string literal");
}

TEST(SpecSyntax, FirstLineAndBadLiteral) {
  Spec s;
  SpecError err;
  ASSERT_FALSE(parseSpec("{\"name\": tru}", {}, s, err, "x.json"));
  EXPECT_EQ(err.path, "x.json:1:13");
  EXPECT_NE(err.message.find("syntax error while parsing value - invalid literal"),
            std::string::npos)
      << err.message;
}

TEST(SpecSyntax, EmptyAndTruncatedInput) {
  Spec s;
  SpecError err;
  ASSERT_FALSE(parseSpec("", {}, s, err, "e.json"));
  EXPECT_EQ(err.path, "e.json:1:1");
  EXPECT_NE(err.message.find("unexpected end of input"), std::string::npos) << err.message;
  ASSERT_FALSE(parseSpec("{\n  \"model\": {\n", {}, s, err, "t.json"));
  EXPECT_EQ(err.path, "t.json:3:1");
  EXPECT_NE(err.message.find("unexpected end of input"), std::string::npos) << err.message;
}

TEST(SpecSyntax, ColumnCountsBytesAfterLastNewline) {
  Spec s;
  SpecError err;
  ASSERT_FALSE(parseSpec("{\n\n    \"a\" 1}", {}, s, err, ""));
  EXPECT_EQ(err.path, "line 3, column 9");
}

//===----------------------------------------------------------------------------===//
// Overrides
//===----------------------------------------------------------------------------===//

TEST(SpecOverrides, NumbersStringsArraysBools) {
  Spec s = parseOk(defaultSpecJson(),
                   {"training.batch_size=32", "training.precision=bf16-mixed",
                    "training.optimizer.betas=[0.8,0.99]", "model.tie_embeddings=false",
                    "training.optimizer.lr=3e-4", "training.checkpointing=budget:64MiB"});
  EXPECT_EQ(s.training.batch_size, 32);
  EXPECT_EQ(s.training.precision, "bf16-mixed");
  EXPECT_DOUBLE_EQ(s.training.optimizer.beta1, 0.8);
  EXPECT_DOUBLE_EQ(s.training.optimizer.beta2, 0.99);
  EXPECT_FALSE(s.model.tie_embeddings);
  EXPECT_DOUBLE_EQ(s.training.optimizer.lr, 3e-4);
  EXPECT_EQ(s.training.checkpointing, "budget:64MiB");
  // The filled JSON reflects the overrides.
  json j = json::parse(s.json);
  EXPECT_EQ(j["training"]["batch_size"], 32);
  EXPECT_EQ(j["training"]["precision"], "bf16-mixed");
}

TEST(SpecOverrides, NestedCreatesIntermediateObjects) {
  // "{}" has no training object; the override creates training and attention.
  Spec s = parseOk("{}", {"training.attention.window=128", "training.attention.kernel=\"flash\""});
  EXPECT_EQ(s.training.attention.window, 128);
  EXPECT_EQ(s.training.attention.kernel, "flash");
}

TEST(SpecOverrides, LaterWinsAndNullResets) {
  Spec s = parseOk(defaultSpecJson(), {"training.batch_size=4", "training.batch_size=6"});
  EXPECT_EQ(s.training.batch_size, 6);
  s = parseOk(defaultSpecJson(), {"model.vocab_size=null"});
  EXPECT_EQ(s.model.vocab_size, 50304);
}

TEST(SpecOverrides, StringFieldsTakeRawText) {
  Spec s = parseOk(defaultSpecJson(), {"name=123"});
  EXPECT_EQ(s.name, "123");
  s = parseOk(defaultSpecJson(), {"name=\"quoted\""});
  EXPECT_EQ(s.name, "quoted");
}

TEST(SpecOverrides, WholeObject) {
  Spec s = parseOk(defaultSpecJson(), {R"(training.optimizer={"lr": 0.01, "min_lr": 0})"});
  EXPECT_DOUBLE_EQ(s.training.optimizer.lr, 0.01);
  EXPECT_EQ(s.training.optimizer.warmup_steps, 100);  // replaced object: default again
}

TEST(SpecOverrides, UnknownPath) {
  EXPECT_EQ(overrideError({"training.batchsize=4"}),
            "--set training.batchsize: unknown field (did you mean 'batch_size'?)");
  EXPECT_EQ(overrideError({"model.foo.bar=1"}), "--set model.foo: unknown field");
  EXPECT_EQ(overrideError({"model.d_model.x=1"}),
            "--set model.d_model.x: model.d_model is not an object (it has no field 'x')");
  EXPECT_EQ(overrideError({"trainng.seed=1"}),
            "--set trainng: unknown field (did you mean 'training'?)");
}

TEST(SpecOverrides, Malformed) {
  EXPECT_EQ(overrideError({"training.batch_size"}),
            "--set training.batch_size: expected PATH=VALUE (e.g. training.batch_size=16)");
  EXPECT_EQ(overrideError({"=4"}), "--set =4: empty path");
}

TEST(SpecOverrides, BadValuesBlameTheOverride) {
  EXPECT_EQ(overrideError({"training.batch_size=abc"}),
            "--set training.batch_size: expected a positive integer, got \"abc\"");
  EXPECT_EQ(overrideError({"training.optimizer.betas=[0.9,1.5]"}),
            "--set training.optimizer.betas[1]: 1.5 is not in [0, 1)");
  EXPECT_EQ(overrideError({"model.d_model=770", "model.n_heads=12"}),
            "--set model.d_model: 770 is not divisible by model.n_heads=12");
  // An error in a field the overrides did not touch keeps its JSON path.
  EXPECT_EQ(errorOf(R"({"model": {"d_model": 770}})", {"training.batch_size=4"}),
            "model.d_model: 770 is not divisible by model.n_heads=12");
}

// "--set training.optimizer.betas[1]=0.99": the indexed paths that tgc's own messages
// print are accepted (it was "unknown field").
TEST(SpecOverrides, ArrayElement) {
  Spec s = parseOk(defaultSpecJson(), {"training.optimizer.betas[1]=0.99"});
  EXPECT_DOUBLE_EQ(s.training.optimizer.beta1, 0.9);  // the default kept
  EXPECT_DOUBLE_EQ(s.training.optimizer.beta2, 0.99);
  s = parseOk(R"({"training": {"optimizer": {"betas": [0.8, 0.9]}}})",
              {"training.optimizer.betas[0]=0.7"});
  EXPECT_DOUBLE_EQ(s.training.optimizer.beta1, 0.7);  // the spec's other element kept
  EXPECT_DOUBLE_EQ(s.training.optimizer.beta2, 0.9);
  s = parseOk("{}", {"training.optimizer.betas=[0.5,0.6]", "training.optimizer.betas[1]=0.7"});
  EXPECT_DOUBLE_EQ(s.training.optimizer.beta1, 0.5);
  EXPECT_DOUBLE_EQ(s.training.optimizer.beta2, 0.7);
  // Errors in the element blame the indexed override.
  EXPECT_EQ(overrideError({"training.optimizer.betas[1]=1.5"}),
            "--set training.optimizer.betas[1]: 1.5 is not in [0, 1)");
  EXPECT_EQ(overrideError({"training.optimizer.betas[0]=x"}),
            "--set training.optimizer.betas: expected an array of 2 numbers, got [\"x\",0.95]");
  EXPECT_EQ(overrideError({"training.optimizer.betas[2]=0.9"}),
            "--set training.optimizer.betas[2]: index 2 is out of range: "
            "training.optimizer.betas has 2 elements ([0] and [1])");
  EXPECT_EQ(overrideError({"training.optimizer.lr[0]=0.1"}),
            "--set training.optimizer.lr[0]: training.optimizer.lr is not an array (only an "
            "array field takes an index)");
  EXPECT_EQ(overrideError({"training.optimizer.betas[-1]=0.9"}),
            "--set training.optimizer.betas[-1]: expected an array index in [] (e.g. "
            "training.optimizer.betas[1])");
  EXPECT_EQ(overrideError({"training[0].seed=1"}),
            "--set training[0].seed: only the last field of a path can be indexed (training[0] "
            "is not an array)");
  EXPECT_EQ(overrideError({"training.optimizer.betas[1]=null"}),
            "--set training.optimizer.betas[1]: an element cannot be reset alone; use --set "
            "training.optimizer.betas=null to reset the whole array");
  EXPECT_EQ(overrideError({"training.optimizer.betas[1]=0.99", "model.betas[0]=1"}),
            "--set model.betas: unknown field (did you mean 'training.optimizer.betas'?)");
  EXPECT_EQ(errorOf(R"({"training": {"optimizer": {"betas": 0.9}}})",
                    {"training.optimizer.betas[1]=0.99"}),
            "training.optimizer.betas: expected an array of 2 numbers, got 0.9");
}

TEST(SpecOverrides, IntermediateNotAnObject) {
  EXPECT_EQ(errorOf(R"({"training": 5})", {"training.seed=1"}),
            "training: expected an object, got 5");
}

//===----------------------------------------------------------------------------===//
// Files and error formatting
//===----------------------------------------------------------------------------===//

TEST(SpecFiles, UnreadableFile) {
  Spec s;
  SpecError err;
  ASSERT_FALSE(loadSpecFile("/nonexistent/dir/spec.json", {}, s, err));
  EXPECT_EQ(err.path, "/nonexistent/dir/spec.json");
  EXPECT_EQ(err.message, "cannot read file");
  EXPECT_EQ(formatSpecError("/nonexistent/dir/spec.json", err),
            "/nonexistent/dir/spec.json: cannot read file");
  ASSERT_FALSE(loadSpecFile("/", {}, s, err));
  EXPECT_EQ(err.str(), "/: cannot read file");
}

TEST(SpecFiles, SemanticAndSyntaxErrorsFromAFile) {
  char name[] = "/tmp/tgc-spec-test-XXXXXX";
  int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  close(fd);
  std::string file = name;
  {
    std::ofstream(file) << "{\"model\": {\"d_model\": 770}}";
  }
  Spec s;
  SpecError err;
  ASSERT_FALSE(loadSpecFile(file, {}, s, err));
  EXPECT_EQ(formatSpecError(file, err),
            file + ": model.d_model: 770 is not divisible by model.n_heads=12");
  {
    std::ofstream(file) << "{\n  \"model\": {\"d_model\" 770}}";
  }
  ASSERT_FALSE(loadSpecFile(file, {}, s, err));
  EXPECT_EQ(err.path, file + ":2:25");
  ASSERT_FALSE(loadSpecFile(file, {"training.batchsize=3"}, s, err));
  EXPECT_EQ(err.path, file + ":2:25");  // syntax errors come first
  {
    std::ofstream(file) << defaultSpecJson();
  }
  ASSERT_FALSE(loadSpecFile(file, {"training.batchsize=3"}, s, err));
  EXPECT_EQ(formatSpecError(file, err),
            "--set training.batchsize: unknown field (did you mean 'batch_size'?)");
  ASSERT_TRUE(loadSpecFile(file, {}, s, err)) << err.str();
  EXPECT_EQ(s.name, "tiny");
  std::remove(file.c_str());
}

//===----------------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------------===//

TEST(SpecParams, Gpt2SmallCount) {
  ModelSpec m;  // the struct defaults are GPT-2 small with vocab 50304
  EXPECT_EQ(parameterCount(m), 124475904);
  int64_t sum = 0;
  for (const auto &p : modelParameters(m)) sum += p.numel();
  EXPECT_EQ(sum, 124475904);
  EXPECT_EQ(sum, closedFormCount(50304, 1024, 768, 12, 3072, true));
}

TEST(SpecParams, NamesShapesAndOrder) {
  ModelSpec m;
  m.vocab_size = 100;
  m.context = 16;
  m.d_model = 8;
  m.n_layers = 2;
  m.n_heads = 2;
  m.d_ff = 32;
  auto ps = modelParameters(m);
  std::vector<std::string> names;
  for (const auto &p : ps) names.push_back(p.name);
  std::vector<std::string> expected = {"wte", "wpe"};
  for (int i = 0; i < 2; ++i)
    for (const char *n : {"ln1.weight", "ln1.bias", "attn.qkv.weight", "attn.qkv.bias",
                          "attn.proj.weight", "attn.proj.bias", "ln2.weight", "ln2.bias",
                          "mlp.fc.weight", "mlp.fc.bias", "mlp.proj.weight", "mlp.proj.bias"})
      expected.push_back("layers." + std::to_string(i) + "." + n);
  expected.push_back("ln_f.weight");
  expected.push_back("ln_f.bias");
  EXPECT_EQ(names, expected);

  std::map<std::string, std::vector<int64_t>> shape;
  for (const auto &p : ps) shape[p.name] = p.shape;
  EXPECT_EQ(shape["wte"], (std::vector<int64_t>{100, 8}));
  EXPECT_EQ(shape["wpe"], (std::vector<int64_t>{16, 8}));
  EXPECT_EQ(shape["layers.1.ln1.weight"], (std::vector<int64_t>{8}));
  EXPECT_EQ(shape["layers.1.attn.qkv.weight"], (std::vector<int64_t>{8, 24}));
  EXPECT_EQ(shape["layers.1.attn.qkv.bias"], (std::vector<int64_t>{24}));
  EXPECT_EQ(shape["layers.1.attn.proj.weight"], (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(shape["layers.1.mlp.fc.weight"], (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(shape["layers.1.mlp.fc.bias"], (std::vector<int64_t>{32}));
  EXPECT_EQ(shape["layers.1.mlp.proj.weight"], (std::vector<int64_t>{32, 8}));
  EXPECT_EQ(shape["layers.1.mlp.proj.bias"], (std::vector<int64_t>{8}));
  EXPECT_EQ(shape["ln_f.bias"], (std::vector<int64_t>{8}));
}

TEST(SpecParams, UntiedAndBiaslessVariants) {
  ModelSpec m;
  m.tie_embeddings = false;
  auto ps = modelParameters(m);
  ASSERT_FALSE(ps.empty());
  EXPECT_EQ(ps.back().name, "lm_head.weight");
  EXPECT_EQ(ps.back().shape, (std::vector<int64_t>{50304, 768})); // [V, D], as wte
  EXPECT_EQ(parameterCount(m), 124475904 + 50304 * 768);

  m.attention_bias = false;
  std::set<std::string> names;
  for (const auto &p : modelParameters(m)) names.insert(p.name);
  EXPECT_EQ(names.count("layers.0.attn.qkv.bias"), 0u);
  EXPECT_EQ(names.count("layers.0.attn.proj.bias"), 0u);
  EXPECT_EQ(names.count("layers.0.mlp.fc.bias"), 1u);
  EXPECT_EQ(parameterCount(m), closedFormCount(50304, 1024, 768, 12, 3072, false, false, true));

  m.mlp_bias = false;
  names.clear();
  for (const auto &p : modelParameters(m)) names.insert(p.name);
  EXPECT_EQ(names.count("layers.11.mlp.fc.bias"), 0u);
  EXPECT_EQ(names.count("layers.11.mlp.proj.bias"), 0u);
  EXPECT_EQ(names.count("layers.11.ln2.bias"), 1u);  // layernorm biases stay
  EXPECT_EQ(parameterCount(m), closedFormCount(50304, 1024, 768, 12, 3072, false, false, false));
}

TEST(SpecParams, NonStandardFfn) {
  ModelSpec m;
  m.d_ff = 1000;
  EXPECT_EQ(parameterCount(m), closedFormCount(50304, 1024, 768, 12, 1000, true));
}

//===----------------------------------------------------------------------------===//
// Example specs
//===----------------------------------------------------------------------------===//

struct ExampleCase {
  const char *file;
  int64_t V, C, D, L, H, F;
  bool tied;
  int64_t expectedTotal;  // the closed formula, worked by hand, as a cross-check
};

TEST(SpecExamples, ParseWithTextbookCounts) {
  std::string root = sourceDir();
  ASSERT_FALSE(root.empty()) << "set TGC_SOURCE_DIR or run from inside the source tree";
  const ExampleCase cases[] = {
      {"gpt2-small.json", 50304, 1024, 768, 12, 12, 3072, true, 124475904},
      {"lab-12l-768-ctx256.json", 32000, 256, 768, 12, 12, 3072, false, 134404608},
      {"lab-6l-512.json", 10000, 512, 512, 6, 8, 2048, true, 24297472},
      {"lab-4l-256.json", 50257, 256, 256, 4, 8, 1024, true, 16090880},
      {"lab-12l-768-ctx1024.json", 30000, 1024, 768, 12, 12, 3072, true, 108882432},
      {"tiny.json", 2048, 64, 64, 2, 4, 256, true, 235264},
  };
  // The Llama family: the published parameter counts of SmolLM2-135M and Llama 3.2 1B.
  for (auto [file, total] : {std::pair<const char *, int64_t>{"smollm2-135m.json", 134515008},
                             {"llama3.2-1b.json", 1235814400}}) {
    SCOPED_TRACE(file);
    Spec s;
    SpecError err;
    ASSERT_TRUE(loadSpecFile(root + "/examples/" + file, {}, s, err)) << err.str();
    EXPECT_EQ(parameterCount(s.model), total);
  }
  for (const auto &c : cases) {
    SCOPED_TRACE(c.file);
    Spec s;
    SpecError err;
    ASSERT_TRUE(loadSpecFile(root + "/examples/" + c.file, {}, s, err)) << err.str();
    EXPECT_EQ(s.model.vocab_size, c.V);
    EXPECT_EQ(s.model.context, c.C);
    EXPECT_EQ(s.model.d_model, c.D);
    EXPECT_EQ(s.model.n_layers, c.L);
    EXPECT_EQ(s.model.n_heads, c.H);
    EXPECT_EQ(s.model.d_ff, c.F);
    EXPECT_EQ(s.model.tie_embeddings, c.tied);
    int64_t formula = closedFormCount(c.V, c.C, c.D, c.L, c.F, c.tied);
    EXPECT_EQ(formula, c.expectedTotal);
    EXPECT_EQ(parameterCount(s.model), formula);
  }
}

TEST(SpecExamples, Gpt2SmallTrainingSettings) {
  std::string root = sourceDir();
  ASSERT_FALSE(root.empty());
  Spec s;
  SpecError err;
  const std::string path = root + "/examples/gpt2-small.json";
  ASSERT_TRUE(loadSpecFile(path, {}, s, err)) << err.str();
  EXPECT_EQ(s.name, "gpt2-small");
  EXPECT_EQ(s.training.batch_size, 16);
  EXPECT_EQ(s.training.attention.kernel, "flash");
  EXPECT_TRUE(s.model.attention_bias);
  EXPECT_TRUE(s.model.mlp_bias);
  // Every precision and checkpointing policy compiles now: the spec keeps the file's own
  // (absent = the default), and any of them can be set on the example.
  std::ifstream in(path);
  json raw = json::parse(in);
  EXPECT_EQ(s.training.precision, raw["training"].value("precision", "fp32"));
  EXPECT_EQ(s.training.checkpointing, raw["training"].value("checkpointing", "none"));
  for (const char *p : {"fp32", "bf16-mixed", "fp16-mixed", "bf16"}) {
    Spec o;
    ASSERT_TRUE(loadSpecFile(path, {std::string("training.precision=") + p}, o, err)) << err.str();
    EXPECT_EQ(o.training.precision, p);
    EXPECT_EQ(json::parse(o.json)["training"]["precision"], p);
  }
  for (const char *c : {"none", "gelu", "selective", "layer", "budget:4GiB"}) {
    Spec o;
    ASSERT_TRUE(loadSpecFile(path, {std::string("training.checkpointing=") + c}, o, err))
        << err.str();
    EXPECT_EQ(o.training.checkpointing, c);
  }
}

TEST(SpecExamples, TinyFileEqualsTheDefault) {
  std::string root = sourceDir();
  ASSERT_FALSE(root.empty());
  Spec file, builtin;
  SpecError err;
  ASSERT_TRUE(loadSpecFile(root + "/examples/tiny.json", {}, file, err)) << err.str();
  ASSERT_TRUE(parseSpec(defaultSpecJson(), {}, builtin, err)) << err.str();
  EXPECT_EQ(file.json, builtin.json);
}
