//===- MLIRGen.cpp - spec -> tg forward graph --------------------------------===//
#include "frontend/MLIRGen.h"
#include "dialect/TgDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tg;

namespace tgc {
namespace {

class Builder {
public:
  Builder(MLIRContext &ctx, const Spec &spec) : ctx(ctx), spec(spec), b(&ctx) {}

  OwningOpRef<ModuleOp> build() {
    const ModelSpec &m = spec.model;
    B = spec.training.batch_size;
    T = m.context;
    D = m.d_model;
    H = m.n_heads;
    Hkv = m.kvHeads();
    hd = m.headDim();
    f32 = b.getF32Type();
    auto module = ModuleOp::create(named("model"));
    module->setAttr("tg.spec", b.getStringAttr(spec.json));
    module->setAttr("tg.name", b.getStringAttr(spec.name));
    module->setAttr("tg.batch_size", b.getI64IntegerAttr(B));
    module->setAttr("tg.context", b.getI64IntegerAttr(T));
    module->setAttr("tg.grad_accum", b.getI64IntegerAttr(spec.training.grad_accum));
    module->setAttr("tg.vocab_size", b.getI64IntegerAttr(m.vocab_size));
    // What the driver needs of the training spec, as IR (the lowering reads this, never JSON).
    const OptimizerSpec &o = spec.training.optimizer;
    int64_t decayKind = o.decay == "cosine" ? 1 : o.decay == "linear" ? 2 : 0;
    module->setAttr(kOptimizerAttr,
                    b.getDictionaryAttr({
                        b.getNamedAttr("lr", b.getF32FloatAttr((float)o.lr)),
                        b.getNamedAttr("min_lr", b.getF32FloatAttr((float)o.min_lr)),
                        b.getNamedAttr("beta1", b.getF32FloatAttr((float)o.beta1)),
                        b.getNamedAttr("beta2", b.getF32FloatAttr((float)o.beta2)),
                        b.getNamedAttr("eps", b.getF32FloatAttr((float)o.eps)),
                        b.getNamedAttr("weight_decay", b.getF32FloatAttr((float)o.weight_decay)),
                        b.getNamedAttr("grad_clip", b.getF32FloatAttr((float)o.grad_clip)),
                        b.getNamedAttr("warmup_steps", b.getI64IntegerAttr(o.warmup_steps)),
                        b.getNamedAttr("decay", b.getI64IntegerAttr(decayKind)),
                        b.getNamedAttr("seed", b.getI64IntegerAttr(spec.training.seed)),
                    }));

    std::vector<ParamInfo> params = modelParameters(m, o.decay_embeddings);
    SmallVector<Type> argTypes;
    for (const ParamInfo &p : params)
      argTypes.push_back(RankedTensorType::get(p.shape, f32));
    auto ids = RankedTensorType::get({B, T}, b.getI32Type());
    argTypes.push_back(ids);
    argTypes.push_back(ids);
    auto fnType = b.getFunctionType(argTypes, {RankedTensorType::get({}, f32)});
    b.setInsertionPointToEnd(module.getBody());
    auto fn = b.create<func::FuncOp>(named("forward"), "forward", fnType);
    Block *entry = fn.addEntryBlock();
    // All argument attributes are set at once: each setArgAttr call rebuilds (and
    // uniques, for the context's lifetime) the array of every argument's dictionary,
    // which made building the function quadratic in the parameter count.
    SmallVector<DictionaryAttr> argAttrs;
    for (auto [i, p] : llvm::enumerate(params)) {
      NamedAttrList attrs;
      attrs.set(kParamNameAttr, b.getStringAttr(p.name));
      attrs.set(kInitAttr, b.getStringAttr(p.init == ParamInfo::Init::Zeros  ? "zeros"
                                           : p.init == ParamInfo::Init::Ones ? "ones"
                                                                             : "normal"));
      if (p.init == ParamInfo::Init::Normal)
        attrs.set(kInitStdAttr, b.getF32FloatAttr((float)p.initStd));
      if (p.decay)
        attrs.set(kDecayAttr, b.getUnitAttr());
      argAttrs.push_back(attrs.getDictionary(b.getContext()));
      paramByName[p.name] = entry->getArgument(i);
    }
    for (const char *input : {"tokens", "targets"})
      argAttrs.push_back(
          b.getDictionaryAttr(b.getNamedAttr(kInputAttr, b.getStringAttr(input))));
    fn.setAllArgAttrs(argAttrs);
    Value tokens = entry->getArgument(params.size());
    Value targets = entry->getArgument(params.size() + 1);
    b.setInsertionPointToStart(entry);

    Value x = b.create<EmbeddingOp>(named("wte"), act({B, T, D}), param("wte"), tokens);
    if (!m.rope()) // rotary embeddings act on q and k inside each layer instead
      x = b.create<PositionalEmbeddingOp>(named("wpe"), act({B, T, D}), x, param("wpe"));
    x = dropout(x, "drop");
    for (int64_t i = 0; i < m.n_layers; ++i) {
      Operation *before = x.getDefiningOp();
      x = block(x, "layers." + std::to_string(i));
      // Layer identity in the IR: every op the block created gets tg.layer = i.
      for (Operation *op = before ? before->getNextNode() : &entry->front();
           op && op != x.getDefiningOp()->getNextNode(); op = op->getNextNode())
        op->setAttr(kLayerAttr, b.getI64IntegerAttr(i));
    }
    x = norm(x, "ln_f");
    // logits = x W^T with W [V, D]: wte when tied, lm_head.weight (same layout) when not;
    // one pattern for tg-fuse-loss either way.
    Value head = param(m.tie_embeddings ? "wte" : "lm_head.weight");
    Value logits =
        b.create<MatmulOp>(named("lm_head"), act({B, T, m.vocab_size}), x, head,
                           b.getBoolAttr(false), b.getBoolAttr(true), b.getF32FloatAttr(1.0f));
    Value loss = b.create<CrossEntropyOp>(named("loss"), RankedTensorType::get({}, f32),
                                          logits, targets,
                                          b.getI64IntegerAttr(spec.training.ignore_index));
    b.create<func::ReturnOp>(named("loss"), loss);
    return module;
  }

private:
  Location named(const std::string &name) { return NameLoc::get(b.getStringAttr(name)); }
  RankedTensorType act(ArrayRef<int64_t> shape) { return RankedTensorType::get(shape, f32); }
  Value param(const std::string &name) {
    auto it = paramByName.find(name);
    assert(it != paramByName.end() && "parameter list and MLIRGen disagree");
    return it->second;
  }

  Value dropout(Value x, const std::string &name) {
    if (spec.model.dropout <= 0.0)
      return x;
    return b.create<DropoutOp>(named(name), x.getType(), x,
                               b.getF32FloatAttr((float)spec.model.dropout),
                               b.getI64IntegerAttr(++dropoutSeed));
  }

  /// The model's normalisation (model.norm): layer norm or RMSNorm, parameters
  /// NAME.weight (and NAME.bias for layer norm).
  Value norm(Value x, const std::string &name) {
    if (!spec.model.rmsNorm())
      return layerNorm(x, name);
    auto t = cast<RankedTensorType>(x.getType());
    auto rn = b.create<RmsNormOp>(named(name), t, act(t.getShape().drop_back()), x,
                                  param(name + ".weight"),
                                  b.getF32FloatAttr((float)spec.model.layer_norm_eps));
    return rn.getY();
  }

  Value layerNorm(Value x, const std::string &name) {
    auto t = cast<RankedTensorType>(x.getType());
    auto stats = act(t.getShape().drop_back());
    auto ln = b.create<LayerNormOp>(named(name), t, stats, stats, x, param(name + ".weight"),
                                    param(name + ".bias"),
                                    b.getF32FloatAttr((float)spec.model.layer_norm_eps));
    return ln.getY();
  }

  /// x [B, T, in] @ W [in, out] (+ bias) -> [B, T, out]
  Value linear(Value x, const std::string &name, int64_t out, bool bias) {
    Value y = b.create<MatmulOp>(named(name), act({B, T, out}), x, param(name + ".weight"),
                                 b.getBoolAttr(false), b.getBoolAttr(false),
                                 b.getF32FloatAttr(1.0f));
    if (bias)
      y = b.create<BiasAddOp>(named(name + ".bias"), y.getType(), y, param(name + ".bias"));
    return y;
  }

  /// [B, T, heads * hd] -> [B, heads, T, hd]
  Value toHeads(Value x, const std::string &name, int64_t heads) {
    Value r = b.create<ReshapeOp>(named(name), act({B, T, heads, hd}), x);
    return b.create<TransposeOp>(named(name), act({B, heads, T, hd}), r,
                                 b.getDenseI64ArrayAttr({0, 2, 1, 3}));
  }

  Value reshape(Value x, const std::string &name, ArrayRef<int64_t> shape) {
    return b.create<ReshapeOp>(named(name), act(shape), x);
  }

  /// The attention component: qkv projection [D, (H + 2 Hkv) hd] (+ bias), rotary
  /// embeddings on q and k (positional rope), naive causal attention as primitive ops
  /// (tg-fuse-attention makes it tg.attention / tg.attention_qkv), output projection.
  /// Grouped-query attention (Hkv < H) groups the G = H / Hkv query heads of each kv head
  /// by views: q [B, H, T, hd] is [B, Hkv, G T, hd], so the score and P.V products are
  /// batched over [B, Hkv] and k, v are never repeated; the scores are viewed as
  /// [B, Hkv, G, T, T] for the mask.
  Value attention(Value h, const std::string &p) {
    const ModelSpec &m = spec.model;
    const int64_t Q = H * hd, KV = Hkv * hd, G = H / Hkv;
    Value qkv = linear(h, p + ".attn.qkv", Q + 2 * KV, m.attention_bias);
    if (m.rope()) {
      const ModelSpec::RopeScaling &r = m.rope_scaling;
      qkv = b.create<RopeOp>(named(p + ".attn.rope"), qkv.getType(), qkv,
                             b.getI64IntegerAttr(H), b.getI64IntegerAttr(Hkv),
                             b.getF32FloatAttr((float)m.rope_theta),
                             b.getDenseF32ArrayAttr({(float)r.factor, (float)r.low_freq_factor,
                                                     (float)r.high_freq_factor,
                                                     (float)r.original_context}),
                             b.getBoolAttr(false));
    }
    auto split = b.create<SplitOp>(named(p + ".attn.split"),
                                   SmallVector<Type>{act({B, T, Q}), act({B, T, KV}), act({B, T, KV})},
                                   qkv, b.getI64IntegerAttr(2));
    Value q = toHeads(split.getResult(0), p + ".attn.q", H);
    Value k = toHeads(split.getResult(1), p + ".attn.k", Hkv);
    Value v = toHeads(split.getResult(2), p + ".attn.v", Hkv);
    float scale = 1.0f / std::sqrt((float)hd);
    Value o;
    if (G == 1) {
      Value s = b.create<MatmulOp>(named(p + ".attn.scores"), act({B, H, T, T}), q, k,
                                   b.getBoolAttr(false), b.getBoolAttr(true),
                                   b.getF32FloatAttr(scale));
      s = b.create<CausalMaskOp>(named(p + ".attn.mask"), s.getType(), s,
                                 b.getI64IntegerAttr(spec.training.attention.window),
                                 b.getF32FloatAttr(-INFINITY));
      Value pr = b.create<SoftmaxOp>(named(p + ".attn.softmax"), s.getType(), s);
      o = b.create<MatmulOp>(named(p + ".attn.pv"), act({B, H, T, hd}), pr, v,
                             b.getBoolAttr(false), b.getBoolAttr(false),
                             b.getF32FloatAttr(1.0f));
    } else {
      Value qg = reshape(q, p + ".attn.q", {B, Hkv, G * T, hd});
      Value s = b.create<MatmulOp>(named(p + ".attn.scores"), act({B, Hkv, G * T, T}), qg, k,
                                   b.getBoolAttr(false), b.getBoolAttr(true),
                                   b.getF32FloatAttr(scale));
      s = reshape(s, p + ".attn.scores", {B, Hkv, G, T, T});
      s = b.create<CausalMaskOp>(named(p + ".attn.mask"), s.getType(), s,
                                 b.getI64IntegerAttr(spec.training.attention.window),
                                 b.getF32FloatAttr(-INFINITY));
      Value pr = b.create<SoftmaxOp>(named(p + ".attn.softmax"), s.getType(), s);
      pr = reshape(pr, p + ".attn.softmax", {B, Hkv, G * T, T});
      o = b.create<MatmulOp>(named(p + ".attn.pv"), act({B, Hkv, G * T, hd}), pr, v,
                             b.getBoolAttr(false), b.getBoolAttr(false),
                             b.getF32FloatAttr(1.0f));
      o = reshape(o, p + ".attn.pv", {B, H, T, hd});
    }
    o = b.create<TransposeOp>(named(p + ".attn.merge"), act({B, T, H, hd}), o,
                              b.getDenseI64ArrayAttr({0, 2, 1, 3}));
    o = b.create<ReshapeOp>(named(p + ".attn.merge"), act({B, T, Q}), o);
    return linear(o, p + ".attn.proj", D, m.attention_bias);
  }

  /// The MLP component: fc (+ bias) -> GELU -> proj, or gated: fc [D, 2F] (gate | up) ->
  /// SwiGLU -> proj.
  Value mlp(Value h, const std::string &p) {
    const ModelSpec &m = spec.model;
    if (m.mlp_gated) {
      Value f = linear(h, p + ".mlp.fc", 2 * m.d_ff, m.mlp_bias);
      f = b.create<SwigluOp>(named(p + ".mlp.swiglu"), act({B, T, m.d_ff}), f);
      return linear(f, p + ".mlp.proj", D, m.mlp_bias);
    }
    Value f = linear(h, p + ".mlp.fc", m.d_ff, m.mlp_bias);
    f = b.create<GeluOp>(named(p + ".mlp.gelu"), f.getType(), f);
    return linear(f, p + ".mlp.proj", D, m.mlp_bias);
  }

  /// One pre-norm block: x + attn(norm1(x)), then x + mlp(norm2(x)).
  Value block(Value x, const std::string &p) {
    Value o = attention(norm(x, p + ".ln1"), p);
    o = dropout(o, p + ".attn.drop");
    x = b.create<AddOp>(named(p + ".attn.residual"), x.getType(), x, o);
    Value f = mlp(norm(x, p + ".ln2"), p);
    f = dropout(f, p + ".mlp.drop");
    return b.create<AddOp>(named(p + ".mlp.residual"), x.getType(), x, f);
  }

  MLIRContext &ctx;
  const Spec &spec;
  OpBuilder b;
  Type f32;
  int64_t B = 0, T = 0, D = 0, H = 0, Hkv = 0, hd = 0;
  int64_t dropoutSeed = 0;
  llvm::StringMap<Value> paramByName;
};

} // namespace

OwningOpRef<ModuleOp> buildForwardModule(MLIRContext &ctx, const Spec &spec) {
  ctx.loadDialect<TgDialect, func::FuncDialect>();
  return Builder(ctx, spec).build();
}

} // namespace tgc
