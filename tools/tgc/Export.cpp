//===- Export.cpp - tgc export: a checkpoint as a Hugging Face GPT-2 ---------===//
//
//   tgc export CHECKPOINT.safetensors --spec SPEC [--set k=v]... --hf DIR
//
// Writes DIR/config.json (a GPT2Config) and DIR/model.safetensors (the parameter names of
// transformers' GPT2LMHeadModel, F32), loadable with
// `GPT2LMHeadModel.from_pretrained(DIR)`. tgc's model is GPT-2's (docs/spec.md "model"):
// linear weights are stored [in, out] like GPT-2's Conv1D, the qkv projection is q | k | v
// along its output with heads contiguous inside each, LayerNorm and tanh GELU
// ("gelu_new") match. Only the lm_head of an untied model is transposed ([D, V] ->
// nn.Linear's [V, D]). Missing attention/MLP biases are written as zeros (exact).
//
// The checkpoint (from `train --save`, runtime/driver/Driver.cpp saveParams) holds each
// parameter as F32 under its tgc name, the AdamW moments as "optim.m.NAME" /
// "optim.v.NAME", and string metadata (step, spec, precision, ...); only parameters are
// exported.
//
//===----------------------------------------------------------------------------===//
#include "tools/tgc/Driver.h"

#include "frontend/Spec.h"
#include "runtime/driver/FileUtil.h"
#include "runtime/driver/Safetensors.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <cstring>

namespace tgc {
namespace {

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string o = "[";
  for (size_t k = 0; k < s.size(); ++k)
    o += (k ? ", " : "") + std::to_string(s[k]);
  return o + "]";
}

int fail(const std::string &msg, int code = 1) {
  llvm::errs() << "tgc: error: " << msg << "\n";
  return code;
}

/// The Hugging Face name of tgc parameter `name` ("" when it has none: lm_head of a tied
/// model never reaches here).
std::string hfName(const std::string &name) {
  static const std::pair<const char *, const char *> inLayer[] = {
      {"ln1.", "ln_1."},           {"ln2.", "ln_2."},
      {"attn.qkv.", "attn.c_attn."}, {"attn.proj.", "attn.c_proj."},
      {"mlp.fc.", "mlp.c_fc."},    {"mlp.proj.", "mlp.c_proj."}};
  if (name == "wte" || name == "wpe")
    return "transformer." + name + ".weight";
  if (name.rfind("ln_f.", 0) == 0)
    return "transformer." + name;
  if (name == "lm_head.weight")
    return name;
  if (name.rfind("layers.", 0) == 0) {
    size_t dot = name.find('.', 7);
    if (dot == std::string::npos)
      return "";
    std::string layer = name.substr(7, dot - 7), rest = name.substr(dot + 1);
    for (auto [from, to] : inLayer)
      if (rest.rfind(from, 0) == 0)
        return "transformer.h." + layer + "." + to + rest.substr(std::strlen(from));
  }
  return "";
}

/// Model fields of the checkpoint's embedded spec (metadata "spec") that differ from
/// `spec`, as "field: checkpoint X, spec Y" lines; dropout differences are ignored (they
/// do not change the function the weights compute).
std::vector<std::string> specDifferences(const std::string &embedded, const Spec &spec) {
  std::vector<std::string> out;
  nlohmann::json a, b;
  try {
    a = nlohmann::json::parse(embedded);
    b = nlohmann::json::parse(spec.json);
  } catch (const std::exception &) {
    return out; // an unreadable embedded spec is not ours to judge; the tensors decide
  }
  if (!a.is_object() || !a.contains("model") || !a["model"].is_object() || !b.contains("model"))
    return out;
  for (auto it = b["model"].begin(); it != b["model"].end(); ++it) {
    if (it.key() == "dropout")
      continue;
    const nlohmann::json &theirs = a["model"].contains(it.key()) ? a["model"][it.key()]
                                                                  : nlohmann::json();
    if (theirs != *it)
      out.push_back("model." + it.key() + ": checkpoint " + theirs.dump() + ", spec " +
                    it->dump());
  }
  // The attention window changes what the weights compute as well.
  if (a.contains("training") && a["training"].contains("attention") &&
      b["training"].contains("attention") &&
      a["training"]["attention"].value("window", 0) != b["training"]["attention"].value("window", 0))
    out.push_back("training.attention.window: checkpoint " +
                  a["training"]["attention"].value("window", nlohmann::json(0)).dump() +
                  ", spec " + b["training"]["attention"]["window"].dump());
  return out;
}

} // namespace

int runExport(const ExportOptions &opts) {
  if (opts.checkpoint.empty())
    return fail("export: a checkpoint is required: tgc export CHECKPOINT.safetensors --spec "
                "SPEC --hf DIR",
                2);
  if (opts.hfDir.empty())
    return fail("export: --hf DIR is required (the output directory)", 2);

  // The spec, as at compile time.
  Spec spec;
  SpecError serr;
  bool ok = opts.specFile.empty()
                ? parseSpec(defaultSpecJson(), opts.overrides, spec, serr, "<default spec>")
                : loadSpecFile(opts.specFile, opts.overrides, spec, serr);
  if (!ok)
    return fail(formatSpecError(opts.specFile.empty() ? "<default spec>" : opts.specFile, serr));
  const std::string specName = opts.specFile.empty() ? "<default spec>" : opts.specFile;
  const ModelSpec &m = spec.model;

  // What GPT-2 cannot express.
  if (m.positional != "learned")
    return fail(specName + ": model.positional: '" + m.positional +
                "' cannot be exported: GPT-2 has learned absolute positions only");
  if (m.activation != "gelu_tanh")
    return fail(specName + ": model.activation: '" + m.activation +
                "' cannot be exported: GPT-2's activation here is the tanh GELU (gelu_new)");
  if (spec.training.attention.window > 0)
    return fail(specName + ": training.attention.window: " +
                std::to_string(spec.training.attention.window) +
                ": a sliding-window model cannot be exported: GPT-2 attends to the whole "
                "causal context");

  // The checkpoint: every spec parameter present, F32, with the spec's shape.
  tgrt::SafetensorsReader reader;
  std::string err;
  if (!reader.open(opts.checkpoint, &err))
    return fail(err);
  std::vector<ParamInfo> params = modelParameters(m);
  std::set<std::string> wanted;
  for (const ParamInfo &p : params) {
    wanted.insert(p.name);
    const tgrt::StTensorInfo *t = reader.find(p.name);
    if (!t)
      return fail(opts.checkpoint + ": no tensor '" + p.name + "' (shape " +
                  shapeStr(p.shape) + " in " + specName +
                  "): the checkpoint does not match the spec");
    if (t->shape != p.shape)
      return fail(opts.checkpoint + ": tensor '" + p.name + "' has shape " +
                  shapeStr(t->shape) + " in the checkpoint but " + shapeStr(p.shape) +
                  " in " + specName + ": the checkpoint does not match the spec");
    if (t->dtype != "F32")
      return fail(opts.checkpoint + ": tensor '" + p.name + "' has dtype " + t->dtype +
                  ", expected F32 (a tgc checkpoint stores parameters as F32)");
  }
  for (const auto &[name, info] : reader.tensors())
    if (name.rfind("optim.", 0) != 0 && !wanted.count(name))
      return fail(opts.checkpoint + ": tensor '" + name + "' (shape " + shapeStr(info.shape) +
                  ") is not a parameter of " + specName +
                  ": the checkpoint does not match the spec");

  // Same tensors; now the fields that change the function without changing a shape.
  const auto &meta = reader.metadata();
  if (auto it = meta.find("spec"); it != meta.end() && !it->second.empty()) {
    std::vector<std::string> diffs = specDifferences(it->second, spec);
    if (!diffs.empty()) {
      std::string msg = opts.checkpoint + ": was trained with a different model than " +
                        specName + " describes:";
      for (const std::string &d : diffs)
        msg += "\n  " + d;
      return fail(msg + "\n(pass the spec and --set overrides the checkpoint was trained with)");
    }
  }

  // Read and rename; zeros for the biases GPT-2 has and the spec does not.
  const int64_t D = m.d_model, F = m.d_ff, V = m.vocab_size;
  std::vector<std::vector<float>> data;
  std::vector<tgrt::StTensorView> views;
  data.reserve(params.size() + 4 * (size_t)m.n_layers);
  for (const ParamInfo &p : params) {
    data.emplace_back((size_t)p.numel());
    if (!reader.readF32(p.name, data.back().data(), p.numel(), &err))
      return fail(err);
    std::vector<int64_t> shape = p.shape;
    if (p.name == "lm_head.weight") { // [D, V] (x @ W) -> nn.Linear's [V, D]
      std::vector<float> t((size_t)(V * D));
      const std::vector<float> &w = data.back();
      for (int64_t i = 0; i < D; ++i)
        for (int64_t j = 0; j < V; ++j)
          t[(size_t)(j * D + i)] = w[(size_t)(i * V + j)];
      data.back() = std::move(t);
      shape = {V, D};
    }
    std::string hf = hfName(p.name);
    if (hf.empty())
      return fail("export: internal: no Hugging Face name for parameter '" + p.name + "'");
    views.push_back({hf, shape, nullptr});
  }
  auto zeros = [&](const std::string &name, int64_t n) {
    data.emplace_back((size_t)n, 0.0f);
    views.push_back({name, {n}, nullptr});
  };
  for (int64_t i = 0; i < m.n_layers; ++i) {
    std::string h = "transformer.h." + std::to_string(i) + ".";
    if (!m.attention_bias) {
      zeros(h + "attn.c_attn.bias", 3 * D);
      zeros(h + "attn.c_proj.bias", D);
    }
    if (!m.mlp_bias) {
      zeros(h + "mlp.c_fc.bias", F);
      zeros(h + "mlp.c_proj.bias", D);
    }
  }
  for (size_t k = 0; k < views.size(); ++k)
    views[k].data = data[k].data();
  if (!m.attention_bias)
    llvm::errs() << "tgc: note: the spec has no attention biases (model.attention_bias=false); "
                    "GPT-2 always has them, so attn.c_attn.bias and attn.c_proj.bias are "
                    "written as zeros: exact, a zero bias adds nothing\n";
  if (!m.mlp_bias)
    llvm::errs() << "tgc: note: the spec has no MLP biases (model.mlp_bias=false); GPT-2 "
                    "always has them, so mlp.c_fc.bias and mlp.c_proj.bias are written as "
                    "zeros: exact, a zero bias adds nothing\n";

  // config.json: a GPT2Config. tgc applies dropout after the embeddings and on both
  // residual branches, never on the attention probabilities: attn_pdrop is 0.
  nlohmann::ordered_json config = {
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"vocab_size", V},
      {"n_positions", m.context},
      {"n_ctx", m.context},
      {"n_embd", D},
      {"n_layer", m.n_layers},
      {"n_head", m.n_heads},
      {"n_inner", F},
      {"activation_function", "gelu_new"},
      {"layer_norm_epsilon", m.layer_norm_eps},
      {"resid_pdrop", m.dropout},
      {"embd_pdrop", m.dropout},
      {"attn_pdrop", 0.0},
      {"initializer_range", 0.02},
      {"scale_attn_weights", true},
      {"tie_word_embeddings", m.tie_embeddings},
      {"use_cache", true},
      // The spec does not know the tokenizer (GPT2Config's default 50256 may not even be
      // in the vocabulary): leave them unset. tgc data prepare's meta.json has eos_id.
      {"bos_token_id", nullptr},
      {"eos_token_id", nullptr},
      {"torch_dtype", "float32"}};
  std::string configText = config.dump(2) + "\n";

  // Write: the directory, then model.safetensors and config.json (each atomically).
  if (std::error_code ec = llvm::sys::fs::create_directories(opts.hfDir))
    return fail(opts.hfDir + ": cannot create the directory: " + ec.message());
  llvm::SmallString<256> weightsPath(opts.hfDir), configPath(opts.hfDir);
  llvm::sys::path::append(weightsPath, "model.safetensors");
  llvm::sys::path::append(configPath, "config.json");
  std::map<std::string, std::string> outMeta = {{"format", "pt"}, // transformers requires it
                                                {"tgc_model", spec.name},
                                                {"tgc_checkpoint", opts.checkpoint}};
  if (auto it = meta.find("step"); it != meta.end())
    outMeta["tgc_step"] = it->second;
  if (!tgrt::writeSafetensors(std::string(weightsPath), views, outMeta, &err))
    return fail(err);
  tgrt::AtomicFile cf{std::string(configPath)};
  cf.write(configText.data(), configText.size());
  if (!cf.commit())
    return fail(cf.error());

  int64_t total = 0;
  for (const ParamInfo &p : params)
    total += p.numel();
  llvm::errs() << "tgc: wrote " << configPath << " and " << weightsPath << " ("
               << views.size() << " tensors, " << total << " trained parameters"
               << (m.tie_embeddings ? ", lm_head tied to wte" : "")
               << "); load with transformers.GPT2LMHeadModel.from_pretrained(\"" << opts.hfDir
               << "\")\n";
  return 0;
}

} // namespace tgc
