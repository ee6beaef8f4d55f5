//===- Spec.h - The tgc JSON model + training spec ----------------------------===//
//
// Parses and validates a spec (docs/spec.md). Pure C++ (nlohmann/json), no MLIR.
// Every error names the JSON path and the rule broken, e.g.
//   "model.d_model: 770 is not divisible by model.n_heads=12".
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_FRONTEND_SPEC_H
#define TGC_FRONTEND_SPEC_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tgc {

struct ModelSpec {
  int64_t vocab_size = 50304;   ///< tokens
  int64_t context = 1024;       ///< tokens per sequence (T)
  int64_t d_model = 768;
  int64_t n_layers = 12;
  int64_t n_heads = 12;
  int64_t d_ff = 3072;          ///< MLP hidden width
  bool tie_embeddings = true;   ///< lm_head shares wte
  bool attention_bias = true;   ///< biases on qkv and attention output projections
  bool mlp_bias = true;         ///< biases on the MLP projections
  double dropout = 0.0;         ///< rate in [0, 1)
  /// learned (GPT-2's table wpe [context, d_model]) | rope (rotary embeddings on q and k,
  /// Su et al. 2021: no parameter).
  std::string positional = "learned";
  /// gelu_tanh (GPT-2) | silu (with mlp_gated: SwiGLU, Shazeer 2020).
  std::string activation = "gelu_tanh";
  /// Epsilon of every normalisation (layer norm or RMSNorm), unitless.
  double layer_norm_eps = 1e-5;
  /// layernorm (Ba et al. 2016, weight + bias) | rmsnorm (Zhang & Sennrich 2019, weight only).
  std::string norm = "layernorm";
  /// Gated MLP: fc is one [d_model, 2 d_ff] GEMM whose columns are gate | up, and the
  /// activation multiplies: act(gate) * up (SwiGLU with activation silu).
  bool mlp_gated = false;
  /// Key/value heads (grouped-query attention, Ainslie et al. 2023): 1 = multi-query,
  /// n_heads = multi-head. 0 = n_heads.
  int64_t n_kv_heads = 0;
  /// Dims per attention head; 0 = d_model / n_heads.
  int64_t head_dim = 0;
  /// RoPE base (positional = rope): inverse frequencies 1 / theta^(2i / head_dim).
  double rope_theta = 10000.0;
  /// Llama 3's RoPE frequency scaling (HF rope_type "llama3"); factor 0 = none.
  struct RopeScaling {
    double factor = 0.0;
    double low_freq_factor = 1.0;
    double high_freq_factor = 4.0;
    int64_t original_context = 8192;
  } rope_scaling;

  /// Query heads' key/value heads and the head dim, with the 0 defaults resolved.
  int64_t kvHeads() const { return n_kv_heads > 0 ? n_kv_heads : n_heads; }
  int64_t headDim() const { return head_dim > 0 ? head_dim : d_model / n_heads; }
  /// Output columns of the fused qkv projection: (n_heads + 2 kv heads) * head dim.
  int64_t qkvWidth() const { return (n_heads + 2 * kvHeads()) * headDim(); }
  bool rmsNorm() const { return norm == "rmsnorm"; }
  bool rope() const { return positional == "rope"; }
};

struct OptimizerSpec {
  std::string name = "adamw";
  double lr = 6e-4;
  double min_lr = 6e-5;         ///< floor the decay reaches
  double beta1 = 0.9, beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
  double grad_clip = 1.0;       ///< global-norm clip; 0 disables
  int64_t warmup_steps = 100;   ///< optimizer steps of linear warmup
  std::string decay = "cosine"; ///< cosine | linear | none
  bool decay_embeddings = false;  ///< apply weight decay to embeddings too
  /// none | cpu: the AdamW moments live in pinned host memory (ZeRO-Offload, Ren et al. 2021,
  /// its state part), saving their device bytes; the update streams them through the device.
  std::string offload = "none";
};

struct AttentionSpec {
  std::string kernel = "naive"; ///< naive | flash
  int64_t window = 0;           ///< 0 = full causal; w > 0: query sees itself and w-1 keys before
  /// bf16 / f16 flash attention's implementation on CUDA: auto (cuDNN's fused SDPA on the
  /// cuda target, tgc's own kernels on the cpu) | own | cudnn. tg-plan-memory attention-impl.
  std::string impl = "auto";
};

/// Data parallelism (docs/distributed.md): `ranks` replicas each train on their slice of
/// the global batch and average gradients before the optimizer step (ZeRO-0: every rank
/// holds all parameters, gradients and optimizer state).
struct DistributedSpec {
  int64_t ranks = 1;            ///< data-parallel ranks, 1..64
  int64_t zero = 0;             ///< ZeRO stage 0..3 (1: AdamW state, 2: + gradients, 3: + values sharded)
};

struct TrainingSpec {
  int64_t batch_size = 8;       ///< micro-batch, sequences
  int64_t grad_accum = 1;       ///< micro-batches per optimizer step
  std::string precision = "fp32"; ///< fp32 | bf16-mixed | fp16-mixed | bf16
  AttentionSpec attention;
  /// none | gelu | selective | layer-attn | layer | budget:<bytes> | auto:<memory> | auto
  /// (the default: the fastest policy whose plan fits the device memory tgc knows, else
  /// none; tools/tgc Driver.cpp resolveAutoCheckpointing, docs/spec.md).
  std::string checkpointing = "auto";
  /// Bytes of logits one chunk of the fused output layer + loss may hold (tg-fuse-loss's
  /// max-logits-bytes); 0 = no fusion (the whole [B*T, V] logits are planned).
  int64_t loss_chunk_bytes = 512LL << 20;
  /// A linear layer's bias carried in its GEMMs when its input is a layer norm's output
  /// (tg-bias-rows: a ones column on the layer norm's output, the bias as a row after the
  /// weight; docs/design-notes.md "Bias rows"): auto | on | off. auto: on for target cuda
  /// (measured faster on an H200, docs/results.md), off for the CPU backend.
  std::string bias_rows = "auto";
  /// Where the gradient slots live (tg-plan-memory's gradients): auto | persistent | arena.
  /// arena: from each slot's first write in the backward to the end of the optimizer step
  /// (needs grad_accum 1 and one rank; docs/design-notes.md); auto: arena where it applies.
  std::string gradients = "auto";
  /// Element type of the weight gradients under mixed precision: auto | f32. auto: a
  /// weight whose whole gradient one bf16 / f16 GEMM writes keeps that type in its gradient
  /// slot when the slots live in the arena (PyTorch autocast's gradient of an f32 weight;
  /// tg-plan-memory low-precision-grads); f32: every gradient slot has its value's type.
  std::string gradient_dtype = "auto";
  /// How AdamW holds the f32 values of those bf16-gradient weights under bf16-mixed: auto |
  /// f32. auto: split, as the bf16 working copy plus 2-byte low halves (2 bytes a value
  /// fewer, AdamW 26 bytes a value instead of 28; tg-plan-memory split-master, tgrt.h
  /// tgrt_param.split); f32: an f32 slot beside the copy.
  std::string master_values = "auto";
  /// Dynamic loss scaling of fp16-mixed (ignored by the other precisions): the initial
  /// scale, and how many clean optimizer steps in a row double it.
  double loss_scale_init = 65536.0;
  int64_t loss_scale_growth_interval = 2000;
  OptimizerSpec optimizer;
  int64_t seed = 1337;
  int64_t ignore_index = -1;    ///< target id ignored by the loss (-1: none)
  DistributedSpec distributed;
};

struct Spec {
  std::string name = "model";
  ModelSpec model;
  TrainingSpec training;
  std::string json;  ///< the validated spec (defaults filled in), as JSON text
};

/// A located diagnostic. `path` is one of:
///   - a JSON path ("model.d_model", "training.optimizer.betas[1]", "(root)");
///   - for syntax errors "SOURCE:L:C" (1-based line and column), or "line L, column C"
///     when parseSpec was given an empty source;
///   - for errors caused by an override, "--set PATH" (PATH as the user wrote it, or the
///     JSON path of the field it set);
///   - for an unreadable file, the file name.
struct SpecError {
  std::string path;
  std::string message;
  std::string str() const { return path.empty() ? message : path + ": " + message; }
};

/// Parses `text` (JSON), applies `overrides` ("training.batch_size=32", value parsed as
/// JSON, else as a string; `null` resets a field to its default), fills defaults,
/// validates. Returns false and sets `err` on the first error; `out` is only written on
/// success. `source` names the input in syntax errors (a file name). Never throws.
bool parseSpec(const std::string &text, const std::vector<std::string> &overrides,
               Spec &out, SpecError &err, const std::string &source = "<spec>");

/// Reads a file and calls parseSpec (syntax errors get path "FILE:L:C"). An unreadable
/// file gives SpecError{path = FILE, message = "cannot read file"}.
bool loadSpecFile(const std::string &file, const std::vector<std::string> &overrides,
                  Spec &out, SpecError &err);

/// The diagnostic text for `err` from the input named `source`, without the "tgc: error: "
/// prefix: "SOURCE: PATH: MESSAGE" for semantic errors, "SOURCE:L:C: MESSAGE" for syntax
/// errors, "--set PATH: MESSAGE" for override errors, "FILE: cannot read file".
std::string formatSpecError(const std::string &source, const SpecError &err);

/// The deepest nesting of JSON arrays and objects a spec (or an experiment matrix) may
/// have; a spec needs 4. Deeper input is refused before it is parsed.
constexpr size_t kMaxJsonDepth = 64;

/// The byte offset in `text` of the first '[' or '{' that opens level `maxDepth + 1`
/// (strings skipped), or std::string::npos if the nesting stays within `maxDepth`. One
/// pass over the text; malformed JSON is left to the parser.
size_t jsonNestingTooDeep(const std::string &text, size_t maxDepth = kMaxJsonDepth);

/// If `policy` is "budget:<n>[KiB|MiB|GiB]" with n > 0, sets `bytes` and returns true.
bool parseCheckpointBudget(const std::string &policy, int64_t &bytes);

/// If `policy` is "auto:<n>[KiB|MiB|GiB]" with n > 0 (the device's whole memory), sets
/// `bytes` and returns true. tgc resolves it to the policy predicted fastest among those
/// whose plan fits (tools/tgc Driver.cpp resolveAutoCheckpointing; docs/spec.md).
bool parseCheckpointAuto(const std::string &policy, int64_t &bytes);

/// The small embedded default spec (a tiny model that trains on the CPU in minutes).
const char *defaultSpecJson();

/// Where a parameter goes in a Hugging Face checkpoint: the columns [col_begin, col_end)
/// of tgc's tensor (a 2-D [in, out] weight; the whole tensor for 1-D ones, col_end = 0
/// meaning "to the end") are the HF tensor `name`, transposed to HF's [out, in] when
/// `transpose` (nn.Linear), as they are otherwise (GPT-2's Conv1D layout, embeddings).
/// For a 1-D tensor (a bias) the range is of elements and `transpose` means nothing.
struct HfPiece {
  std::string name;               ///< "model.layers.0.self_attn.q_proj.weight"
  int64_t col_begin = 0, col_end = 0;
  bool transpose = false;
};

/// One named parameter tensor of the model, in creation order.
struct ParamInfo {
  /// How the driver initialises a parameter (GPT-2 / nanoGPT scheme).
  enum class Init { Normal, Zeros, Ones };
  std::string name;              ///< "layers.0.attn.qkv.weight"
  std::vector<int64_t> shape;
  Init init = Init::Normal;
  double initStd = 0.02;         ///< for Init::Normal; residual projections: 0.02/sqrt(2 L)
  bool decay = false;            ///< AdamW applies decoupled weight decay
  /// Its Hugging Face tensors (hfArchitecture); empty when the family has none.
  std::vector<HfPiece> hf;
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

/// The model's parameters, built from its components (weights [in, out]; Q = n_heads *
/// head_dim, W = qkvWidth(), F' = 2 F when mlp_gated else F):
///   wte [V,D]; wpe [C,D] (positional learned); per layer i "layers.i.":
///   ln1.weight [D] (+ ln1.bias [D] for layernorm), attn.qkv.weight [D,W] (+ .bias [W]),
///   attn.proj.weight [Q,D] (+ .bias [D]), ln2 as ln1, mlp.fc.weight [D,F'] (+ .bias [F']),
///   mlp.proj.weight [F,D] (+ .bias [D]); ln_f as ln1; lm_head.weight [V,D] (wte's layout,
///   not [in, out]) unless tied.
/// GPT-2's spec gives GPT-2's list exactly. Each entry carries its HF pieces
/// (hfArchitecture's names).
/// Each with its initialisation and weight-decay role (decay_embeddings: wte/wpe decay).
std::vector<ParamInfo> modelParameters(const ModelSpec &m, bool decay_embeddings = false);

/// The transformers class that computes this model ("GPT2LMHeadModel" for layer norm +
/// learned positions + tanh GELU; "LlamaForCausalLM" for RMSNorm + RoPE + SwiGLU without
/// biases), or "" with `why` set when no Hugging Face class does.
std::string hfArchitecture(const ModelSpec &m, std::string *why = nullptr);

/// Sum of numel() over modelParameters(m).
int64_t parameterCount(const ModelSpec &m);

} // namespace tgc

#endif
