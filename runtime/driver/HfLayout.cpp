// HfLayout.cpp — the Hugging Face pieces of tgc's parameters and the config check (see
// Hf.h). No runtime context: `tgc export` links it without a backend.
#include "runtime/driver/Hf.h"

#include <algorithm>
#include <cmath>

namespace tgrt {
namespace {

/// Columns [b, e) of a 2-D tensor (or elements of a 1-D one) that piece pc covers.
void pieceRange(const std::vector<int64_t>& shape, const tgc::HfPiece& pc, int64_t* b,
                int64_t* e) {
  const int64_t n = shape.empty() ? 1 : shape.back();
  *b = pc.col_begin;
  *e = pc.col_end > 0 ? pc.col_end : n;
}

} // namespace

std::vector<int64_t> hfPieceShape(const std::vector<int64_t>& shape, const tgc::HfPiece& pc) {
  int64_t b = 0, e = 0;
  pieceRange(shape, pc, &b, &e);
  if (shape.size() != 2) return {e - b};
  if (pc.transpose) return {e - b, shape[0]};
  return {shape[0], e - b};
}

void extractHfPiece(const float* param, const std::vector<int64_t>& shape,
                    const tgc::HfPiece& pc, float* out) {
  int64_t b = 0, e = 0;
  pieceRange(shape, pc, &b, &e);
  if (shape.size() != 2) {
    std::copy(param + b, param + e, out);
    return;
  }
  const int64_t rows = shape[0], cols = shape[1], w = e - b;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < w; ++j) {
      const float v = param[i * cols + b + j];
      if (pc.transpose) out[j * rows + i] = v;
      else out[i * w + j] = v;
    }
}

void insertHfPiece(const float* piece, const std::vector<int64_t>& shape,
                   const tgc::HfPiece& pc, float* param) {
  int64_t b = 0, e = 0;
  pieceRange(shape, pc, &b, &e);
  if (shape.size() != 2) {
    std::copy(piece, piece + (e - b), param + b);
    return;
  }
  const int64_t rows = shape[0], cols = shape[1], w = e - b;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < w; ++j)
      param[i * cols + b + j] = pc.transpose ? piece[j * rows + i] : piece[i * w + j];
}

// ------------------------------------------------------------------------ the config --

namespace {

/// One config.json field against one model field.
class ConfigCheck {
public:
  ConfigCheck(const nlohmann::json& c, std::string name, std::vector<std::string>* out)
      : c_(c), name_(std::move(name)), out_(out) {}

  /// The field's value, or `def` (transformers' default) when absent or null.
  nlohmann::json get(const char* key, const nlohmann::json& def) const {
    if (c_.contains(key) && !c_[key].is_null()) return c_[key];
    return def;
  }
  bool has(const char* key) const { return c_.contains(key) && !c_[key].is_null(); }

  /// "KEY V in CONFIG[ (default)], FIELD W in this model".
  void differ(const char* key, const nlohmann::json& have, const std::string& field,
              const std::string& ours, const std::string& why = "") {
    out_->push_back(std::string(key) + " " + have.dump() + (has(key) ? "" : " (its default)") +
                    " in " + name_ + ", " + field + " " + ours + " in this model" +
                    (why.empty() ? "" : " (" + why + ")"));
  }
  void integer(const char* key, int64_t def, const std::string& field, int64_t ours) {
    const nlohmann::json v = get(key, def);
    if (!v.is_number() || (double)ours != v.get<double>())
      differ(key, v, field, std::to_string(ours));
  }
  void number(const char* key, double def, const std::string& field, double ours) {
    const nlohmann::json v = get(key, def);
    // Within float32 rounding: config writers store 1e-5 as 1e-05 or as its float32 value.
    if (!v.is_number() || !(std::fabs(v.get<double>() - ours) <= 1e-6 * std::fabs(ours)))
      differ(key, v, field, nlohmann::json(ours).dump());
  }
  void boolean(const char* key, bool def, const std::string& field, bool ours) {
    const nlohmann::json v = get(key, def);
    if (!v.is_boolean() || v.get<bool>() != ours) differ(key, v, field, ours ? "true" : "false");
  }
  void oneOf(const char* key, const char* def, std::initializer_list<const char*> ok,
             const std::string& field, const std::string& ours) {
    const nlohmann::json v = get(key, def);
    if (v.is_string())
      for (const char* s : ok)
        if (v.get<std::string>() == s) return;
    differ(key, v, field, "\"" + ours + "\"");
  }

private:
  const nlohmann::json& c_;
  std::string name_;
  std::vector<std::string>* out_;
};

} // namespace

std::vector<std::string> hfConfigDifferences(const nlohmann::json& config,
                                             const tgc::ModelSpec& m, const std::string& arch,
                                             const std::string& config_name,
                                             std::vector<std::string>* notes) {
  std::vector<std::string> out;
  if (!config.is_object()) {
    out.push_back(config_name + " is not a JSON object");
    return out;
  }
  ConfigCheck c(config, config_name, &out);
  const bool gpt2 = arch == "GPT2LMHeadModel";
  const std::string want_type = gpt2 ? "gpt2" : "llama";
  const nlohmann::json type = c.get("model_type", nullptr);
  if (!type.is_string() || type.get<std::string>() != want_type) {
    out.push_back("model_type " + type.dump() + " in " + config_name + ", but this model is a " +
                  arch + " (model_type \"" + want_type + "\")");
    return out;
  }
  auto positions = [&](const char* key, int64_t def) {
    const nlohmann::json v = c.get(key, def);
    if (!v.is_number_integer()) {
      c.differ(key, v, "model.context", std::to_string(m.context));
      return;
    }
    const int64_t n = v.get<int64_t>();
    if (gpt2 && n < m.context)
      c.differ(key, v, "model.context", std::to_string(m.context),
               "the learned position table has fewer rows than the context");
    else if (gpt2 && n > m.context && notes)
      notes->push_back(std::string(key) + " " + std::to_string(n) + " in " + config_name +
                       ", model.context " + std::to_string(m.context) +
                       ": only the first " + std::to_string(m.context) +
                       " rows of the position table (transformer.wpe.weight) are used");
    else if (!gpt2 && n < m.context && notes)
      notes->push_back(std::string(key) + " " + std::to_string(n) + " in " + config_name +
                       ": model.context " + std::to_string(m.context) +
                       " goes beyond the positions the model was trained on");
  };
  if (gpt2) {
    c.integer("vocab_size", 50257, "model.vocab_size", m.vocab_size);
    positions("n_positions", 1024);
    c.integer("n_embd", 768, "model.d_model", m.d_model);
    c.integer("n_layer", 12, "model.n_layers", m.n_layers);
    c.integer("n_head", 12, "model.n_heads", m.n_heads);
    const nlohmann::json embd = c.get("n_embd", 768);
    c.integer("n_inner", embd.is_number_integer() ? 4 * embd.get<int64_t>() : 0, "model.d_ff",
              m.d_ff);
    c.oneOf("activation_function", "gelu_new", {"gelu_new", "gelu_pytorch_tanh"},
            "model.activation", m.activation);
    c.number("layer_norm_epsilon", 1e-5, "model.layer_norm_eps", m.layer_norm_eps);
    c.boolean("tie_word_embeddings", true, "model.tie_embeddings", m.tie_embeddings);
    if (c.get("scale_attn_weights", true) != nlohmann::json(true))
      c.differ("scale_attn_weights", c.get("scale_attn_weights", true), "attention scores",
               "scaled by 1/sqrt(head_dim)");
    if (c.get("scale_attn_by_inverse_layer_idx", false) != nlohmann::json(false))
      c.differ("scale_attn_by_inverse_layer_idx",
               c.get("scale_attn_by_inverse_layer_idx", false), "attention scores",
               "scaled by 1/sqrt(head_dim) only");
    return out;
  }
  c.integer("vocab_size", 32000, "model.vocab_size", m.vocab_size);
  positions("max_position_embeddings", 2048);
  c.integer("hidden_size", 4096, "model.d_model", m.d_model);
  c.integer("intermediate_size", 11008, "model.d_ff", m.d_ff);
  c.integer("num_hidden_layers", 32, "model.n_layers", m.n_layers);
  c.integer("num_attention_heads", 32, "model.n_heads", m.n_heads);
  const nlohmann::json heads = c.get("num_attention_heads", 32),
                       hidden = c.get("hidden_size", 4096);
  c.integer("num_key_value_heads", heads.is_number_integer() ? heads.get<int64_t>() : 0,
            "model.n_kv_heads", m.kvHeads());
  c.integer("head_dim",
            heads.is_number_integer() && hidden.is_number_integer() && heads.get<int64_t>() > 0
                ? hidden.get<int64_t>() / heads.get<int64_t>()
                : 0,
            "model.head_dim", m.headDim());
  c.oneOf("hidden_act", "silu", {"silu", "swish"}, "model.activation", m.activation);
  c.number("rms_norm_eps", 1e-6, "model.layer_norm_eps", m.layer_norm_eps);
  c.number("rope_theta", 10000.0, "model.rope_theta", m.rope_theta);
  c.boolean("attention_bias", false, "model.attention_bias", m.attention_bias);
  c.boolean("mlp_bias", false, "model.mlp_bias", m.mlp_bias);
  c.boolean("tie_word_embeddings", false, "model.tie_embeddings", m.tie_embeddings);
  // rope_scaling: none (or rope_type "default") <-> factor 0; "llama3" <-> its four numbers.
  const nlohmann::json rs = c.get("rope_scaling", nullptr);
  std::string type_name;
  if (rs.is_object()) {
    const nlohmann::json t = rs.contains("rope_type") ? rs["rope_type"]
                             : rs.contains("type")    ? rs["type"]
                                                      : nlohmann::json();
    type_name = t.is_string() ? t.get<std::string>() : t.dump();
  }
  const auto& sc = m.rope_scaling;
  if (rs.is_null() || type_name == "default") {
    if (sc.factor > 0)
      c.differ("rope_scaling", rs, "model.rope_scaling.factor", nlohmann::json(sc.factor).dump(),
               "this model scales the RoPE frequencies as Llama 3 does");
  } else if (type_name != "llama3") {
    c.differ("rope_scaling", rs, "model.rope_scaling",
             sc.factor > 0 ? "llama3" : "none",
             "tgc implements rope_type \"llama3\" only");
  } else if (!(sc.factor > 0)) {
    c.differ("rope_scaling", rs, "model.rope_scaling.factor", "0 (no scaling)");
  } else {
    auto num = [&](const char* key, double ours, const std::string& field) {
      const nlohmann::json v = rs.contains(key) ? rs[key] : nlohmann::json();
      if (!v.is_number() || !(std::fabs(v.get<double>() - ours) <= 1e-9 * std::fabs(ours)))
        out.push_back("rope_scaling." + std::string(key) + " " + v.dump() + " in " +
                      config_name + ", " + field + " " + nlohmann::json(ours).dump() +
                      " in this model");
    };
    num("factor", sc.factor, "model.rope_scaling.factor");
    num("low_freq_factor", sc.low_freq_factor, "model.rope_scaling.low_freq_factor");
    num("high_freq_factor", sc.high_freq_factor, "model.rope_scaling.high_freq_factor");
    num("original_max_position_embeddings", (double)sc.original_context,
        "model.rope_scaling.original_context");
  }
  return out;
}

} // namespace tgrt
