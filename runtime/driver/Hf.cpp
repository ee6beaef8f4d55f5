// Hf.cpp — `--init-from DIR`: a Hugging Face model directory as the initial parameters (see
// Hf.h, docs/hf.md). The pieces and the config check are in HfLayout.cpp.
#include "runtime/driver/Hf.h"

#include "runtime/driver/Driver.h"
#include "runtime/driver/Safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>

namespace tgrt {

// ----------------------------------------------------------------------- --init-from --

namespace {

std::string shapeText(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (size_t k = 0; k < s.size(); ++k) o += (k ? ", " : "") + std::to_string(s[k]);
  return o + "]";
}

int64_t numelOf(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

bool failWith(std::string* err, const std::string& msg) {
  if (err) *err = msg;
  return false;
}

bool readText(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

bool fileExists(const std::string& path) { return std::ifstream(path).good(); }

/// Where one HF tensor of the file goes.
struct Source {
  SafetensorsReader* reader = nullptr;
  std::string file_name; ///< its name in the file (maybe without the base-model prefix)
  const StTensorInfo* info = nullptr;
};

/// Reads tensor `src` as n floats (F32, BF16, F16, F64 widened exactly or, F64, rounded).
bool readAsFloats(const Source& src, float* dst, int64_t n, std::string* err) {
  const std::string& dt = src.info->dtype;
  const int64_t item = dt == "F32" ? 4 : dt == "F64" ? 8 : 2;
  std::vector<char> raw((size_t)(n * item));
  if (!src.reader->readBytes(src.file_name, raw.data(), (int64_t)raw.size(), err)) return false;
  if (dt == "F32") std::memcpy(dst, raw.data(), raw.size());
  else if (dt == "BF16") dtypeToFloat(raw.data(), TGRT_BF16, n, dst);
  else if (dt == "F16") dtypeToFloat(raw.data(), TGRT_F16, n, dst);
  else {
    const double* d = reinterpret_cast<const double*>(raw.data());
    for (int64_t i = 0; i < n; ++i) dst[i] = (float)d[i];
  }
  return true;
}

} // namespace

bool loadHfInit(tgrt_ctx* ctx, const tgrt_model& model, const std::string& dir,
                std::vector<std::string>* notes, std::string* err) {
  const std::string head = "--init-from " + dir + ": ";
  // The compiled model's spec and its Hugging Face class.
  if (!model.spec_json || !*model.spec_json)
    return failWith(err, head + "this executable carries no spec (tgrt_model.spec_json), so "
                                "its parameters cannot be matched to Hugging Face tensors");
  tgc::Spec spec;
  tgc::SpecError serr;
  if (!tgc::parseSpec(model.spec_json, {}, spec, serr, "<the model's spec>"))
    return failWith(err, head + "the model's own spec does not parse: " +
                             tgc::formatSpecError("<the model's spec>", serr));
  const tgc::ModelSpec& m = spec.model;
  std::string why;
  const std::string arch = tgc::hfArchitecture(m, &why);
  if (arch.empty())
    return failWith(err, head + "this model has no Hugging Face class: " + why);
  const bool gpt2 = arch == "GPT2LMHeadModel";

  // config.json against the spec.
  const std::string config_path = dir + "/config.json";
  std::string text;
  if (!readText(config_path, &text))
    return failWith(err, head + "cannot read " + config_path +
                             " (a directory written by save_pretrained or tgc export --hf)");
  nlohmann::json config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return failWith(err, head + config_path + " is not valid JSON");
  std::vector<std::string> diffs = hfConfigDifferences(config, m, arch, config_path, notes);
  if (!diffs.empty()) {
    std::string msg = head + config_path + " describes another model than this one (" +
                      (model.name ? model.name : "?") + ", a " + arch + "):";
    for (const std::string& d : diffs) msg += "\n  " + d;
    return failWith(err, msg);
  }

  // The weights: one file or shards named by the index.
  std::vector<std::unique_ptr<SafetensorsReader>> readers;
  const std::string single = dir + "/model.safetensors",
                    index_path = dir + "/model.safetensors.index.json";
  std::vector<std::string> files;
  if (fileExists(single)) {
    files.push_back(single);
  } else if (readText(index_path, &text)) {
    const nlohmann::json index = nlohmann::json::parse(text, nullptr, false);
    if (index.is_discarded() || !index.is_object() || !index.contains("weight_map") ||
        !index["weight_map"].is_object())
      return failWith(err, head + index_path + " has no \"weight_map\" object");
    std::set<std::string> seen;
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      if (!it->is_string() || it->get<std::string>().find('/') != std::string::npos)
        return failWith(err, head + index_path + ": weight_map[\"" + it.key() +
                                 "\"] is not a file name in " + dir);
      if (seen.insert(it->get<std::string>()).second) files.push_back(dir + "/" + it->get<std::string>());
    }
  } else {
    return failWith(err, head + "neither " + single + " nor " + index_path +
                             " exists (only safetensors are read: save with "
                             "save_pretrained(..., safe_serialization=True))");
  }
  // name (with the base-model prefix) -> where it is.
  std::map<std::string, Source> have;
  const std::string prefix = gpt2 ? "transformer." : "model.";
  for (const std::string& f : files) {
    readers.emplace_back(new SafetensorsReader);
    if (!readers.back()->open(f, err)) return failWith(err, head + *err);
    for (const auto& kv : readers.back()->tensors()) {
      std::string name = kv.first;
      if (name != "lm_head.weight" && name.rfind(prefix, 0) != 0) name = prefix + name;
      if (have.count(name))
        return failWith(err, head + "tensor '" + name + "' is in both " +
                                 have[name].reader->path() + " and " + f);
      have[name] = Source{readers.back().get(), kv.first, &kv.second};
    }
  }

  // What this model needs: each parameter's pieces.
  const std::vector<tgc::ParamInfo> params = tgc::modelParameters(m);
  std::map<std::string, const tgc::ParamInfo*> by_name;
  for (const tgc::ParamInfo& p : params) by_name[p.name] = &p;
  if ((int64_t)params.size() != model.n_params)
    return failWith(err, head + "internal: the spec has " + std::to_string(params.size()) +
                             " parameters, the compiled model " + std::to_string(model.n_params));
  std::vector<std::string> problems;
  std::set<std::string> used;
  for (int32_t i = 0; i < model.n_params; ++i) {
    const tgrt_param& tp = model.params[i];
    auto it = by_name.find(tp.name);
    if (it == by_name.end())
      return failWith(err, head + "internal: parameter '" + tp.name +
                               "' of the compiled model is not in its spec's table");
    const tgc::ParamInfo& p = *it->second;
    if (p.hf.empty())
      return failWith(err, head + "internal: parameter '" + p.name + "' has no Hugging Face name");
    for (const tgc::HfPiece& pc : p.hf) {
      std::vector<int64_t> want = hfPieceShape(p.shape, pc);
      auto h = have.find(pc.name);
      if (h == have.end()) {
        problems.push_back("no tensor '" + pc.name + "' (shape " + shapeText(want) +
                           ", for parameter '" + p.name + "')");
        continue;
      }
      used.insert(pc.name);
      const StTensorInfo& info = *h->second.info;
      if (info.dtype != "F32" && info.dtype != "BF16" && info.dtype != "F16" &&
          info.dtype != "F64")
        problems.push_back("tensor '" + pc.name + "' has dtype " + info.dtype +
                           " (read: F32, BF16, F16, F64)");
      // GPT-2's position table may have more rows than the context: the first ones are used.
      const bool wpe_ok = p.name == "wpe" && info.shape.size() == 2 && want.size() == 2 &&
                          info.shape[1] == want[1] && info.shape[0] >= want[0];
      if (info.shape != want && !wpe_ok)
        problems.push_back("tensor '" + pc.name + "' has shape " + shapeText(info.shape) +
                           ", this model's '" + p.name + "' needs " + shapeText(want));
    }
  }
  // The rest of the file: buffers transformers ignores, GPT-2 biases a bias-free spec
  // lacks (accepted when zero), a tied lm_head; anything else is refused.
  int64_t ignored_buffers = 0;
  std::vector<std::string> zero_biases;
  for (const auto& kv : have) {
    const std::string& name = kv.first;
    if (used.count(name)) continue;
    auto ends = [&](const char* s) {
      const size_t n = std::strlen(s);
      return name.size() >= n && name.compare(name.size() - n, n, s) == 0;
    };
    if ((gpt2 && (ends(".attn.bias") || ends(".attn.masked_bias"))) ||
        (!gpt2 && ends(".rotary_emb.inv_freq"))) {
      ++ignored_buffers;
      continue;
    }
    if (name == "lm_head.weight" && m.tie_embeddings) {
      if (notes)
        notes->push_back("lm_head.weight is not read: this model ties it to the embeddings");
      continue;
    }
    const bool missing_bias =
        gpt2 && ((!m.attention_bias && (ends(".attn.c_attn.bias") || ends(".attn.c_proj.bias"))) ||
                 (!m.mlp_bias && (ends(".mlp.c_fc.bias") || ends(".mlp.c_proj.bias"))));
    if (missing_bias) {
      const StTensorInfo& info = *kv.second.info;
      const int64_t n = numelOf(info.shape);
      std::vector<float> v((size_t)n);
      std::string rerr;
      if (info.dtype != "F32" && info.dtype != "BF16" && info.dtype != "F16" &&
          info.dtype != "F64") {
        problems.push_back("tensor '" + name + "' has dtype " + info.dtype);
        continue;
      }
      if (!readAsFloats(kv.second, v.data(), n, &rerr)) return failWith(err, head + rerr);
      if (std::any_of(v.begin(), v.end(), [](float x) { return x != 0.0f; }))
        problems.push_back("tensor '" + name + "' is not zero, but this model has no " +
                           (ends(".bias") && name.find(".attn.") != std::string::npos
                                ? "attention biases (model.attention_bias false)"
                                : "MLP biases (model.mlp_bias false)"));
      else
        zero_biases.push_back(name);
      continue;
    }
    problems.push_back("tensor '" + name + "' (shape " + shapeText(kv.second.info->shape) +
                       ") is not a parameter of this model");
  }
  if (!problems.empty()) {
    std::string msg = head + "the weights do not match this model (" +
                      (model.name ? model.name : "?") + ", a " + arch + "):";
    const size_t shown = std::min<size_t>(problems.size(), 12);
    for (size_t k = 0; k < shown; ++k) msg += "\n  " + problems[k];
    if (problems.size() > shown)
      msg += "\n  ... and " + std::to_string(problems.size() - shown) + " more";
    return failWith(err, msg);
  }
  if (notes && !zero_biases.empty())
    notes->push_back(std::to_string(zero_biases.size()) +
                     " zero bias tensors of GPT-2 are not read: this model has none (exact)");
  if (notes && ignored_buffers > 0)
    notes->push_back(std::to_string(ignored_buffers) +
                     " buffers that are not parameters (attention masks, rotary frequencies) "
                     "are not read");

  // Assemble, convert and upload each parameter.
  std::vector<float> host, piece;
  for (int32_t i = 0; i < model.n_params; ++i) {
    const tgrt_param& tp = model.params[i];
    const tgc::ParamInfo& p = *by_name[tp.name];
    if (numelOf(p.shape) != tp.numel)
      return failWith(err, head + "internal: parameter '" + p.name + "' has " +
                               std::to_string(tp.numel) + " elements, its spec shape " +
                               shapeText(p.shape));
    host.assign((size_t)tp.numel, 0.0f);
    for (const tgc::HfPiece& pc : p.hf) {
      const Source& src = have[pc.name];
      const int64_t n = numelOf(src.info->shape);
      piece.resize((size_t)n);
      if (!readAsFloats(src, piece.data(), n, err)) return failWith(err, head + *err);
      const int64_t bad = firstNonFinite(piece.data(), n);
      if (bad >= 0)
        return failWith(err, head + src.reader->path() + ": " +
                                 nonFiniteText(pc.name, src.info->shape, piece.data(), bad) +
                                 ": the weights must be finite");
      insertHfPiece(piece.data(), p.shape, pc, host.data()); // wpe: its first rows
    }
    uploadSlot(ctx, model, tp, 0, host.data());
  }
  return true;
}

} // namespace tgrt
