//===- TgOps.td - tg dialect ops ----------------------------*- tablegen -*-===//
//
// Shapes use B = batch, T = sequence length (context), D = d_model, H = heads,
// hd = head dim, V = vocab, C = positional table rows (context), F = d_ff.
// "float" means f32, bf16 or f16; all ops are pure value-semantics unless noted.
//
//===----------------------------------------------------------------------------===//
#ifndef TG_OPS
#define TG_OPS

include "TgDialect.td"
include "TgInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"

def Tg_FloatTensor : RankedTensorOf<[F32, BF16, F16]>;
def Tg_F32Tensor : RankedTensorOf<[F32]>;
def Tg_IdTensor : RankedTensorOf<[I32]>;

// Every value-semantics op answers the cost and memory questions (defaults: one FLOP per
// output element, operands + results moved once, no in-place operand, no workspace); an op
// overrides a default by declaring the method in its extraClassDeclaration (its
// definition lives in TgOpKnowledge.cpp).
class Tg_PureOp<string mnemonic, list<Trait> traits = []> :
    Tg_Op<mnemonic, !listconcat(traits, [Pure, CostOpInterface, MemoryOpInterface])> {
  let hasVerifier = 1;
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

// A forward op: it builds its adjoint (TgGradients.cpp) and has a precision rule
// (TgPrecision.cpp).
class Tg_DiffOp<string mnemonic, list<Trait> traits = []> :
    Tg_PureOp<mnemonic, !listconcat(traits,
        [DeclareOpInterfaceMethods<GradientOpInterface>,
         DeclareOpInterfaceMethods<PrecisionOpInterface>])>;

//===-------------------------------------------------------------- forward --===//

def Tg_EmbeddingOp : Tg_DiffOp<"embedding"> {
  let summary = "token embedding lookup";
  let description = [{
    `out[b,t,:] = table[ids[b,t], :]`. table: [V, D] float; ids: [B, T] i32;
    result: [B, T, D] (table's element type). An id outside [0, V) is a runtime error.
    ```mlir
    %x = tg.embedding %wte, %ids : (tensor<50304x768xf32>, tensor<8x1024xi32>) -> tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$table, Tg_IdTensor:$ids);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    bool keptBySelective() { return true; }
  }];
}

def Tg_PositionalEmbeddingOp : Tg_DiffOp<"positional_embedding"> {
  let summary = "add learned positional embeddings";
  let description = [{
    `out[b,t,:] = x[b,t,:] + wpe[t,:]`. x: [B, T, D]; wpe: [C, D] with T <= C; result
    has x's type.
  }];
  let arguments = (ins Tg_FloatTensor:$x, Tg_FloatTensor:$wpe);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    bool keptBySelective() { return true; }
  }];
}

def Tg_AddOp : Tg_DiffOp<"add"> {
  let summary = "elementwise sum of two tensors of the same type";
  let arguments = (ins Tg_FloatTensor:$lhs, Tg_FloatTensor:$rhs);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    ::llvm::SmallVector<unsigned, 2> inPlaceOperands() { return {0, 1}; }
  }];
}

def Tg_LayerNormOp : Tg_DiffOp<"layer_norm"> {
  let summary = "layer normalisation over the last dim (Ba et al. 2016)";
  let description = [{
    x: [..., D]; gamma, beta: [D]. `y = (x - mean) * rstd * gamma + beta` with
    `rstd = 1/sqrt(var + eps)` (biased variance). Also returns the statistics for the
    backward: mean and rstd, f32, shape x.shape[:-1]. `eps` is unitless.
    y has x's shape and any float element type: the statistics and the normalisation are
    computed in f32 and y is rounded once (mixed precision: f32 residual stream in,
    bf16/f16 out, with no separate cast). gamma and beta share one element type.
  }];
  let arguments = (ins Tg_FloatTensor:$x, Tg_FloatTensor:$gamma, Tg_FloatTensor:$beta,
                   DefaultValuedAttr<F32Attr, "1e-5f">:$eps);
  let results = (outs Tg_FloatTensor:$y, Tg_F32Tensor:$mean, Tg_F32Tensor:$rstd);
}

def Tg_MatmulOp : Tg_DiffOp<"matmul"> {
  let summary = "batched matrix product with transpose flags and scale";
  let description = [{
    `result = alpha * op(a) op(b)`. a: [..., M, K] ([..., K, M] with transpose_a);
    b: either [K, N] (a weight shared by every batch entry) or [..., K, N] with the
    same leading dims as a ([..., N, K] with transpose_b); result: [..., M, N].
    `alpha` scales the product (attention's 1/sqrt(hd)).
  }];
  let arguments = (ins Tg_FloatTensor:$a, Tg_FloatTensor:$b,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_b,
                   DefaultValuedAttr<F32Attr, "1.0f">:$alpha);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    int64_t flops();
    bool keptBySelective() { return true; }
  }];
}

def Tg_BiasAddOp : Tg_DiffOp<"bias_add"> {
  let summary = "add a bias vector along the last dim";
  let description = [{ x: [..., N]; bias: [N]; result has x's type. }];
  let arguments = (ins Tg_FloatTensor:$x, Tg_FloatTensor:$bias);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    /// A bias add on a GEMM result is the GEMM's epilogue: selective keeps its output.
    bool keptBySelective();
    ::llvm::SmallVector<unsigned, 2> inPlaceOperands() { return {0}; }
  }];
}

def Tg_GeluOp : Tg_DiffOp<"gelu"> {
  let summary = "GELU, tanh approximation (Hendrycks & Gimpel 2016)";
  let description = [{
    `y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, elementwise; same type.
  }];
  let arguments = (ins Tg_FloatTensor:$x);
  let results = (outs Tg_FloatTensor:$result);
}

def Tg_DropoutOp : Tg_DiffOp<"dropout"> {
  let summary = "inverted dropout with a counter-based mask";
  let description = [{
    Keeps each element with probability 1 - rate and scales kept ones by 1/(1-rate).
    The mask is a hash of (seed, optimizer step, micro-batch, element index): it is
    regenerated in the backward, never stored. rate in [0, 1); seed identifies the op.
  }];
  let arguments = (ins Tg_FloatTensor:$x, F32Attr:$rate, I64Attr:$seed);
  let results = (outs Tg_FloatTensor:$result);
}

def Tg_ReshapeOp : Tg_DiffOp<"reshape"> {
  let summary = "view with a new shape and the same number of elements";
  let description = [{
    Row-major reinterpretation; no data moves (the memory planner aliases the result
    to its source).
  }];
  let arguments = (ins Tg_FloatTensor:$x);
  let results = (outs Tg_FloatTensor:$result);
}

def Tg_TransposeOp : Tg_DiffOp<"transpose"> {
  let summary = "permute dimensions (rank <= 4)";
  let description = [{
    `result.shape[i] = x.shape[perm[i]]`. Materialised as a copy.
    ```mlir
    %h = tg.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<8x64x4x16xf32>) -> tensor<8x4x64x16xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$x, DenseI64ArrayAttr:$perm);
  let results = (outs Tg_FloatTensor:$result);
}

def Tg_SplitOp : Tg_DiffOp<"split"> {
  let summary = "split along one axis into consecutive pieces";
  let description = [{
    Results have x's shape except along `axis`, where their sizes add up to x's.
    Used to split the fused qkv projection [B, T, 3D] into q, k, v [B, T, D].
  }];
  let arguments = (ins Tg_FloatTensor:$x, I64Attr:$axis);
  let results = (outs Variadic<Tg_FloatTensor>:$results);
}

def Tg_ConcatOp : Tg_DiffOp<"concat"> {
  let summary = "concatenate along one axis";
  let arguments = (ins Variadic<Tg_FloatTensor>:$inputs, I64Attr:$axis);
  let results = (outs Tg_FloatTensor:$result);
}

def Tg_CausalMaskOp : Tg_DiffOp<"causal_mask"> {
  let summary = "causal (optionally sliding-window) mask on attention scores";
  let description = [{
    x: [..., Tq, Tk]. Query i (at key position i' = i + Tk - Tq) sees key j iff
    j <= i' and (window == 0 or i' - j < window): a window w means each query sees itself
    and the w-1 keys before it. Other entries become `masked_value` (default -inf).
  }];
  let arguments = (ins Tg_FloatTensor:$x, DefaultValuedAttr<I64Attr, "0">:$window,
                   DefaultValuedAttr<F32Attr, "-INFINITY">:$masked_value);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    ::llvm::SmallVector<unsigned, 2> inPlaceOperands() { return {0}; }
  }];
}

def Tg_SoftmaxOp : Tg_DiffOp<"softmax"> {
  let summary = "softmax over the last dim";
  let arguments = (ins Tg_FloatTensor:$x);
  let results = (outs Tg_FloatTensor:$result);
}

def Tg_CrossEntropyOp : Tg_DiffOp<"cross_entropy"> {
  let summary = "mean token cross-entropy of logits against targets";
  let description = [{
    logits: [..., V] float; targets: [...] i32; result: tensor<f32> (nats per token),
    the mean over tokens whose target != ignore_index (-1: none ignored).
  }];
  let arguments = (ins Tg_FloatTensor:$logits, Tg_IdTensor:$targets,
                   DefaultValuedAttr<I64Attr, "-1">:$ignore_index);
  let results = (outs Tg_F32Tensor:$loss);
  let extraClassDeclaration = [{
    bool keptBySelective() { return true; }
  }];
}

def Tg_CastOp : Tg_DiffOp<"cast"> {
  let summary = "convert a tensor to another float element type";
  let description = [{
    Same shape; widening (bf16/f16 -> f32) is exact, narrowing rounds to nearest even
    (overflow gives +-inf). Its gradient is the cast of the incoming gradient back to the
    source type. Inserted by tg-mixed-precision. Folds: a cast to the same type is its
    input; `cast(cast(x : A -> B) : B -> A)` is `x` when B holds every value of A
    (bf16 -> f32 -> bf16, f16 -> f32 -> f16).
    ```mlir
    %w16 = tg.cast %w : (tensor<768x2304xf32>) -> tensor<768x2304xbf16>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$x);
  let results = (outs Tg_FloatTensor:$result);
  let hasFolder = 1;
}

def Tg_AttentionOp : Tg_DiffOp<"attention"> {
  let summary = "fused scaled dot-product attention (FlashAttention, Dao et al. 2022)";
  let description = [{
    q: [B, H, T, hd]; k, v: [B, Hkv, T, hd] with Hkv dividing H (grouped-query attention,
    Ainslie et al. 2023: query head h reads kv head h / (H / Hkv); Hkv = H is multi-head);
    `out = softmax(mask(scale * q k^T)) v`, same type as q;
    lse: [B, H, T] f32, the log-sum-exp of each masked score row, saved for the
    backward. causal: key j visible to query i iff j <= i; window > 0: additionally
    i - j < window. Never materialises the T x T scores. Built by tg-fuse-attention.
  }];
  let arguments = (ins Tg_FloatTensor:$q, Tg_FloatTensor:$k, Tg_FloatTensor:$v,
                   DefaultValuedAttr<BoolAttr, "true">:$causal,
                   DefaultValuedAttr<I64Attr, "0">:$window, F32Attr:$scale);
  let results = (outs Tg_FloatTensor:$out, Tg_F32Tensor:$lse);
  let extraClassDeclaration = [{
    int64_t flops();
    bool keptBySelective() { return true; }
  }];
}

def Tg_AttentionQKVOp : Tg_DiffOp<"attention_qkv"> {
  let summary = "fused attention on the packed qkv projection (no head split or transposes)";
  let description = [{
    qkv: [B, T, 3 D] with D = heads x hd, laid out as [B, T, 3, H, hd] (q, k, v, then the
    heads: the linear layer's output as it is); with kv_heads = Hkv > 0 (grouped-query
    attention, Ainslie et al. 2023) qkv is [B, T, (H + 2 Hkv) hd]: H query heads, then Hkv
    key heads, then Hkv value heads, and query head h reads kv head h / (H / Hkv) in place
    (kv_heads 0 means H). out: [B, T, D] ([B, T, H, hd]: the input of
    the output projection as it is), qkv's type; lse: [B, H, T] f32. Computes what the
    naive chain split / reshape / transpose / scores / mask / softmax / P.V / transpose /
    reshape computes, with the runtime reading q, k, v and writing out through strides
    (runtime/tgrt.h tgrt_attention_fwd), so none of those copies exist. Built by
    tg-fuse-attention. Same masking as tg.attention.
  }];
  let arguments = (ins Tg_FloatTensor:$qkv, I64Attr:$heads,
                   DefaultValuedAttr<BoolAttr, "true">:$causal,
                   DefaultValuedAttr<I64Attr, "0">:$window, F32Attr:$scale,
                   DefaultValuedAttr<I64Attr, "0">:$kv_heads);
  let results = (outs Tg_FloatTensor:$out, Tg_F32Tensor:$lse);
  let extraClassDeclaration = [{
    int64_t flops();
    bool keptBySelective() { return true; }
    /// Key/value heads: kv_heads, or heads when 0 (multi-head).
    int64_t getKvHeadsOrHeads() { return getKvHeads() > 0 ? getKvHeads() : getHeads(); }
  }];
}

def Tg_RmsNormOp : Tg_DiffOp<"rms_norm"> {
  let summary = "RMS normalisation over the last dim (Zhang & Sennrich 2019)";
  let description = [{
    x: [..., D]; gamma: [D]. `y = x * rstd * gamma` with `rstd = 1/sqrt(mean(x^2) + eps)`;
    also returns rstd (f32, shape x.shape[:-1]) for the backward. As tg.layer_norm, y has
    any float element type (computed in f32, rounded once). Lowered to tgrt_rms_norm_fwd.
  }];
  let arguments = (ins Tg_FloatTensor:$x, Tg_FloatTensor:$gamma,
                   DefaultValuedAttr<F32Attr, "1e-5f">:$eps);
  let results = (outs Tg_FloatTensor:$y, Tg_F32Tensor:$rstd);
}

def Tg_RopeOp : Tg_DiffOp<"rope"> {
  let summary = "rotary position embedding of the q and k heads of a packed projection";
  let description = [{
    x: [B, T, (H + 2 Hkv) hd] (q heads, k heads, v heads; `heads` = H, `kv_heads` = Hkv);
    result: same type. Every q and k head of token t is rotated pairwise, pair (i, i + hd/2)
    by angle t * f_i with f_i = 1 / theta^(2i/hd) (Su et al. 2021, RoFormer; the
    rotate_half layout of GPT-NeoX / HF Llama), optionally with Llama 3's frequency scaling
    (`scaling` = [factor, low_freq_factor, high_freq_factor, original_context], factor 0:
    none); the v heads pass through. `inverse` rotates by -angle: the gradient (the
    rotation is orthogonal). Lowered to tgrt_rope (runtime/tgrt.h), which may run in place.
  }];
  let arguments = (ins Tg_FloatTensor:$x, I64Attr:$heads, I64Attr:$kv_heads, F32Attr:$theta,
                   DenseF32ArrayAttr:$scaling,
                   DefaultValuedAttr<BoolAttr, "false">:$inverse);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    ::llvm::SmallVector<unsigned, 2> inPlaceOperands() { return {0}; }
    int64_t flops();
  }];
}

def Tg_SwigluOp : Tg_DiffOp<"swiglu"> {
  let summary = "SwiGLU: silu(gate) * up on a [..., 2F] gate | up projection (Shazeer 2020)";
  let description = [{
    x: [..., 2F], columns [0, F) the gate and [F, 2F) the up projection; result [..., F]
    (x's type) = silu(gate) * up, silu(g) = g sigmoid(g). Lowered to tgrt_swiglu_fwd.
  }];
  let arguments = (ins Tg_FloatTensor:$x);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    int64_t flops();
  }];
}

//===------------------------------------------------------------- backward --===//

def Tg_FillOp : Tg_PureOp<"fill"> {
  let summary = "tensor filled with a constant";
  let description = [{
    Every element is `value` rounded to the result type. With `loss_scaled`, every element
    is `value * S` where S is the runtime's current dynamic loss scale (fp16-mixed's
    backward seed; tgrt_fill_loss_scaled).
  }];
  let arguments = (ins F32Attr:$value, UnitAttr:$loss_scaled);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tg_EmbeddingGradOp : Tg_PureOp<"embedding_grad"> {
  let summary = "gradient of tg.embedding with respect to the table";
  let description = [{
    ids: [B, T] i32; dout: [B, T, D]; result: [V, D] with
    `result[v,:] = sum over (b,t) with ids[b,t] == v of dout[b,t,:]` (deterministic order).
  }];
  let arguments = (ins Tg_IdTensor:$ids, Tg_FloatTensor:$dout);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    int64_t workspaceBytes();
  }];
}

def Tg_PositionalEmbeddingGradOp : Tg_PureOp<"positional_embedding_grad"> {
  let summary = "gradient of tg.positional_embedding with respect to wpe";
  let description = [{ dout: [B, T, D]; result: [C, D], row t = sum_b dout[b,t,:], 0 for t >= T. }];
  let arguments = (ins Tg_FloatTensor:$dout);
  let results = (outs Tg_FloatTensor:$result);
}

def Tg_LayerNormGradOp : Tg_PureOp<"layer_norm_grad"> {
  let summary = "gradient of tg.layer_norm";
  let description = [{
    dy, x: [..., D] (dy has the forward y's element type, which may differ from x's);
    gamma: [D]; mean, rstd: x.shape[:-1] f32. Results dx ([..., D], x's type),
    dgamma, dbeta ([D], gamma's type). With xhat = (x-mean)*rstd and g = dy*gamma:
    `dx = rstd (g - mean(g) - xhat mean(g xhat))`, `dgamma = sum dy xhat`, `dbeta = sum dy`.
  }];
  let arguments = (ins Tg_FloatTensor:$dy, Tg_FloatTensor:$x, Tg_FloatTensor:$gamma,
                   Tg_F32Tensor:$mean, Tg_F32Tensor:$rstd);
  let results = (outs Tg_FloatTensor:$dx, Tg_FloatTensor:$dgamma, Tg_FloatTensor:$dbeta);
  let extraClassDeclaration = [{
    int64_t workspaceBytes();
  }];
}

def Tg_BiasGradOp : Tg_PureOp<"bias_grad"> {
  let summary = "sum a gradient over every dim but the last";
  let arguments = (ins Tg_FloatTensor:$dy);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    int64_t workspaceBytes();
  }];
}

def Tg_GeluGradOp : Tg_PureOp<"gelu_grad"> {
  let summary = "gradient of tg.gelu: dx = dy * gelu'(x)";
  let arguments = (ins Tg_FloatTensor:$x, Tg_FloatTensor:$dy);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    ::llvm::SmallVector<unsigned, 2> inPlaceOperands() { return {1}; }
  }];
}

def Tg_SoftmaxGradOp : Tg_PureOp<"softmax_grad"> {
  let summary = "gradient of tg.softmax: dx = y (dy - sum(dy y))";
  let arguments = (ins Tg_FloatTensor:$y, Tg_FloatTensor:$dy);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    ::llvm::SmallVector<unsigned, 2> inPlaceOperands() { return {1}; }
  }];
}

def Tg_CrossEntropyGradOp : Tg_PureOp<"cross_entropy_grad"> {
  let summary = "gradient of tg.cross_entropy with respect to the logits";
  let description = [{
    `dlogits = dloss (softmax(logits) - onehot(targets)) / n_valid`, 0 on ignored rows.
    dloss: tensor<f32>. The runtime may compute it in place of the logits.
  }];
  let arguments = (ins Tg_FloatTensor:$logits, Tg_IdTensor:$targets, Tg_F32Tensor:$dloss,
                   DefaultValuedAttr<I64Attr, "-1">:$ignore_index);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    ::llvm::SmallVector<unsigned, 2> inPlaceOperands() { return {0}; }
    int64_t workspaceBytes();
  }];
}

def Tg_LinearCrossEntropyOp : Tg_PureOp<"linear_cross_entropy"> {
  let summary = "the output layer, the loss and their gradients, in chunks of rows";
  let description = [{
    The training step's `logits = x w^T` (tg.matmul, transpose_b), `loss =
    tg.cross_entropy(logits, targets)` and the gradients `dlogits =
    tg.cross_entropy_grad(logits, targets, dloss)`, `dx = dlogits w`, `dw = dlogits^T x`,
    computed `chunk_rows` rows of logits at a time, so that only [chunk_rows, V] logits
    exist at once (not [rows, V]); made by tg-fuse-loss after tg-autodiff.
    x: [..., D] (rows = the product of the leading dims); w: [V, D] (x's type); targets:
    x's leading shape, i32; dloss: tensor<f32>. Results: loss tensor<f32> (mean over the
    rows whose target is not ignore_index), dx (x's type and shape), dw [V, D] (w's type, or
    f32 for the gradient of a low-precision copy of f32 weights), scratch: f32 [N] (planned
    working memory, read by nothing else: 256 bytes, 8 bytes per row, then the chunk's
    logits in x's type at the next 256-byte boundary; see tgrt_linear_cross_entropy).
  }];
  let arguments = (ins Tg_FloatTensor:$x, Tg_FloatTensor:$w, Tg_IdTensor:$targets,
                   Tg_F32Tensor:$dloss, I64Attr:$chunk_rows,
                   DefaultValuedAttr<I64Attr, "-1">:$ignore_index);
  let results = (outs Tg_F32Tensor:$loss, Tg_FloatTensor:$dx, Tg_FloatTensor:$dw,
                 Tg_F32Tensor:$scratch);
  let extraClassDeclaration = [{
    /// Bytes the scratch result needs for `rows` rows, `vocab` classes, `chunkRows` rows per
    /// chunk and logits of `elemBytes` bytes.
    static int64_t scratchBytes(int64_t rows, int64_t vocab, int64_t chunkRows,
                                int64_t elemBytes) {
      return (256 + 8 * rows + 255) / 256 * 256 + chunkRows * vocab * elemBytes;
    }
  }];
}

def Tg_AttentionGradOp : Tg_PureOp<"attention_grad"> {
  let summary = "gradient of tg.attention (FlashAttention-2 backward, Dao 2023)";
  let description = [{
    Operands q, out, dout: [B, H, T, hd], k, v: [B, Hkv, T, hd] (one float type); lse:
    [B, H, T] f32. Results dq, dk, dv (their operands' types; dk, dv summed over each kv
    head's group of query heads).
    Recomputes P = exp(scale q k^T - lse) blockwise; never stores T x T.
  }];
  let arguments = (ins Tg_FloatTensor:$q, Tg_FloatTensor:$k, Tg_FloatTensor:$v,
                   Tg_FloatTensor:$out, Tg_F32Tensor:$lse, Tg_FloatTensor:$dout,
                   DefaultValuedAttr<BoolAttr, "true">:$causal,
                   DefaultValuedAttr<I64Attr, "0">:$window, F32Attr:$scale);
  let results = (outs Tg_FloatTensor:$dq, Tg_FloatTensor:$dk, Tg_FloatTensor:$dv);
  let extraClassDeclaration = [{
    int64_t flops();
    int64_t workspaceBytes();
  }];
}

def Tg_AttentionQKVGradOp : Tg_PureOp<"attention_qkv_grad"> {
  let summary = "gradient of tg.attention_qkv: dqkv in the packed layout";
  let description = [{
    qkv: [B, T, 3 D]; out, dout: [B, T, D]; lse: [B, H, T] f32. Result dqkv: [B, T, 3 D]
    (dq, dk, dv interleaved as in qkv), qkv's type. FlashAttention-2 backward (Dao 2023)
    through strides.
  }];
  let arguments = (ins Tg_FloatTensor:$qkv, Tg_FloatTensor:$out, Tg_F32Tensor:$lse,
                   Tg_FloatTensor:$dout, I64Attr:$heads,
                   DefaultValuedAttr<BoolAttr, "true">:$causal,
                   DefaultValuedAttr<I64Attr, "0">:$window, F32Attr:$scale,
                   DefaultValuedAttr<I64Attr, "0">:$kv_heads);
  let results = (outs Tg_FloatTensor:$dqkv);
  let extraClassDeclaration = [{
    int64_t flops();
    int64_t workspaceBytes();
    int64_t getKvHeadsOrHeads() { return getKvHeads() > 0 ? getKvHeads() : getHeads(); }
  }];
}

def Tg_RmsNormGradOp : Tg_PureOp<"rms_norm_grad"> {
  let summary = "gradient of tg.rms_norm";
  let description = [{
    dy, x: [..., D] (dy has the forward y's element type); gamma: [D]; rstd: x.shape[:-1]
    f32. Results dx ([..., D], x's type), dgamma ([D], gamma's type). With xhat = x rstd
    and g = dy gamma: `dx = rstd (g - xhat mean(g xhat))`, `dgamma = sum dy xhat`.
  }];
  let arguments = (ins Tg_FloatTensor:$dy, Tg_FloatTensor:$x, Tg_FloatTensor:$gamma,
                   Tg_F32Tensor:$rstd);
  let results = (outs Tg_FloatTensor:$dx, Tg_FloatTensor:$dgamma);
  let extraClassDeclaration = [{
    int64_t workspaceBytes();
  }];
}

def Tg_SwigluGradOp : Tg_PureOp<"swiglu_grad"> {
  let summary = "gradient of tg.swiglu";
  let description = [{
    x: [..., 2F] (the forward's input), dy: [..., F]; result dx [..., 2F] (x's type): with
    s = sigmoid(gate), dgate = dy up s (1 + gate (1 - s)), dup = dy silu(gate).
  }];
  let arguments = (ins Tg_FloatTensor:$x, Tg_FloatTensor:$dy);
  let results = (outs Tg_FloatTensor:$result);
  let extraClassDeclaration = [{
    int64_t flops();
  }];
}

//===------------------------------------------------- fused ops (tg-fuse) --===//
// Made by tg-fuse after autodiff and rematerialization, before planning: the fusion is an
// op in the IR, so the planner and the lowering read it and never re-derive it.

def Tg_MatmulResidualOp : Tg_PureOp<"matmul_residual"> {
  let summary = "a linear layer added straight into the residual stream";
  let description = [{
    `out = res + alpha * a op(b) [+ bias]`: a [..., M, K] (low precision under mixed
    precision), b [K, N] (a weight; [N, K] with transpose_b), res and out [..., M, N] of one
    float type (the residual stream: f32 under mixed precision), bias (optional) [N] f32.
    Computed in f32 and rounded once to out's type (the branch is not rounded to a's type
    first, as the unfused matmul, bias add, widening cast and add do: at least as accurate).
    Made by tg-fuse from `tg.matmul` whose only reader is (a widening `tg.cast` whose only
    reader is) `tg.add` with the residual, or, with a bias, from matmul -> bias_add ->
    widening cast -> add, each op right after the previous (GPT-2's attention and MLP
    projections under mixed precision); out may take res's buffer in place. Lowered to one
    tgrt_matmul_bias_residual (one cuBLASLt call, C = res with beta 1, the bias epilogue).
    ```mlir
    %x1 = tg.matmul_residual %h, %w, %x0 : (tensor<8x64x128xbf16>, tensor<128x128xbf16>, tensor<8x64x128xf32>) -> tensor<8x64x128xf32>
    %x2 = tg.matmul_residual %h, %w, %x1, %bias : (tensor<8x64x128xbf16>, tensor<128x128xbf16>, tensor<8x64x128xf32>, tensor<128xf32>) -> tensor<8x64x128xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$a, Tg_FloatTensor:$b, Tg_FloatTensor:$res,
                   Optional<Tg_FloatTensor>:$bias,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_b,
                   DefaultValuedAttr<F32Attr, "1.0f">:$alpha);
  let results = (outs Tg_FloatTensor:$out);
  let extraClassDeclaration = [{
    int64_t flops();
    ::llvm::SmallVector<unsigned, 2> inPlaceOperands() { return {2}; }
  }];
}

def Tg_MatmulBiasOp : Tg_PureOp<"matmul_bias"> {
  let summary = "a linear layer with its bias: the GEMM's bias epilogue";
  let description = [{
    `out = alpha * a op(b) + bias`: a [..., M, K], b [K, N] ([N, K] with transpose_b),
    bias [N], out [..., M, N]; a, b, bias and out of one float type. Made by tg-fuse from
    `tg.matmul` whose only reader is a `tg.bias_add` of a bias that exists when the GEMM
    runs (a parameter, or computed before the GEMM); the fused op runs where the GEMM ran.
    Lowered to one tgrt_matmul_bias (cuBLASLt's BIAS epilogue on CUDA).
    ```mlir
    %y = tg.matmul_bias %x, %w, %b : (tensor<8x64x128xbf16>, tensor<128x384xbf16>, tensor<384xbf16>) -> tensor<8x64x384xbf16>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$a, Tg_FloatTensor:$b, Tg_FloatTensor:$bias,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_b,
                   DefaultValuedAttr<F32Attr, "1.0f">:$alpha);
  let results = (outs Tg_FloatTensor:$out);
  let extraClassDeclaration = [{
    int64_t flops();
  }];
}

def Tg_MatmulBiasGeluOp : Tg_PureOp<"matmul_bias_gelu"> {
  let summary = "the MLP's up-projection: GEMM, bias and GELU in one call";
  let description = [{
    `pre = alpha * a op(b) + bias` (rounded to the type) and `out = GELU(pre)` (tanh
    approximation, as tg.gelu): a [..., M, K], b [K, N] ([N, K] with transpose_b), bias [N],
    pre and out [..., M, N]; all of one float type. pre is what the GELU's gradient reads in
    the backward. Made by tg-fuse from matmul -> bias_add -> gelu, each op right after the
    previous, the GEMM read only by the bias add, the bias existing when the GEMM runs.
    Lowered to one tgrt_matmul_bias_gelu (cuBLASLt's GELU_AUX_BIAS epilogue: pre is its
    auxiliary output). Neither result may share bytes with a or b (the planner gives results
    of an op without in-place operands fresh buffers).
    ```mlir
    %pre, %y = tg.matmul_bias_gelu %x, %w, %b : (tensor<8x64x128xbf16>, tensor<128x512xbf16>, tensor<512xbf16>) -> (tensor<8x64x512xbf16>, tensor<8x64x512xbf16>)
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$a, Tg_FloatTensor:$b, Tg_FloatTensor:$bias,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_b,
                   DefaultValuedAttr<F32Attr, "1.0f">:$alpha);
  let results = (outs Tg_FloatTensor:$pre, Tg_FloatTensor:$out);
  let extraClassDeclaration = [{
    int64_t flops();
  }];
}

def Tg_AddLayerNormOp : Tg_PureOp<"add_layer_norm"> {
  let summary = "the residual add and the layer norm of its sum in one pass";
  let description = [{
    `sum = a + b` (computed in f32, rounded once to sum's type), then `y, mean, rstd =
    layer_norm(sum, gamma, beta, eps)` exactly as tg.layer_norm. a and sum: [..., D] of one
    float type (the residual stream); b: a's shape, a's element type or, when sum is f32, a
    bf16 / f16 branch read in its own type (the widening cast it replaces is exact);
    gamma, beta [D] of one float type; y [..., D] of any float type; mean and rstd f32
    [...]. Made by tg-fuse from [widening cast ->] add -> layer_norm of the add's sum, each
    op right after the previous, the cast read only by the add, where the add's sum needs a
    buffer of its own (no addend dies at the add: otherwise the planner writes the sum over
    it in place and the two stay separate ops). No result shares bytes with a, b or another
    result (no in-place operand: the kernel reads a and b through restrict pointers while
    it writes the sum). Lowered to one tgrt_add_layer_norm_fwd (the sum written once, not
    read back). Errors: the verifier's, on shapes and element types as above and eps <= 0.
    ```mlir
    %s, %y, %mean, %rstd = tg.add_layer_norm %x, %h, %g, %b {eps = 1.0e-05 : f32} : (tensor<8x64x128xf32>, tensor<8x64x128xbf16>, tensor<128xf32>, tensor<128xf32>) -> (tensor<8x64x128xf32>, tensor<8x64x128xbf16>, tensor<8x64xf32>, tensor<8x64xf32>)
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$a, Tg_FloatTensor:$b, Tg_FloatTensor:$gamma,
                   Tg_FloatTensor:$beta, DefaultValuedAttr<F32Attr, "1e-5f">:$eps);
  let results = (outs Tg_FloatTensor:$sum, Tg_FloatTensor:$y, Tg_F32Tensor:$mean,
                      Tg_F32Tensor:$rstd);
  let extraClassDeclaration = [{
    int64_t flops();
  }];
}

def Tg_MatmulDgeluBgradOp : Tg_PureOp<"matmul_dgelu_bgrad"> {
  let summary = "the MLP's backward through the GELU: GEMM, GELU gradient, bias gradient";
  let description = [{
    `g = alpha * a op(b)` (the gradient of the GELU's output), `dx = g * GELU'(pre)` (tanh
    approximation, as tg.gelu_grad) and `db[j] = sum over rows of dx[.., j]`: a [..., M, K],
    b [K, N] (a weight; [N, K] with transpose_b), pre and dx [..., M, N], db [N]; all of one
    float type. pre is the forward's pre-activation (the up-projection's output before the
    GELU). Made by tg-fuse from a linear-layer `tg.matmul` whose only reader is
    `tg.gelu_grad` (as its dy), whose result a `tg.bias_grad` reads, at the GELU gradient
    (pre exists there even when recomputed after the GEMM). No result shares
    bytes with a, b or pre (no in-place operand: the GEMM epilogue writes dx while pre is
    read). Lowered to one tgrt_matmul_dgelu_bgrad (cuBLASLt's DGELU epilogue on CUDA); when
    db's only reader is its parameter's gradient accumulation, the lowering passes NULL and
    sums dx into the slot (tgrt_bias_grad_acc, named as the bias gradient: the op's location
    is the chain's, fused). Errors: the verifier's, on shapes and element types as above.
    ```mlir
    %dx, %db = tg.matmul_dgelu_bgrad %dy, %w, %pre {transpose_b = true} : (tensor<8x64x128xbf16>, tensor<512x128xbf16>, tensor<8x64x512xbf16>) -> (tensor<8x64x512xbf16>, tensor<512xbf16>)
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$a, Tg_FloatTensor:$b, Tg_FloatTensor:$pre,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_b,
                   DefaultValuedAttr<F32Attr, "1.0f">:$alpha);
  let results = (outs Tg_FloatTensor:$dx, Tg_FloatTensor:$db);
  let extraClassDeclaration = [{
    int64_t flops();
  }];
}

//===------------------------------------------------------------ optimizer --===//

def Tg_AccumulateGradOp : Tg_Op<"accumulate_grad", [MemoryEffects<[MemWrite]>,
    AllTypesMatch<["param", "grad"]>]> {
  let summary = "add a gradient into a parameter's persistent gradient buffer";
  let description = [{
    `grad(param) += grad`. param must be a block argument of the enclosing function (a
    parameter); grad has its type. Gradient accumulation over micro-batches is this sum.
  }];
  let arguments = (ins Tg_FloatTensor:$param, Tg_FloatTensor:$grad);
  let hasVerifier = 1;
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($param)";
}

def Tg_ClipGradNormOp : Tg_Op<"clip_grad_norm", [MemoryEffects<[MemRead]>]> {
  let summary = "global gradient norm and clip scale over the given parameters";
  let description = [{
    Reads the gradient buffers of every `params` entry. Result: tensor<2xf32> holding
    [sum of squares, clip scale] with scale = max_norm / (norm + 1e-6) when max_norm > 0
    and norm > max_norm, else 1 (global-norm clipping, Pascanu et al. 2013).
  }];
  let arguments = (ins Variadic<Tg_FloatTensor>:$params, F32Attr:$max_norm);
  let results = (outs Tg_F32Tensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "$params attr-dict `:` functional-type($params, results)";
}

def Tg_AllReduceGradsOp : Tg_Op<"all_reduce_grads", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "data parallel: average every given parameter's gradient over the ranks";
  let description = [{
    Each operand is a parameter (a block argument carrying `tg.param`); the op has no
    results. Semantics: each operand's gradient slot becomes the mean over the `ranks`
    data-parallel ranks of that slot (an all-reduce with sum, then division by `ranks`),
    the same value on every rank. `tg-distribute` inserts one at the start of
    @optimizer_step, so gradient clipping and AdamW see the averaged gradient.
    ```mlir
    tg.all_reduce_grads %wte, %wpe {ranks = 2 : i64} : tensor<256x64xf32>, tensor<32x64xf32>
    ```
    Lowered to one `tgrt_all_reduce_mean` per gradient slot. Verifier errors: no operand,
    an operand that is not a parameter, a parameter given twice, ranks < 2.
  }];
  let arguments = (ins Variadic<Tg_FloatTensor>:$params, I64Attr:$ranks);
  let hasVerifier = 1;
  let assemblyFormat = "$params attr-dict `:` type($params)";
}

def Tg_ReduceScatterGradOp : Tg_Op<"reduce_scatter_grad", [MemoryEffects<[MemRead, MemWrite]>,
    AllTypesMatch<["param", "grad"]>]> {
  let summary = "ZeRO-2/3: add this rank's chunk of the ranks' mean gradient into its shard";
  let description = [{
    Data parallel with sharded gradients (Rajbhandari et al. 2020, ZeRO stage 2). `grad` is
    this rank's whole gradient of `param` (a parameter: a block argument carrying
    `tg.param`) for this micro-batch; with n its element count and c = ceil(n / ranks), the
    op adds elements [rank*c, rank*c + c) of the mean of `grad` over the `ranks` ranks into
    the parameter's gradient shard (c elements in the persistent region). It replaces
    `tg.accumulate_grad` under `tg-distribute{zero=2|3}`, placed right after the gradient is
    computed, so the whole gradient lives only until then.
    ```mlir
    tg.reduce_scatter_grad %w, %dw {ranks = 2 : i64} : tensor<64x256xf32>
    ```
    Lowered to `tgrt_reduce_scatter_mean_start` (overlapped: `grad`'s buffer stays reserved
    until the next reduce-scatter, which first waits for this one). Verifier errors: param
    not a parameter, grad of another type, ranks < 2.
  }];
  let arguments = (ins Tg_FloatTensor:$param, Tg_FloatTensor:$grad, I64Attr:$ranks);
  let hasVerifier = 1;
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($param)";
}

def Tg_GatherParamOp : Tg_Op<"gather_param", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "ZeRO-3: all-gather a sharded parameter (or its working copy) into a whole tensor";
  let description = [{
    Under `tg-distribute{zero=3}` each rank holds a chunk of c = ceil(n / ranks) elements of
    every parameter (and of its low-precision working copy); `source` is the parameter (a
    block argument carrying `tg.param`) or its working copy (a `tg.cast` of one marked
    `tg.working_copy`), and the result is the whole tensor of the same type, an arena buffer
    live until its last use (FSDP: gathered just in time, released after use). The pass puts
    one per parameter for each layer's forward and one for its backward, all of a layer's
    together, started one layer ahead (prefetch).
    ```mlir
    %w = tg.gather_param %w_shard {ranks = 2 : i64} : tensor<64x256xbf16> -> tensor<64x256xbf16>
    ```
    Lowered to `tgrt_all_gather_start`; the first runtime call that reads the result is
    preceded by `tgrt_all_reduce_wait`. Verifier errors: a source
    that is neither a parameter nor a working copy of one, a result of another type,
    ranks < 2.
  }];
  let arguments = (ins Tg_FloatTensor:$source, I64Attr:$ranks);
  let results = (outs Tg_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
}

def Tg_AdamWOp : Tg_Op<"adamw", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "AdamW update of one parameter, then zero its gradient";
  let description = [{
    Decoupled weight decay (Loshchilov & Hutter 2019). With g' = grad * clip[1]:
    m = b1 m + (1-b1) g'; v = b2 v + (1-b2) g'^2;
    p -= lr (m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps) + weight_decay p); grad = 0.
    lr and t come from the runtime (schedule computed by the driver).
  }];
  let arguments = (ins Tg_FloatTensor:$param, Tg_F32Tensor:$clip, F32Attr:$beta1,
                   F32Attr:$beta2, F32Attr:$eps, F32Attr:$weight_decay);
  let hasVerifier = 1;
  let assemblyFormat = "$param `,` $clip attr-dict `:` type($param) `,` type($clip)";
}

#endif
