//===- TgOpKnowledge.cpp - cost and memory answers of the tg ops -------------===//
//
// CostOpInterface and MemoryOpInterface methods that differ from the defaults
// (TgInterfaces.td): FLOPs of the GEMMs and attention, and the workspace bytes of the
// kernels that need scratch (runtime/tgrt.h and runtime/cuda/CudaRuntime.h document the
// sizes; tg-plan-memory reserves the largest).
//
//===----------------------------------------------------------------------------===//
#include "dialect/TgDialect.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tg;

namespace {

RankedTensorType rt(Value v) { return cast<RankedTensorType>(v.getType()); }
int64_t bytesOf(Value v) {
  auto t = rt(v);
  return t.getNumElements() * (int64_t)(t.getElementTypeBitWidth() / 8);
}
int64_t lastDim(Value v) { return rt(v).getShape().back(); }
int64_t elems(Value v) { return rt(v).getNumElements(); }

/// Visible (query, key) pairs of one head: all t^2, causal t(t+1)/2, or with a window w
/// each query sees min(i+1, w) keys.
int64_t attentionPairs(int64_t t, bool causal, int64_t w) {
  int64_t pairs = 0;
  for (int64_t i = 0; i < t; ++i)
    pairs += !causal ? t : (w > 0 ? std::min(i + 1, w) : i + 1);
  return pairs;
}

} // namespace

//===------------------------------------------------------------------ FLOPs --===//

/// 2 m n k per batch entry (a multiply-add is 2 FLOPs).
int64_t MatmulOp::flops() {
  auto a = rt(getA());
  int64_t k = getTransposeA() ? a.getDimSize(a.getRank() - 2) : a.getDimSize(a.getRank() - 1);
  return 2 * rt(getResult()).getNumElements() * k;
}

/// S = q k^T and O = P v: 4 hd FLOPs per visible pair and head (FlashAttention's count).
int64_t AttentionOp::flops() {
  auto q = rt(getQ());
  int64_t bh = q.getDimSize(0) * q.getDimSize(1), t = q.getDimSize(2), hd = q.getDimSize(3);
  return 4 * bh * hd * attentionPairs(t, getCausal(), getWindow());
}

/// S and dP recomputed, dV, dQ, dK: 5 products, 10 hd FLOPs per visible pair and head.
int64_t AttentionGradOp::flops() {
  auto q = rt(getQ());
  int64_t bh = q.getDimSize(0) * q.getDimSize(1), t = q.getDimSize(2), hd = q.getDimSize(3);
  return 10 * bh * hd * attentionPairs(t, getCausal(), getWindow());
}

int64_t AttentionQKVOp::flops() {
  auto x = rt(getQkv());
  int64_t H = getHeads(), hd = x.getDimSize(2) / (H + 2 * getKvHeadsOrHeads());
  return 4 * x.getDimSize(0) * H * hd * attentionPairs(x.getDimSize(1), getCausal(), getWindow());
}

int64_t AttentionQKVGradOp::flops() {
  auto x = rt(getQkv());
  int64_t H = getHeads(), hd = x.getDimSize(2) / (H + 2 * getKvHeadsOrHeads());
  return 10 * x.getDimSize(0) * H * hd *
         attentionPairs(x.getDimSize(1), getCausal(), getWindow());
}

/// Per rotated pair 4 multiplies and 2 adds (the sin/cos not counted).
int64_t RopeOp::flops() {
  auto x = rt(getX());
  int64_t slots = getHeads() + 2 * getKvHeads();
  return 3 * x.getNumElements() / slots * (getHeads() + getKvHeads());
}

/// silu (sigmoid ~ 4) and the product: 5 per output element.
int64_t SwigluOp::flops() { return 5 * elems(getResult()); }
int64_t SwigluGradOp::flops() { return 8 * elems(getDy()); }

/// The GEMM (2 m n k), the add (m n) and the bias (m n, when there is one).
int64_t MatmulResidualOp::flops() {
  auto a = rt(getA());
  int64_t k = a.getShape().back();
  return 2 * elems(getOut()) * k + (getBias() ? 2 : 1) * elems(getOut());
}

/// The GEMM (2 m n k) and the bias add (m n), as tg.matmul + tg.bias_add.
int64_t MatmulBiasOp::flops() {
  int64_t k = rt(getA()).getShape().back();
  return 2 * elems(getOut()) * k + elems(getOut());
}

/// The GEMM, the bias add and the GELU (one each per output element), as the chain.
int64_t MatmulBiasGeluOp::flops() {
  int64_t k = rt(getA()).getShape().back();
  return 2 * elems(getOut()) * k + 2 * elems(getOut());
}

/// The add (one per element) and the layer norm (one per element of y, mean and rstd, as
/// tg.layer_norm's default): the chain's count. The widening cast read in place is free.
int64_t AddLayerNormOp::flops() { return 2 * elems(getSum()) + 2 * elems(getMean()); }

/// The GEMM (2 m n k), the GELU gradient (one per element of dx) and the bias gradient (one
/// per column), as the chain's ops count them.
int64_t MatmulDgeluBgradOp::flops() {
  int64_t k = rt(getA()).getShape().back();
  return 2 * elems(getDx()) * k + elems(getDx()) + elems(getDb());
}

//===------------------------------------------------------------- selective --===//

bool BiasAddOp::keptBySelective() { return getX().getDefiningOp<MatmulOp>() != nullptr; }

//===------------------------------------------------------------- workspace --===//

/// The workspace of cuDNN's fused SDPA backward (runtime/cuda/CudnnAttention.cu, non-
/// deterministic), bf16 / f16: with rows = B H T (the rows of lse) and head dim hd,
/// rows * 4 * (hd + 1) bytes (a float32 dQ accumulator and a row sum), plus rows * hd * 4
/// when grouped-query (Hkv < H; float32 dK / dV per query head), plus 256. Measured, not
/// documented by NVIDIA: cuDNN 9.14 on the H100 asked exactly this at GPT-2 small (16 x 12,
/// t 1024, hd 64: 51,118,336 B), Llama 3.2 1B (4 x 32/8, t 2048, hd 64: 135,266,560), hd 128
/// (8 x 8, t 2048: 67,633,408) and 8 x 32/8, hd 128 (538,968,320) (bench/results/2026-11-27-
/// h100/call66). A larger need at run time is allocated beside the plan and reported.
int64_t cudnnSdpaBackwardBytes(int64_t rows, int64_t hd, bool grouped) {
  return rows * 4 * (hd + 1) + (grouped ? rows * hd * 4 : 0) + 256;
}

/// True when the module's attention runs cuDNN's SDPA (`tg.attention_impl = "cudnn"`, set
/// by tg-plan-memory's attention-impl option) and the operand is bf16 / f16 (the runtime
/// routes only those through cuDNN).
bool cudnnAttention(Operation *op, Value operand) {
  auto module = op->getParentOfType<ModuleOp>();
  auto impl = module ? module->getAttrOfType<StringAttr>("tg.attention_impl") : StringAttr();
  Type e = rt(operand).getElementType();
  return impl && impl.getValue() == "cudnn" && (e.isBF16() || e.isF16());
}

/// The backward's D = rowsum(dout * out): float32 [B, H, T], the size of lse; under cuDNN
/// (cudnnAttention) its backward's workspace when larger.
int64_t AttentionGradOp::workspaceBytes() {
  int64_t own = bytesOf(getLse());
  if (!cudnnAttention(*this, getQ()))
    return own;
  auto q = rt(getQ()).getShape(), k = rt(getK()).getShape();
  return std::max(own, cudnnSdpaBackwardBytes(elems(getLse()), q.back(), k[1] < q[1]));
}
int64_t AttentionQKVGradOp::workspaceBytes() {
  int64_t own = bytesOf(getLse());
  if (!cudnnAttention(*this, getQkv()))
    return own;
  const int64_t heads = getHeads(), hd = lastDim(getOut()) / heads;
  return std::max(own, cudnnSdpaBackwardBytes(elems(getLse()), hd, getKvHeadsOrHeads() < heads));
}

/// The sort (24 bytes per token), 1 MiB, and the float32 sums of the chunks of sorted tokens.
int64_t EmbeddingGradOp::workspaceBytes() {
  return 24 * elems(getIds()) + (1 << 20) +
         8 * lastDim(getDout()) * std::min<int64_t>((elems(getIds()) + 31) / 32, 512);
}

/// Partial column sums of dgamma / dbeta (and of a bias gradient): 2 KiB per column.
/// The fused backward's column partials (runtime/cuda Kernels.cu layerNormBwdFused): up to 256
/// blocks x d floats for dbeta, dgamma and, when the lowering adds the projection's bias
/// gradient (tgrt_layer_norm_bwd_acc_bgrad), a third sum.
int64_t LayerNormGradOp::workspaceBytes() { return 3072 * lastDim(getX()); }
int64_t RmsNormGradOp::workspaceBytes() { return 2048 * lastDim(getX()); }
int64_t BiasGradOp::workspaceBytes() { return 2048 * lastDim(getDy()); }

/// tgrt_cross_entropy_fwd_bwd: the valid count (256 bytes), then the row losses.
int64_t CrossEntropyGradOp::workspaceBytes() {
  return 256 + 8 * (elems(getLogits()) / lastDim(getLogits()));
}
