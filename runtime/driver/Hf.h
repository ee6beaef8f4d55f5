// Hf.h — Hugging Face checkpoints: tgc's parameters <-> transformers' tensors.
//
// Both directions read the one table of frontend/Spec.h: modelParameters(m)[i].hf lists the
// pieces of parameter i (a column range of tgc's [in, out] weight, or an element range of a
// 1-D tensor, transposed to nn.Linear's [out, in] when `transpose`). `tgc export --hf`
// (tools/tgc/Export.cpp) cuts each parameter into its pieces (extractHfPiece); the driver's
// `--init-from DIR` (loadHfInit) reads DIR/config.json and the safetensors, checks them
// against the compiled model's spec and assembles each parameter from its pieces
// (insertHfPiece) before uploading it. docs/hf.md describes both.
#ifndef TGRT_DRIVER_HF_H
#define TGRT_DRIVER_HF_H

#include "frontend/Spec.h"
#include "runtime/tgrt.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tgrt {

/// The shape of piece `pc` of a tgc tensor of shape `shape` (1-D or 2-D [in, out]): the
/// column range [col_begin, col_end) (col_end 0: to the end), [in, cols] as stored or
/// [cols, in] when transposed; for a 1-D tensor the element range.
std::vector<int64_t> hfPieceShape(const std::vector<int64_t>& shape, const tgc::HfPiece& pc);

/// Copies piece `pc` of the tgc tensor `param` (row-major, `shape`) into `out`
/// (hfPieceShape(shape, pc) elements, row-major).
void extractHfPiece(const float* param, const std::vector<int64_t>& shape,
                    const tgc::HfPiece& pc, float* out);

/// The inverse: writes the HF tensor `piece` (hfPieceShape(shape, pc), row-major) into its
/// place in the tgc tensor `param`.
void insertHfPiece(const float* piece, const std::vector<int64_t>& shape,
                   const tgc::HfPiece& pc, float* param);

/// The fields of a transformers config.json (`config`) that describe another model than
/// `m` (whose transformers class is `arch`, from tgc::hfArchitecture), one line each:
/// "hidden_size 64 in CONFIG, model.d_model 128 in this model" (CONFIG = `config_name`).
/// Absent fields take transformers' defaults (GPT2Config, LlamaConfig). A model_type
/// other than arch's is one line and ends the comparison. Fields that do not change the
/// weights' function (dropout, use_cache, token ids) are not compared; max positions are
/// allowed to exceed model.context (`notes` then says so; GPT-2's wpe keeps its first
/// context rows).
std::vector<std::string> hfConfigDifferences(const nlohmann::json& config,
                                             const tgc::ModelSpec& m, const std::string& arch,
                                             const std::string& config_name,
                                             std::vector<std::string>* notes);

/// --init-from DIR: reads DIR/config.json and DIR/model.safetensors (or the shards that
/// DIR/model.safetensors.index.json names), checks the config against `model`'s spec
/// (model.spec_json, parsed with tgc::parseSpec) and every tensor's name, shape and dtype
/// (F32, BF16, F16, F64) against the parameters' Hugging Face pieces (tgc::modelParameters'
/// hf table) before uploading anything; then assembles each parameter (the fused qkv and
/// gate | up columns, transposes undone), converts it to the parameter's dtype and uploads
/// it into value slot 0 (under ZeRO-3 this rank's chunk, uploadSlot). Moments are left as
/// they are (zero in a fresh context). Returns false with *err naming DIR and each problem:
/// the differing config fields, a missing tensor, one the model has no parameter for, a
/// shape mismatch (both shapes), an unsupported dtype. `notes` receives remarks (wpe rows
/// dropped, zero GPT-2 biases dropped for a bias-free spec, ignored buffers).
bool loadHfInit(tgrt_ctx* ctx, const tgrt_model& model, const std::string& dir,
                std::vector<std::string>* notes, std::string* err);

} // namespace tgrt

#endif // TGRT_DRIVER_HF_H
