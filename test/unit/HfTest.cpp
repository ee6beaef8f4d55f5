//===- HfTest.cpp - Unit tests for the Hugging Face mapping (runtime/driver/Hf.h) -===//
//
// The pieces of the spec's parameter table as `tgc export --hf` writes them and
// `train --init-from` reads them back: their shapes against transformers' state_dict of
// GPT2LMHeadModel / LlamaForCausalLM (written out independently here), every element of
// every parameter in exactly one piece, extract then insert is the identity, the
// transposes; and the config.json check with its messages.
//
//===----------------------------------------------------------------------------===//

#include "runtime/driver/Hf.h"

#include "frontend/Spec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <numeric>

using json = nlohmann::json;

namespace {

tgc::ModelSpec parseModel(const std::vector<std::string>& sets) {
  tgc::Spec s;
  tgc::SpecError err;
  EXPECT_TRUE(tgc::parseSpec(tgc::defaultSpecJson(), sets, s, err)) << err.str();
  return s.model;
}

const std::vector<std::string> kGpt2 = {"model.vocab_size=100", "model.context=16",
                                        "model.d_model=32",     "model.n_layers=2",
                                        "model.n_heads=4",      "model.d_ff=48"};
const std::vector<std::string> kLlama = {
    "model.vocab_size=100", "model.context=16", "model.d_model=32", "model.n_layers=2",
    "model.n_heads=4",      "model.n_kv_heads=2", "model.head_dim=12", "model.d_ff=40",
    "model.norm=rmsnorm",   "model.positional=rope", "model.activation=silu",
    "model.mlp_gated=true", "model.attention_bias=true", "model.mlp_bias=true",
    "model.tie_embeddings=false"};

std::vector<std::string> with(std::vector<std::string> v, const std::string& extra) {
  v.push_back(extra);
  return v;
}

/// name -> shape of every HF piece of the table.
std::map<std::string, std::vector<int64_t>> hfShapes(const tgc::ModelSpec& m) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const tgc::ParamInfo& p : tgc::modelParameters(m))
    for (const tgc::HfPiece& pc : p.hf) {
      EXPECT_FALSE(out.count(pc.name)) << "duplicate " << pc.name;
      out[pc.name] = tgrt::hfPieceShape(p.shape, pc);
    }
  return out;
}

TEST(HfMapping, Gpt2StateDictShapes) {
  const tgc::ModelSpec m = parseModel(with(kGpt2, "model.tie_embeddings=false"));
  ASSERT_EQ(tgc::hfArchitecture(m), "GPT2LMHeadModel");
  // GPT2LMHeadModel(n_embd 32, n_inner 48, ...).state_dict(), Conv1D weights [in, out].
  std::map<std::string, std::vector<int64_t>> want = {
      {"transformer.wte.weight", {100, 32}}, {"transformer.wpe.weight", {16, 32}},
      {"transformer.ln_f.weight", {32}},     {"transformer.ln_f.bias", {32}},
      {"lm_head.weight", {100, 32}}};
  for (int i = 0; i < 2; ++i) {
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    for (const char* ln : {"ln_1", "ln_2"}) {
      want[h + ln + ".weight"] = {32};
      want[h + ln + ".bias"] = {32};
    }
    want[h + "attn.c_attn.weight"] = {32, 96};
    want[h + "attn.c_attn.bias"] = {96};
    want[h + "attn.c_proj.weight"] = {32, 32};
    want[h + "attn.c_proj.bias"] = {32};
    want[h + "mlp.c_fc.weight"] = {32, 48};
    want[h + "mlp.c_fc.bias"] = {48};
    want[h + "mlp.c_proj.weight"] = {48, 32};
    want[h + "mlp.c_proj.bias"] = {32};
  }
  EXPECT_EQ(hfShapes(m), want);
}

TEST(HfMapping, LlamaStateDictShapes) {
  const tgc::ModelSpec m = parseModel(kLlama);
  ASSERT_EQ(tgc::hfArchitecture(m), "LlamaForCausalLM");
  // LlamaForCausalLM(hidden 32, heads 4, kv heads 2, head_dim 12, intermediate 40, biases,
  // untied).state_dict(): nn.Linear weights [out, in].
  std::map<std::string, std::vector<int64_t>> want = {{"model.embed_tokens.weight", {100, 32}},
                                                      {"model.norm.weight", {32}},
                                                      {"lm_head.weight", {100, 32}}};
  for (int i = 0; i < 2; ++i) {
    const std::string h = "model.layers." + std::to_string(i) + ".";
    want[h + "input_layernorm.weight"] = {32};
    want[h + "post_attention_layernorm.weight"] = {32};
    want[h + "self_attn.q_proj.weight"] = {48, 32};
    want[h + "self_attn.q_proj.bias"] = {48};
    want[h + "self_attn.k_proj.weight"] = {24, 32};
    want[h + "self_attn.k_proj.bias"] = {24};
    want[h + "self_attn.v_proj.weight"] = {24, 32};
    want[h + "self_attn.v_proj.bias"] = {24};
    want[h + "self_attn.o_proj.weight"] = {32, 48};
    want[h + "self_attn.o_proj.bias"] = {32};
    want[h + "mlp.gate_proj.weight"] = {40, 32};
    want[h + "mlp.gate_proj.bias"] = {40};
    want[h + "mlp.up_proj.weight"] = {40, 32};
    want[h + "mlp.up_proj.bias"] = {40};
    want[h + "mlp.down_proj.weight"] = {32, 40};
    want[h + "mlp.down_proj.bias"] = {32};
  }
  EXPECT_EQ(hfShapes(m), want);
}

/// Every element of every parameter lands in exactly one piece, and inserting the
/// extracted pieces rebuilds the tensor.
void checkCoverAndRoundTrip(const tgc::ModelSpec& m) {
  for (const tgc::ParamInfo& p : tgc::modelParameters(m)) {
    SCOPED_TRACE(p.name);
    ASSERT_FALSE(p.hf.empty());
    std::vector<float> src((size_t)p.numel());
    std::iota(src.begin(), src.end(), 1.0f); // distinct, exact in float up to 2^24
    std::vector<float> back((size_t)p.numel(), 0.0f);
    std::vector<int> hits((size_t)p.numel(), 0);
    for (const tgc::HfPiece& pc : p.hf) {
      const std::vector<int64_t> shape = tgrt::hfPieceShape(p.shape, pc);
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      std::vector<float> piece((size_t)n);
      tgrt::extractHfPiece(src.data(), p.shape, pc, piece.data());
      for (float v : piece) ++hits[(size_t)v - 1];
      tgrt::insertHfPiece(piece.data(), p.shape, pc, back.data());
    }
    for (size_t k = 0; k < hits.size(); ++k) ASSERT_EQ(hits[k], 1) << "element " << k;
    EXPECT_EQ(back, src);
  }
}

TEST(HfMapping, PiecesCoverEveryElementOnce) {
  checkCoverAndRoundTrip(parseModel(kGpt2));
  checkCoverAndRoundTrip(parseModel(with(kGpt2, "model.tie_embeddings=false")));
  checkCoverAndRoundTrip(parseModel(kLlama));
  checkCoverAndRoundTrip(parseModel(with(kLlama, "model.tie_embeddings=true")));
}

TEST(HfMapping, ExtractTransposesColumnRanges) {
  // A [2, 3] tensor [[1 2 3] [4 5 6]]: columns [1, 3) transposed are [[2 5] [3 6]];
  // untransposed [[2 3] [5 6]]; a 1-D range is the elements.
  const std::vector<float> w = {1, 2, 3, 4, 5, 6};
  std::vector<float> out(4);
  tgc::HfPiece t{"t", 1, 3, true}, u{"u", 1, 3, false}, all{"all", 0, 0, false};
  EXPECT_EQ(tgrt::hfPieceShape({2, 3}, t), (std::vector<int64_t>{2, 2}));
  tgrt::extractHfPiece(w.data(), {2, 3}, t, out.data());
  EXPECT_EQ(out, (std::vector<float>{2, 5, 3, 6}));
  tgrt::extractHfPiece(w.data(), {2, 3}, u, out.data());
  EXPECT_EQ(out, (std::vector<float>{2, 3, 5, 6}));
  EXPECT_EQ(tgrt::hfPieceShape({2, 3}, all), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(tgrt::hfPieceShape({6}, t), (std::vector<int64_t>{2}));
  tgrt::extractHfPiece(w.data(), {6}, t, out.data());
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[1], 3);
}

// ------------------------------------------------------------------------- config --

json gpt2Config() {
  return {{"model_type", "gpt2"}, {"vocab_size", 100},          {"n_positions", 16},
          {"n_embd", 32},         {"n_layer", 2},               {"n_head", 4},
          {"n_inner", 48},        {"activation_function", "gelu_new"},
          {"layer_norm_epsilon", 1e-5}, {"tie_word_embeddings", true}};
}

json llamaConfig() {
  return {{"model_type", "llama"},       {"vocab_size", 100},
          {"hidden_size", 32},           {"intermediate_size", 40},
          {"num_hidden_layers", 2},      {"num_attention_heads", 4},
          {"num_key_value_heads", 2},    {"head_dim", 12},
          {"hidden_act", "silu"},        {"max_position_embeddings", 16},
          {"rms_norm_eps", 1e-5},        {"rope_theta", 10000.0},
          {"rope_scaling", nullptr},     {"attention_bias", true},
          {"mlp_bias", true},            {"tie_word_embeddings", false}};
}

std::vector<std::string> diffs(const json& c, const std::vector<std::string>& sets,
                               std::vector<std::string>* notes = nullptr) {
  const tgc::ModelSpec m = parseModel(sets);
  return tgrt::hfConfigDifferences(c, m, tgc::hfArchitecture(m), "D/config.json", notes);
}

TEST(HfConfig, MatchingConfigsHaveNoDifferences) {
  EXPECT_EQ(diffs(gpt2Config(), kGpt2), std::vector<std::string>{});
  EXPECT_EQ(diffs(llamaConfig(), kLlama), std::vector<std::string>{});
  // Defaults: GPT-2's n_inner null is 4 n_embd; Llama's num_key_value_heads and head_dim
  // absent are num_attention_heads and hidden_size / heads.
  json g = gpt2Config();
  g["n_inner"] = nullptr;
  EXPECT_EQ(diffs(g, with(kGpt2, "model.d_ff=128")), std::vector<std::string>{});
  json l = llamaConfig();
  l.erase("num_key_value_heads");
  l.erase("head_dim");
  EXPECT_EQ(diffs(l, with(with(kLlama, "model.n_kv_heads=0"), "model.head_dim=0")),
            std::vector<std::string>{});
}

TEST(HfConfig, EachDifferingFieldIsNamed) {
  json g = gpt2Config();
  g["n_embd"] = 64;
  g["activation_function"] = "relu";
  EXPECT_EQ(diffs(g, kGpt2),
            (std::vector<std::string>{
                "n_embd 64 in D/config.json, model.d_model 32 in this model",
                "activation_function \"relu\" in D/config.json, model.activation \"gelu_tanh\" "
                "in this model"}));
  g = gpt2Config();
  g.erase("tie_word_embeddings");
  EXPECT_EQ(diffs(g, with(kGpt2, "model.tie_embeddings=false")),
            (std::vector<std::string>{"tie_word_embeddings true (its default) in D/config.json, "
                                      "model.tie_embeddings false in this model"}));
  json l = llamaConfig();
  l["num_key_value_heads"] = 4;
  l["rms_norm_eps"] = 1e-6;
  EXPECT_EQ(diffs(l, kLlama),
            (std::vector<std::string>{
                "num_key_value_heads 4 in D/config.json, model.n_kv_heads 2 in this model",
                "rms_norm_eps 1e-06 in D/config.json, model.layer_norm_eps 1e-05 in this model"}));
  l = llamaConfig();
  l["model_type"] = "mistral";
  EXPECT_EQ(diffs(l, kLlama),
            (std::vector<std::string>{"model_type \"mistral\" in D/config.json, but this model "
                                      "is a LlamaForCausalLM (model_type \"llama\")"}));
}

TEST(HfConfig, Positions) {
  // GPT-2: more positions than the context are fine (the first rows are used), fewer not.
  std::vector<std::string> notes;
  json g = gpt2Config();
  g["n_positions"] = 1024;
  EXPECT_EQ(diffs(g, kGpt2, &notes), std::vector<std::string>{});
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("only the first 16 rows"), std::string::npos) << notes[0];
  g["n_positions"] = 8;
  ASSERT_EQ(diffs(g, kGpt2).size(), 1u);
  // Llama has no position table: any max_position_embeddings is accepted.
  json l = llamaConfig();
  l["max_position_embeddings"] = 131072;
  EXPECT_EQ(diffs(l, kLlama), std::vector<std::string>{});
}

TEST(HfConfig, Llama3RopeScaling) {
  const std::vector<std::string> scaled =
      with(with(kLlama, "model.rope_scaling.factor=32"), "model.rope_scaling.original_context=8192");
  json l = llamaConfig();
  l["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 32.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  EXPECT_EQ(diffs(l, scaled), std::vector<std::string>{});
  l["rope_scaling"]["high_freq_factor"] = 2.0;
  EXPECT_EQ(diffs(l, scaled),
            (std::vector<std::string>{"rope_scaling.high_freq_factor 2.0 in D/config.json, "
                                      "model.rope_scaling.high_freq_factor 4.0 in this model"}));
  // A scaled model against an unscaled config and the other way round; other rope types.
  EXPECT_EQ(diffs(llamaConfig(), scaled).size(), 1u);
  EXPECT_EQ(diffs(l, kLlama).size(), 1u);
  l["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  const std::vector<std::string> d = diffs(l, scaled);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].find("tgc implements rope_type \"llama3\" only"), std::string::npos) << d[0];
}

} // namespace
