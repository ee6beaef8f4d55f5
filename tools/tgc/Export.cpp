//===- Export.cpp - tgc export: a checkpoint as a Hugging Face model ----------===//
//
//   tgc export CHECKPOINT.safetensors --spec SPEC [--set k=v]... --hf DIR [--data DIR]
//
// Writes DIR/config.json and DIR/model.safetensors (F32) for the transformers class that
// computes the spec's model (tgc::hfArchitecture): GPT2LMHeadModel (a GPT2Config) or
// LlamaForCausalLM (a LlamaConfig), loadable with `AutoModelForCausalLM.from_pretrained(DIR)`.
// The tensor names and layouts come from the spec's parameter table (frontend/Spec.h,
// ParamInfo::hf): each tgc parameter is cut into its Hugging Face pieces (column ranges of
// the [in, out] weight, transposed to nn.Linear's [out, in] where HF uses nn.Linear:
// GPT-2 keeps tgc's Conv1D layout, an untied lm_head is [V, D] in both; Llama's q/k/v_proj are the
// q | k | v columns of the fused qkv, gate/up_proj the gate | up columns of the gated fc).
// runtime/driver/Hf.cpp reads the same table the other way (`train --init-from DIR`).
// GPT-2 always has attention and MLP biases: a spec without them gets zeros (exact).
//
// The checkpoint (from `train --save`, runtime/driver/Driver.cpp saveParams) holds each
// parameter as F32 under its tgc name, the AdamW moments as "optim.m.NAME" /
// "optim.v.NAME", and string metadata (step, spec, precision, ...); only parameters are
// exported.
//
// With --data DIR (a `tgc data prepare` directory), its tokenizer is exported too
// (exportTokenizer below): tokenizer.json (a pretrained Hugging Face tokenizer) or
// tokenizer.model (the sentencepiece BPE prepare trains, loaded by transformers as a
// LlamaTokenizer), each with a tokenizer_config.json, and config.json's eos_token_id.
//
//===----------------------------------------------------------------------------===//
#include "tools/tgc/Driver.h"

#include "frontend/Spec.h"
#include "runtime/driver/FileUtil.h"
#include "tools/data/DataPrepare.h"
#include "runtime/driver/Hf.h"
#include "runtime/driver/Safetensors.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <fstream>
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

/// The tokenizer of a `tgc data prepare` directory, as its meta.json describes it.
struct DataTokenizer {
  std::string type;   ///< "sentencepiece" | "hf-tokenizers"
  std::string file;   ///< path of the tokenizer file in the data directory
  std::string target; ///< its name in the export directory
  nlohmann::json eosToken, bosToken, unkToken; ///< strings or null
  nlohmann::json eosId, bosId;                 ///< ints or null
  int64_t vocab = 0;
};

/// Reads DIR/meta.json's tokenizer (format_version 2's object, or the earlier
/// "tokenizer": "tokenizer.model" string) and checks the file against its sha256 and its
/// vocab_size against the model's. False with *err naming the file and what is wrong.
bool readDataTokenizer(const std::string &dir, int64_t modelVocab, DataTokenizer *t,
                       std::string *err) {
  llvm::SmallString<256> metaPath(dir);
  llvm::sys::path::append(metaPath, "meta.json");
  std::ifstream in{std::string(metaPath)};
  if (!in) {
    *err = std::string(metaPath) + ": cannot open (--data takes a `tgc data prepare` "
                                   "directory)";
    return false;
  }
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(in);
  } catch (const std::exception &e) {
    *err = std::string(metaPath) + ": not valid JSON: " + e.what();
    return false;
  }
  if (!meta.is_object() || !meta.contains("tokenizer")) {
    *err = std::string(metaPath) + ": no \"tokenizer\" entry";
    return false;
  }
  const nlohmann::json &tk = meta["tokenizer"];
  std::string sha;
  if (tk.is_string()) { // before format_version 2: the sentencepiece model's file name
    t->type = "sentencepiece";
    t->file = tk.get<std::string>();
  } else if (tk.is_object() && tk.value("type", "") != "" && tk.value("file", "") != "") {
    t->type = tk["type"].get<std::string>();
    t->file = tk["file"].get<std::string>();
    sha = tk.value("sha256", "");
    t->eosToken = tk.value("eos_token", nlohmann::json());
    t->bosToken = tk.value("bos_token", nlohmann::json());
    t->unkToken = tk.value("unk_token", nlohmann::json());
    t->bosId = tk.value("bos_id", nlohmann::json());
  } else {
    *err = std::string(metaPath) + ": \"tokenizer\" must be an object with \"type\" and "
                                   "\"file\"";
    return false;
  }
  if (t->type == "sentencepiece") {
    t->target = "tokenizer.model";
    if (t->eosToken.is_null()) t->eosToken = "</s>";   // what prepare's trainer names them
    if (t->unkToken.is_null()) t->unkToken = "<unk>";
  } else if (t->type == "hf-tokenizers") {
    t->target = "tokenizer.json";
  } else {
    *err = std::string(metaPath) + ": unknown tokenizer type '" + t->type +
           "' (expected sentencepiece or hf-tokenizers)";
    return false;
  }
  if (meta.contains("eos_id") && meta["eos_id"].is_number_integer()) t->eosId = meta["eos_id"];
  if (meta.contains("vocab_size") && meta["vocab_size"].is_number_integer())
    t->vocab = meta["vocab_size"].get<int64_t>();
  llvm::SmallString<256> file(dir);
  llvm::sys::path::append(file, t->file);
  t->file = std::string(file);
  if (!llvm::sys::fs::exists(t->file)) {
    *err = t->file + ": missing (meta.json names it as the tokenizer)";
    return false;
  }
  if (!sha.empty()) {
    std::string have;
    if (!sha256File(t->file, &have, err)) return false;
    if (have != sha) {
      *err = t->file + ": SHA-256 " + have + " differs from meta.json's " + sha +
             " (the file changed after `tgc data prepare` wrote it)";
      return false;
    }
  }
  if (t->vocab > modelVocab) {
    *err = std::string(metaPath) + ": the tokenizer has vocab_size " + std::to_string(t->vocab) +
           ", more than the model's " + std::to_string(modelVocab) +
           ": it was not trained on this data";
    return false;
  }
  return true;
}

/// Copies the tokenizer into `hfDir` and writes its tokenizer_config.json (atomically).
bool exportTokenizer(const DataTokenizer &t, const std::string &hfDir, int64_t context,
                     std::string *err) {
  llvm::SmallString<256> dst(hfDir), cfgPath(hfDir);
  llvm::sys::path::append(dst, t.target);
  llvm::sys::path::append(cfgPath, "tokenizer_config.json");
  std::ifstream in(t.file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) {
    *err = t.file + ": read error";
    return false;
  }
  tgrt::AtomicFile tf{std::string(dst)};
  tf.write(bytes.data(), bytes.size());
  if (!tf.commit()) {
    *err = tf.error();
    return false;
  }
  nlohmann::ordered_json cfg;
  if (t.type == "hf-tokenizers") {
    // tokenizer.json carries everything; the fast tokenizer class reads it as is.
    cfg = {{"tokenizer_class", "PreTrainedTokenizerFast"},
           {"eos_token", t.eosToken},
           {"bos_token", t.bosToken},
           {"model_max_length", context},
           {"clean_up_tokenization_spaces", false}};
  } else {
    // prepare's sentencepiece BPE (byte fallback, identity normalisation, no BOS): a
    // LlamaTokenizer in "legacy" mode encodes exactly as sentencepiece does; AutoTokenizer
    // converts it to LlamaTokenizerFast (needs the sentencepiece and protobuf packages).
    cfg = {{"tokenizer_class", "LlamaTokenizer"},
           {"add_bos_token", false},
           {"add_eos_token", false},
           {"bos_token", nullptr},
           {"eos_token", t.eosToken},
           {"unk_token", t.unkToken},
           {"pad_token", nullptr},
           {"legacy", true},
           {"model_max_length", context},
           {"sp_model_kwargs", nlohmann::ordered_json::object()},
           {"clean_up_tokenization_spaces", false}};
  }
  const std::string text = cfg.dump(2) + "\n";
  tgrt::AtomicFile cf{std::string(cfgPath)};
  cf.write(text.data(), text.size());
  if (!cf.commit()) {
    *err = cf.error();
    return false;
  }
  return true;
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

  // Which transformers class computes this model (none: refused with the reason).
  std::string why;
  const std::string arch = hfArchitecture(m, &why);
  if (arch.empty())
    return fail(specName + ": cannot be exported to Hugging Face: " + why);
  const bool gpt2 = arch == "GPT2LMHeadModel";
  if (spec.training.attention.window > 0)
    return fail(specName + ": training.attention.window: " +
                std::to_string(spec.training.attention.window) +
                ": a sliding-window model cannot be exported: " +
                (gpt2 ? "GPT-2" : "Llama") + " attends to the whole causal context");

  // The checkpoint: every spec parameter present, F32, with the spec's shape.
  tgrt::SafetensorsReader reader;
  std::string err;
  if (!reader.open(opts.checkpoint, &err))
    return fail(err);
  // The model fields of the spec the checkpoint was trained with (its metadata), first:
  // a different d_model is named as such rather than as the tensor shapes it changes.
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

  // The tokenizer of --data, checked before anything is written.
  DataTokenizer tok;
  if (!opts.dataDir.empty() && !readDataTokenizer(opts.dataDir, m.vocab_size, &tok, &err))
    return fail(err);

  if (!reader.hasChecksums())
    llvm::errs() << "tgc: note: " << opts.checkpoint
                 << " records no tensor checksums (saved before they were added): its "
                    "tensors are exported unverified, only checked for NaN and inf\n";

  // Read each parameter and cut it into its Hugging Face pieces (the spec's table); zeros
  // for the biases GPT-2 has and the spec does not.
  const int64_t D = m.d_model, F = m.d_ff, V = m.vocab_size;
  std::vector<std::vector<float>> data;
  std::vector<tgrt::StTensorView> views;
  data.reserve(2 * params.size() + 4 * (size_t)m.n_layers);
  std::vector<float> whole;
  for (const ParamInfo &p : params) {
    if (p.hf.empty())
      return fail("export: internal: no Hugging Face name for parameter '" + p.name + "'");
    whole.resize((size_t)p.numel());
    // readF32 verifies the tensor's checksum (checkpoints that record them); a NaN or inf
    // is refused: the Hugging Face model would compute NaN.
    if (!reader.readF32(p.name, whole.data(), p.numel(), &err))
      return fail(err);
    if (int64_t bad = tgrt::firstNonFinite(whole.data(), p.numel()); bad >= 0)
      return fail(opts.checkpoint + ": " +
                  tgrt::nonFiniteText(p.name, p.shape, whole.data(), bad) +
                  ": refusing to export non-finite weights (the checkpoint was saved after "
                  "the run diverged, or altered)");
    for (const HfPiece &pc : p.hf) {
      std::vector<int64_t> shape = tgrt::hfPieceShape(p.shape, pc);
      int64_t n = 1;
      for (int64_t d : shape)
        n *= d;
      data.emplace_back((size_t)n);
      tgrt::extractHfPiece(whole.data(), p.shape, pc, data.back().data());
      views.push_back({pc.name, shape, nullptr});
    }
  }
  auto zeros = [&](const std::string &name, int64_t n) {
    data.emplace_back((size_t)n, 0.0f);
    views.push_back({name, {n}, nullptr});
  };
  if (gpt2)
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
  if (gpt2 && !m.attention_bias)
    llvm::errs() << "tgc: note: the spec has no attention biases (model.attention_bias=false); "
                    "GPT-2 always has them, so attn.c_attn.bias and attn.c_proj.bias are "
                    "written as zeros: exact, a zero bias adds nothing\n";
  if (gpt2 && !m.mlp_bias)
    llvm::errs() << "tgc: note: the spec has no MLP biases (model.mlp_bias=false); GPT-2 "
                    "always has them, so mlp.c_fc.bias and mlp.c_proj.bias are written as "
                    "zeros: exact, a zero bias adds nothing\n";

  nlohmann::ordered_json config;
  if (gpt2) {
    // A GPT2Config. tgc applies dropout after the embeddings and on both residual
    // branches, never on the attention probabilities: attn_pdrop is 0.
    config = {{"architectures", {"GPT2LMHeadModel"}},
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
              // The spec does not know the tokenizer (GPT2Config's default 50256 may not
              // even be in the vocabulary): leave them unset. tgc data prepare's meta.json
              // has eos_id.
              {"bos_token_id", nullptr},
              {"eos_token_id", nullptr},
              {"torch_dtype", "float32"}};
  } else {
    // A LlamaConfig (rotate-half RoPE on q and k, heads contiguous: tgc's layout is HF's,
    // no permutation). Llama has no dropout on the embeddings or the residual branches.
    nlohmann::ordered_json scaling = nullptr;
    if (m.rope_scaling.factor > 0)
      scaling = {{"rope_type", "llama3"},
                 {"factor", m.rope_scaling.factor},
                 {"low_freq_factor", m.rope_scaling.low_freq_factor},
                 {"high_freq_factor", m.rope_scaling.high_freq_factor},
                 {"original_max_position_embeddings", m.rope_scaling.original_context}};
    config = {{"architectures", {"LlamaForCausalLM"}},
              {"model_type", "llama"},
              {"vocab_size", V},
              {"hidden_size", D},
              {"intermediate_size", F},
              {"num_hidden_layers", m.n_layers},
              {"num_attention_heads", m.n_heads},
              {"num_key_value_heads", m.kvHeads()},
              {"head_dim", m.headDim()},
              {"hidden_act", "silu"},
              {"max_position_embeddings", m.context},
              {"rms_norm_eps", m.layer_norm_eps},
              {"rope_theta", m.rope_theta},
              {"rope_scaling", scaling},
              {"attention_bias", m.attention_bias},
              {"attention_dropout", 0.0},
              {"mlp_bias", m.mlp_bias},
              {"pretraining_tp", 1},
              {"initializer_range", 0.02},
              {"tie_word_embeddings", m.tie_embeddings},
              {"use_cache", true},
              {"bos_token_id", nullptr},
              {"eos_token_id", nullptr},
              {"torch_dtype", "float32"}};
    // What older transformers releases do not read (4.38 ignores head_dim and mlp_bias
    // and refuses rope_type llama3); 4.45, which scripts/setup.sh installs, reads all.
    std::vector<std::string> newer;
    if (m.headDim() * m.n_heads != D)
      newer.push_back("head_dim " + std::to_string(m.headDim()) + " (not d_model / n_heads)");
    if (m.mlp_bias)
      newer.push_back("mlp_bias true");
    if (m.rope_scaling.factor > 0)
      newer.push_back("rope_scaling with rope_type \"llama3\"");
    for (const std::string &f : newer)
      llvm::errs() << "tgc: note: config.json has " << f
                   << ", which transformers reads from 4.45 on (scripts/setup.sh installs "
                      "4.45.2); older releases such as 4.38 ignore or refuse it\n";
    if (m.dropout > 0)
      llvm::errs() << "tgc: note: model.dropout " << m.dropout
                   << " is not exported: Llama has no dropout on the embeddings or the "
                      "residual branches (the function in eval mode is the same)\n";
  }
  if (!opts.dataDir.empty()) {
    // The tokenizer is known: its EOS (and BOS) ids go into the model's config.
    config["eos_token_id"] = tok.eosId;
    config["bos_token_id"] = tok.bosId;
  }
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
  if (!tgrt::writeSafetensors(std::string(weightsPath), views, outMeta, &err,
                              /*checksums=*/true))
    return fail(err);
  tgrt::AtomicFile cf{std::string(configPath)};
  cf.write(configText.data(), configText.size());
  if (!cf.commit())
    return fail(cf.error());

  if (!opts.dataDir.empty()) {
    if (!exportTokenizer(tok, opts.hfDir, m.context, &err))
      return fail(err);
    llvm::errs() << "tgc: wrote the tokenizer (" << tok.type << ", " << tok.file
                 << ") and tokenizer_config.json into " << opts.hfDir
                 << "; load with transformers.AutoTokenizer.from_pretrained(\"" << opts.hfDir
                 << "\")\n";
  }

  int64_t total = 0;
  for (const ParamInfo &p : params)
    total += p.numel();
  llvm::errs() << "tgc: wrote " << configPath << " and " << weightsPath << " ("
               << views.size() << " tensors, " << total << " trained parameters"
               << (m.tie_embeddings ? ", lm_head tied to wte" : "")
               << "); load with transformers." << arch << ".from_pretrained(\"" << opts.hfDir
               << "\")\n";
  return 0;
}

} // namespace tgc
