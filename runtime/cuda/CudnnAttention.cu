// CudnnAttention.cu — bf16 / f16 attention on cuDNN's fused scaled-dot-product attention
// (SDPA, the cudnn-frontend graph API), a second implementation of tgrt_attention_fwd / _bwd
// and tgrt_attention_gqa_fwd / _bwd beside the own kernels (AttentionBf16.cu). Built only
// with TGRT_HAVE_CUDNN (runtime/cuda/CMakeLists.txt: cudnn.h in the CUDA toolkit and the
// cudnn-frontend headers of scripts/setup.sh); the emulator never builds it.
//
// Selection (Attention.cu, gqaFwd / gqaBwd, the one place that decides): TGRT_ATTN=cudnn
// (or cudnn-det) at context creation, or setAttentionImpl; the default is the own kernels.
// A call cuDNN cannot take (library missing, a shape or layout its heuristics refuse, a
// failed build or launch) runs on the own kernels instead; each refusal is noted once on
// stderr (per shape), never fatal. Calls that break tgrt.h's contract (negative sizes,
// misaligned tensors, ...) are left to the own path, which reports them as always.
//
// Graphs. One cudnn-frontend graph per (direction, dtype, deterministic, batch, heads,
// kv_heads, t, hd, the in / kv / out strides, causal, window, scale), built on first use
// (operation graph, heuristics mode A, the first supported plan) and cached in the context.
// Plans (TGRT_ATTN_TUNE, default 1): at a graph's first call outside a stream capture the
// other plans of mode A's list are built and timed on that call's tensors, and the fastest
// whose workspace is at most the first plan's runs from then on (tunePlans); 0, and
// TGRT_ATTN=cudnn-det (the same bits run after run), keep the heuristic's first (both read at
// context creation, Context::attn_tune). TGRT_ATTN_TUNE_LOG=1 prints the times and each
// plan's outputs against the first's. Only the heuristic's list is a candidate: the other KERNEL_CFG values of its
// engines build without complaint but some compute wrong results (inf, 20% off) at shapes
// they do not cover (docs/results.md, 2026-11-30 fifth session), and none was faster.
// Tensors are described in place, as tgrt.h lays them out: q, dq [batch, heads, t, hd] with
// the in strides; k, v, dk, dv [batch, kv_heads, t, hd] with the kv strides (query head h
// reads kv head h / (heads / kv_heads): cuDNN's grouped-query SDPA); out, dout with the out
// strides; lse is cuDNN's softmax statistics tensor Stats [batch, heads, t, 1] float32,
// strides (heads*t, t, 1, 1): the natural-log logsumexp of the scaled, masked scores row,
// i.e. tgrt.h's lse exactly, so either implementation's forward feeds the other's backward.
// Masks: causal = diagonal band right bound 0, top-left aligned (key j visible iff j <= i);
// window w (causal only, 0 < w < t) adds the left bound w (visible iff i - j < w).
// The backward overwrites dq, dk, dv (dk, dv of a kv head summed over its group by cuDNN).
//
// Loading. cuDNN is opened at run time (dlopen of libcudnn.so.9 by the library path, else
// from /usr/local/cuda/lib64 or lib; cudnn-frontend's dynamic loading), so the runtime
// library and the programs tgc links need no cuDNN at link time and start on machines
// without it (the own kernels run there).
//
// Workspace. cuDNN's need is the built graph's get_workspace_size(): the forward needs
// little or none; the backward (non-deterministic, the default) about
// 4*batch*heads*t*(hd + 1) bytes (a float32 dQ accumulator and the row sums D) plus the
// engine's own scratch. It uses the plan's workspace region when that is large enough;
// otherwise the context allocates the larger buffer beside the plan once (noted on stderr
// with the bytes; see CudaRuntime.h for the workspace the compiler plans). The
// deterministic backward (TGRT_ATTN=cudnn-det) on Hopper with cuDNN < 9.25 materialises
// dP: about 2*batch*heads*t^2 bytes more.
#include "runtime/cuda/Internal.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring> // before cudnn_frontend.h, whose shim uses std::strlen without it
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
#define CUDNN_FRONTEND_SKIP_JSON_LIB
#include <cudnn_frontend.h>

namespace cudnn_frontend {
// The library handle cudnn-frontend's dynamic loading resolves every cuDNN call through
// (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING): set by openCudnn before the first call.
void* cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend

namespace tgrt_cuda {

namespace fe = cudnn_frontend;

/// What selects a graph (see the header comment); scale as its bit pattern.
using CudnnGraphKey = std::array<int64_t, 20>;

struct CudnnGraph {
  std::shared_ptr<fe::graph::Graph> graph; ///< NULL: cuDNN refused this key (own kernels)
  int64_t workspace = 0;                   ///< bytes (get_workspace_size of the heuristic's plan)
  /// The execution plan every call runs (execute_plan_at_index): -1 until the first call
  /// outside a capture, which times the candidates (tunePlans) or takes the heuristic's.
  int64_t plan = -1;
  bool tuned = false; ///< tunePlans ran (or was not asked for): never again for this graph
};

/// Context::cudnn: the handle, the graph cache and the workspace beside the plan.
struct CudnnState {
  bool tried = false;  ///< openCudnn ran (ok or not)
  bool ok = false;     ///< the library loaded and the handle exists
  cudnnHandle_t handle = nullptr;
  int64_t version = 0; ///< cudnnGetVersion()
  std::map<CudnnGraphKey, CudnnGraph> graphs;
  void* ws = nullptr;  ///< device buffer when a graph needs more than the workspace region
  int64_t ws_bytes = 0;
};

namespace {

// Tensor uids of the graphs' variant packs.
enum : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

/// dlopen of `soname`, else of it in the CUDA toolkit's library folders; NULL (the first
/// error in `err`) when none loads.
void* openLibrary(const std::string& soname, std::string& err) {
  for (const std::string& dir : {std::string(), std::string("/usr/local/cuda/lib64/"),
                                 std::string("/usr/local/cuda/lib/")}) {
    if (void* h = dlopen((dir + soname).c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    const char* e = dlerror();
    if (err.empty()) err = e ? e : soname;
  }
  return nullptr;
}

/// The process's one cuDNN library handle (kept open). cudnn-frontend's dynamic loading also
/// opens the CUDA runtime by soname (libcudart.so.12 or .13) for the few runtime calls it
/// makes; it is loaded here first from the toolkit's folder too, so that the frontend's
/// dlopen by soname finds it already loaded whatever the program's library path.
void* libraryHandle(std::string& why) {
  static void* lib = nullptr;
  static std::string err;
  static bool tried = false;
  if (!tried) {
    tried = true;
    lib = openLibrary("libcudnn.so.9", err);
    if (lib) {
      std::string cudartErr;
      if (!openLibrary("libcudart.so." + std::to_string(CUDART_VERSION / 1000), cudartErr)) {
        err = cudartErr;
        lib = nullptr;
      }
    }
    if (lib) fe::cudnn_dlhandle = lib;
  }
  why = err;
  return lib;
}

/// Opens cuDNN for ctx on first use: false (noted once on stderr) when it cannot.
bool openCudnn(Context* ctx, const char* loc) {
  if (!ctx->cudnn) ctx->cudnn = new CudnnState();
  CudnnState& s = *ctx->cudnn;
  if (s.tried) return s.ok;
  s.tried = true;
  std::string why;
  try {
    if (!libraryHandle(why)) {
      std::fprintf(stderr, "tgrt: %s: cuDNN attention unavailable (%s); the own kernels run\n",
                   loc, why.c_str());
      return false;
    }
    s.version = fe::detail::get_backend_version();
    if (s.version < 90000) {
      std::fprintf(stderr,
                   "tgrt: %s: cuDNN %lld is older than 9.0; the own attention kernels run\n", loc,
                   (long long)s.version);
      return false;
    }
    cudnnStatus_t st = fe::detail::create_handle(&s.handle);
    if (st == CUDNN_STATUS_SUCCESS) st = fe::detail::set_stream(s.handle, ctx->stream);
    if (st != CUDNN_STATUS_SUCCESS) {
      std::fprintf(stderr, "tgrt: %s: cudnnCreate / cudnnSetStream: %s; the own attention "
                   "kernels run\n", loc, fe::detail::get_error_string(st));
      if (s.handle) fe::detail::destroy_handle(s.handle);
      s.handle = nullptr;
      return false;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tgrt: %s: cuDNN attention unavailable (%s); the own kernels run\n", loc,
                 e.what());
    return false;
  }
  s.ok = true;
  return true;
}

/// One tgrt attention call's shape (the arguments of attentionGqaFwd / _Bwd less pointers).
struct Shape {
  int32_t dt;
  int64_t batch, heads, kv_heads, t, hd;
  int64_t in[3], kv[3], out[3];
  int32_t causal;
  int64_t window; ///< effective: > 0 only when causal and < t
  float scale;
};

/// Whether the call is one cuDNN may take at all: well-formed (anything else goes to the own
/// path, which reports it), bf16 / f16, 16-byte aligned tensors and rows.
bool eligible(const Shape& s, std::initializer_list<const void*> ptrs) {
  if (s.dt != TGRT_BF16 && s.dt != TGRT_F16) return false;
  if (s.batch <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.t <= 0 || s.hd <= 0) return false;
  if (s.heads % s.kv_heads != 0 || s.hd % 8 != 0) return false;
  for (int i = 0; i < 3; ++i)
    if (s.in[i] <= 0 || s.kv[i] <= 0 || s.out[i] <= 0 || s.in[i] % 8 || s.kv[i] % 8 ||
        s.out[i] % 8)
      return false;
  for (const void* p : ptrs)
    if (!p || (uintptr_t)p % 16 != 0) return false;
  return true;
}

CudnnGraphKey keyOf(bool backward, bool deterministic, const Shape& s) {
  uint32_t bits;
  std::memcpy(&bits, &s.scale, 4);
  return {backward, s.dt, deterministic, s.batch, s.heads, s.kv_heads, s.t, s.hd,
          s.in[0], s.in[1], s.in[2], s.kv[0], s.kv[1], s.kv[2], s.out[0], s.out[1], s.out[2],
          s.causal, s.window, (int64_t)bits};
}

std::string describe(bool backward, bool deterministic, const Shape& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%s%s %s, batch %lld, heads %lld / kv %lld, t %lld, hd %lld, %s window %lld",
                backward ? "backward" : "forward", deterministic ? " (deterministic)" : "",
                s.dt == TGRT_BF16 ? "bf16" : "f16", (long long)s.batch, (long long)s.heads,
                (long long)s.kv_heads, (long long)s.t, (long long)s.hd,
                s.causal ? "causal" : "full", (long long)s.window);
  return buf;
}

fe::graph::Tensor_attributes tensorOf(const char* name, int64_t uid, int64_t b, int64_t h,
                                      int64_t t, int64_t hd, const int64_t* st) {
  return fe::graph::Tensor_attributes()
      .set_name(name)
      .set_uid(uid)
      .set_dim({b, h, t, hd})
      .set_stride({st[0], st[1], st[2], 1});
}

/// The mask of tgrt.h on cuDNN's diagonal band (top-left aligned: row i, column j).
template <typename Attrs>
void setMask(Attrs& a, const Shape& s) {
  if (!s.causal) return;
  a.set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT);
  a.set_diagonal_band_right_bound(0);                               // j <= i
  if (s.window > 0) a.set_diagonal_band_left_bound((int)s.window); // i - j < window
}

/// Builds the forward (backward) graph of s; error text in `why` on failure. `composite`:
/// the forward as cuDNN's composite SDPA node (the frontend's own choice otherwise, which
/// may be the newer unified node where its support surface allows).
std::shared_ptr<fe::graph::Graph> build(CudnnState& st, bool backward, bool deterministic,
                                        bool composite, const Shape& s, std::string& why) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(s.dt == TGRT_BF16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto Q = g->tensor(tensorOf("Q", kQ, s.batch, s.heads, s.t, s.hd, s.in));
  auto K = g->tensor(tensorOf("K", kK, s.batch, s.kv_heads, s.t, s.hd, s.kv));
  auto V = g->tensor(tensorOf("V", kV, s.batch, s.kv_heads, s.t, s.hd, s.kv));
  const std::vector<int64_t> statsDim = {s.batch, s.heads, s.t, 1};
  const std::vector<int64_t> statsStride = {s.heads * s.t, s.t, 1, 1};
  if (!backward) {
    auto opts = fe::graph::SDPA_attributes()
                    .set_name("tgrt_sdpa")
                    .set_generate_stats(true)
                    .set_attn_scale(s.scale);
    if (composite) opts.set_implementation(fe::AttentionImplementation_t::COMPOSITE);
    setMask(opts, s);
    auto [O, Stats] = g->sdpa(Q, K, V, opts);
    O->set_output(true).set_uid(kO).set_dim({s.batch, s.heads, s.t, s.hd}).set_stride(
        {s.out[0], s.out[1], s.out[2], 1});
    Stats->set_output(true)
        .set_uid(kStats)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim(statsDim)
        .set_stride(statsStride);
  } else {
    auto O = g->tensor(tensorOf("O", kO, s.batch, s.heads, s.t, s.hd, s.out));
    auto dO = g->tensor(tensorOf("dO", kDO, s.batch, s.heads, s.t, s.hd, s.out));
    auto Stats = g->tensor(fe::graph::Tensor_attributes()
                               .set_name("Stats")
                               .set_uid(kStats)
                               .set_dim(statsDim)
                               .set_stride(statsStride)
                               .set_data_type(fe::DataType_t::FLOAT));
    auto opts = fe::graph::SDPA_backward_attributes()
                    .set_name("tgrt_sdpa_backward")
                    .set_attn_scale(s.scale)
                    .set_deterministic_algorithm(deterministic);
    setMask(opts, s);
    auto [dQ, dK, dV] = g->sdpa_backward(Q, K, V, O, dO, Stats, opts);
    dQ->set_output(true).set_uid(kDQ).set_dim({s.batch, s.heads, s.t, s.hd}).set_stride(
        {s.in[0], s.in[1], s.in[2], 1});
    dK->set_output(true).set_uid(kDK).set_dim({s.batch, s.kv_heads, s.t, s.hd}).set_stride(
        {s.kv[0], s.kv[1], s.kv[2], 1});
    dV->set_output(true).set_uid(kDV).set_dim({s.batch, s.kv_heads, s.t, s.hd}).set_stride(
        {s.kv[0], s.kv[1], s.kv[2], 1});
  }
  auto bad = [&](fe::error_t e, const char* step) {
    if (e.is_good()) return false;
    why = std::string(step) + ": " + e.get_message();
    return true;
  };
  if (bad(g->validate(), "validate") ||
      bad(g->build_operation_graph(st.handle), "build_operation_graph") ||
      bad(g->create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans") ||
      bad(g->check_support(), "check_support") || bad(g->build_plans(), "build_plans"))
    return nullptr;
  return g;
}

/// The cached graph for (backward, deterministic, s), built on first use; NULL when cuDNN
/// refuses it (noted on stderr once per key) or the workspace cannot be had.
CudnnGraph* graphFor(Context* ctx, const char* loc, bool backward, bool deterministic,
                           const Shape& s) {
  if (!openCudnn(ctx, loc)) return nullptr;
  CudnnState& st = *ctx->cudnn;
  const CudnnGraphKey key = keyOf(backward, deterministic, s);
  auto it = st.graphs.find(key);
  if (it != st.graphs.end()) return it->second.graph ? &it->second : nullptr;
  CudnnGraph e;
  std::string why;
  try {
    e.graph = build(st, backward, deterministic, false, s, why);
    if (!e.graph && !backward) { // the forward again as the composite node
      std::string why2;
      e.graph = build(st, backward, deterministic, true, s, why2);
      if (!e.graph) why += "; as the composite node: " + why2;
    }
    if (e.graph) {
      const fe::error_t w = e.graph->get_workspace_size(e.workspace);
      if (w.is_bad()) {
        why = "get_workspace_size: " + w.err_msg;
        e.graph.reset();
      }
    }
  } catch (const std::exception& x) {
    why = x.what();
    e.graph.reset();
  }
  if (e.graph && e.workspace > ctx->region_bytes[TGRT_WORKSPACE] && e.workspace > st.ws_bytes) {
    // More than the plan's workspace region: a buffer of its own beside the plan.
    void* p = nullptr;
    check(cudaStreamSynchronize(ctx->stream), loc, "cudaStreamSynchronize (cuDNN workspace)");
    if (cudaMalloc(&p, (size_t)e.workspace) != cudaSuccess) {
      (void)cudaGetLastError();
      why = "cannot allocate its workspace of " + std::to_string(e.workspace) + " bytes";
      e.graph.reset();
    } else {
      if (st.ws) cudaFree(st.ws);
      st.ws = p;
      st.ws_bytes = e.workspace;
      std::fprintf(stderr,
                   "tgrt: %s: cuDNN attention %s needs %lld bytes of workspace, the plan's "
                   "workspace region has %lld: allocated %lld bytes beside the plan "
                   "(runtime/cuda/CudaRuntime.h)\n",
                   loc, describe(backward, deterministic, s).c_str(), (long long)e.workspace,
                   (long long)ctx->region_bytes[TGRT_WORKSPACE], (long long)e.workspace);
    }
  }
  if (!e.graph)
    std::fprintf(stderr, "tgrt: %s: cuDNN attention refuses the %s: %s; the own kernels run it\n",
                 loc, describe(backward, deterministic, s).c_str(), why.c_str());
  auto ins = st.graphs.emplace(key, std::move(e));
  return ins.first->second.graph ? &ins.first->second : nullptr;
}

/// One output of an attention call as device bytes (TGRT_ATTN_TUNE_LOG's comparison).
struct OutputSpan {
  const void* p;
  size_t bytes;
  bool f32; ///< float32 (the softmax statistics); else 16-bit of the call's dtype
};

/// The byte ranges the call writes: the forward's out and lse, the backward's dq, dk, dv
/// (each from its first to one past its last element, strides as in the Shape).
std::vector<OutputSpan> outputSpans(bool backward, const Shape& s,
                                    std::unordered_map<int64_t, void*>& pack) {
  auto span16 = [&](const int64_t* st, int64_t heads) {
    return (size_t)2 * (size_t)((s.batch - 1) * st[0] + (heads - 1) * st[1] + (s.t - 1) * st[2] + s.hd);
  };
  if (!backward)
    return {{pack[kO], span16(s.out, s.heads), false},
            {pack[kStats], (size_t)4 * (size_t)(s.batch * s.heads * s.t), true}};
  return {{pack[kDQ], span16(s.in, s.heads), false},
          {pack[kDK], span16(s.kv, s.kv_heads), false},
          {pack[kDV], span16(s.kv, s.kv_heads), false}};
}

/// The outputs' values on the host as floats (one vector per span).
std::vector<std::vector<float>> outputValues(Context* ctx, int32_t dt,
                                             const std::vector<OutputSpan>& spans) {
  std::vector<std::vector<float>> v;
  cudaStreamSynchronize(ctx->stream);
  for (const OutputSpan& o : spans) {
    std::vector<unsigned char> raw(o.bytes);
    cudaMemcpy(raw.data(), o.p, o.bytes, cudaMemcpyDeviceToHost);
    std::vector<float> f(o.f32 ? o.bytes / 4 : o.bytes / 2);
    for (size_t i = 0; i < f.size(); ++i) {
      if (o.f32) {
        std::memcpy(&f[i], &raw[4 * i], 4);
        continue;
      }
      uint16_t h;
      std::memcpy(&h, &raw[2 * i], 2);
      f[i] = dt == TGRT_BF16 ? tgrt_bf16_to_float(h) : tgrt_f16_to_float(h);
    }
    v.push_back(std::move(f));
  }
  return v;
}

/// max over outputs of max |a - b| / max |a| (NaN anywhere: NaN).
double relativeDifference(const std::vector<std::vector<float>>& a,
                          const std::vector<std::vector<float>>& b) {
  double worst = 0.0;
  for (size_t k = 0; k < a.size(); ++k) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < a[k].size(); ++i) {
      if (std::isnan(a[k][i]) != std::isnan(b[k][i])) return NAN;
      if (std::isnan(a[k][i])) continue;
      num = std::max(num, (double)std::fabs(a[k][i] - b[k][i]));
      den = std::max(den, (double)std::fabs(a[k][i]));
    }
    worst = std::max(worst, den > 0.0 ? num / den : num);
  }
  return worst;
}

/// Execution-plan tuning (CudnnState::tune; the attention's counterpart of Kernels.cu's
/// ltTune for GEMMs). Builds the engine configurations heuristics mode A offered for e's
/// graph, at most kTunePlans that build,
/// keeps those whose workspace is at most the heuristic plan's (e.workspace: the bytes the
/// compiler planned stay exact), and times each on this call's tensors: one warm-up, then 3
/// rounds alternating over the plans of kTuneCalls back-to-back executions each; the median
/// round decides, ties to the list's order. The heuristic's plan is the first index that
/// builds (build_plans' HEURISTICS_CHOICE takes the same). Repeating a call is harmless:
/// attention's outputs never alias its inputs (no in-place operand in dialect/TgOps.td) and
/// each call overwrites them. Sets e.plan; a plan that fails to build or run is skipped, and
/// when none runs e.plan stays the heuristic's. With TGRT_ATTN_TUNE_LOG=1 it prints every
/// plan's time and its outputs' largest difference from the heuristic plan's (relative to
/// the largest magnitude), and also times the plans that need more workspace than planned
/// (never chosen) on a buffer allocated for the timing and freed after it.
void tunePlans(Context* ctx, const char* loc, bool backward, bool deterministic, const Shape& s,
               CudnnGraph& e, std::unordered_map<int64_t, void*>& pack, void* ws) {
  constexpr size_t kTunePlans = 8;
  constexpr int kTuneCalls = 3;
  CudnnState& st = *ctx->cudnn;
  const auto t0 = std::chrono::steady_clock::now();
  struct Plan {
    int64_t index, workspace;
    float ms = 1e30f;  ///< median round; 1e30: did not run
    double diff = -1.0; ///< TGRT_ATTN_TUNE_LOG: outputs against the heuristic plan's
  };
  std::vector<Plan> within, over;
  const int64_t count = e.graph->get_execution_plan_count();
  int64_t unbuilt = 0;
  // Only the log times the plans over the planned workspace; otherwise cuDNN (>= 9.2) refuses
  // them at the engine configuration, before a plan is built (build_plan_at_index checks
  // support first), so the start-up does not build plans it would drop. They count as unbuilt
  // and, as when they were built, towards the kTunePlans listed (`refused`): the candidates
  // stay the list's first plans.
  if (!ctx->attn_tune_log) e.graph->deselect_workspace_greater_than(e.workspace);
  size_t refused = 0;
  for (int64_t i = 0; i < count && within.size() + over.size() + refused < kTunePlans; ++i) {
    int64_t w = 0;
    try {
      const fe::error_t built = e.graph->build_plan_at_index(i);
      // The frontend says "workspace violation" (cuDNN >= 9.2, the engine configuration) or
      // "Workspace size is too large" (older, the built plan).
      std::string why = built.err_msg;
      std::transform(why.begin(), why.end(), why.begin(),
                     [](unsigned char ch) { return (char)std::tolower(ch); });
      if (built.is_bad() && why.find("workspace") != std::string::npos) ++refused;
      if (built.is_bad() || e.graph->get_workspace_size_plan_at_index(i, w).is_bad()) {
        ++unbuilt;
        continue;
      }
    } catch (const std::exception&) {
      ++unbuilt;
      continue;
    }
    if (e.plan < 0) e.plan = i; // the heuristic's plan
    (w <= e.workspace ? within : over).push_back({i, w});
  }
  const int64_t heuristic = e.plan;
  const std::string what = describe(backward, deterministic, s);
  void* big = nullptr; // the over-workspace plans' buffer (TGRT_ATTN_TUNE_LOG only)
  if (ctx->attn_tune_log && !over.empty()) {
    int64_t need = 0;
    for (const Plan& p : over) need = std::max(need, p.workspace);
    if (cudaMalloc(&big, (size_t)need) != cudaSuccess) {
      (void)cudaGetLastError();
      big = nullptr;
    }
  }
  auto once = [&](int64_t i, void* w) {
    try {
      return e.graph->execute_plan_at_index(st.handle, pack, w, i).is_good();
    } catch (const std::exception&) {
      return false;
    }
  };
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  const bool timeWithin = within.size() >= 2 || ctx->attn_tune_log;
  if ((timeWithin || big) && cudaEventCreate(&e0) == cudaSuccess &&
      cudaEventCreate(&e1) != cudaSuccess) {
    cudaEventDestroy(e0);
    e0 = nullptr;
  }
  std::vector<OutputSpan> spans;
  std::vector<std::vector<float>> reference;
  bool heuristicWarm = false; // the log's reference run is the heuristic plan's warm-up
  if (ctx->attn_tune_log && e0 && once(heuristic, ws)) {
    spans = outputSpans(backward, s, pack);
    reference = outputValues(ctx, s.dt, spans);
    heuristicWarm = cudaStreamSynchronize(ctx->stream) == cudaSuccess;
  }
  // Times plans (each with workspace w): warm-up (and the comparison), then 3 alternating
  // rounds.
  auto timeAll = [&](std::vector<Plan>& plans, void* w) {
    std::vector<Plan*> ok;
    for (Plan& p : plans) {
      if (heuristicWarm && p.index == heuristic && w == ws) { // warmed and compared above
        ok.push_back(&p);
        p.diff = 0.0;
        continue;
      }
      if (once(p.index, w) && cudaStreamSynchronize(ctx->stream) == cudaSuccess) {
        ok.push_back(&p);
        if (!reference.empty()) p.diff = relativeDifference(reference, outputValues(ctx, s.dt, spans));
      }
    }
    (void)cudaGetLastError(); // a failed plan's launch error is not the next call's
    std::vector<std::array<float, 3>> ms(ok.size());
    for (int r = 0; r < 3; ++r)
      for (size_t j = 0; j < ok.size(); ++j) {
        bool good = true;
        cudaEventRecord(e0, ctx->stream);
        for (int c = 0; c < kTuneCalls; ++c) good = once(ok[j]->index, w) && good;
        cudaEventRecord(e1, ctx->stream);
        cudaEventSynchronize(e1);
        float t = 0.0f;
        cudaEventElapsedTime(&t, e0, e1);
        ms[j][r] = good ? t / (float)kTuneCalls : 1e30f;
      }
    (void)cudaGetLastError();
    for (size_t j = 0; j < ok.size(); ++j) {
      std::sort(ms[j].begin(), ms[j].end());
      ok[j]->ms = ms[j][1];
    }
  };
  if (e0) {
    if (timeWithin) {
      timeAll(within, ws);
      float best = 1e30f;
      for (const Plan& p : within)
        if (p.ms < best) best = p.ms, e.plan = p.index;
    }
    if (big) timeAll(over, big);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }
  if (big) {
    cudaStreamSynchronize(ctx->stream);
    cudaFree(big);
  }
  if (!ctx->attn_tune_log) return;
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "tgrt: %s: cuDNN attention %s: %lld engine configurations, %lld not "
               "built, %zu plan(s) within the planned workspace (%lld bytes); tuning took %.3f s\n",
               loc, what.c_str(), (long long)count, (long long)unbuilt, within.size(),
               (long long)e.workspace, secs);
  for (const std::vector<Plan>* list : {&within, &over})
    for (const Plan& p : *list) {
      std::string name;
      if (e.graph->get_plan_name_at_index(p.index, name).is_bad()) name = "?";
      char extra[96] = "";
      if (list == &over)
        std::snprintf(extra, sizeof extra, " [needs %lld bytes of workspace: not eligible]",
                      (long long)p.workspace);
      char ms[32] = "did not run", diff[48] = "";
      if (p.ms < 1e30f) std::snprintf(ms, sizeof ms, "%.4f ms", p.ms);
      if (p.diff >= 0.0 || std::isnan(p.diff))
        std::snprintf(diff, sizeof diff, ", outputs %.2e from the heuristic's", p.diff);
      std::fprintf(stderr, "tgrt: %s: cuDNN attention %s: plan %lld (%s) %s%s%s%s%s\n", loc,
                   what.c_str(), (long long)p.index, name.c_str(), ms, diff,
                   p.index == heuristic ? " [heuristic]" : "",
                   p.index == e.plan ? " [chosen]" : "", extra);
    }
}

/// Runs entry's graph on ctx's stream (its tuned plan, see tunePlans); false (the key then
/// refused, noted) on failure.
bool run(Context* ctx, const char* loc, bool backward, bool deterministic, const Shape& s,
         CudnnGraph& e, std::unordered_map<int64_t, void*>& pack) {
  CudnnState& st = *ctx->cudnn;
  void* ws = e.workspace <= ctx->region_bytes[TGRT_WORKSPACE] ? ctx->regions[TGRT_WORKSPACE]
                                                                : st.ws;
  std::string why;
  try {
    // TGRT_ATTN=cudnn-det promises the same bits run after run: a plan chosen by timing
    // could differ between runs (the listed plans' outputs differ by bf16 roundings), so
    // that mode keeps the heuristic's first plan, forward and backward.
    const bool tune =
        ctx->attn_tune && ctx->attn_impl != (int)AttentionImpl::CudnnDeterministic;
    if (!e.tuned && (!tune || !ctx->capturing)) {
      e.tuned = true;
      if (tune) tunePlans(ctx, loc, backward, deterministic, s, e, pack, ws);
    }
    fe::error_t r = e.plan >= 0 ? e.graph->execute_plan_at_index(st.handle, pack, ws, e.plan)
                                : e.graph->execute(st.handle, pack, ws);
    if (r.is_good()) {
      check(cudaGetLastError(), loc, backward ? "cuDNN attention backward"
                                              : "cuDNN attention forward");
      if (ctx->sync_each)
        check(cudaStreamSynchronize(ctx->stream), loc,
              backward ? "cuDNN attention backward" : "cuDNN attention forward");
      return true;
    }
    why = r.err_msg;
  } catch (const std::exception& x) {
    why = x.what();
  }
  std::fprintf(stderr, "tgrt: %s: cuDNN attention %s failed to run: %s; the own kernels run it\n",
               loc, describe(backward, deterministic, s).c_str(), why.c_str());
  st.graphs[keyOf(backward, deterministic, s)].graph.reset();
  return false;
}

Shape shapeOf(int32_t dt, int64_t batch, int64_t heads, int64_t kv_heads, int64_t t, int64_t hd,
              int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
              int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
              int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
              float scale) {
  Shape s;
  s.dt = dt;
  s.batch = batch;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.t = t;
  s.hd = hd;
  s.in[0] = in_stride_b, s.in[1] = in_stride_h, s.in[2] = in_stride_t;
  s.kv[0] = kv_stride_b, s.kv[1] = kv_stride_h, s.kv[2] = kv_stride_t;
  s.out[0] = out_stride_b, s.out[1] = out_stride_h, s.out[2] = out_stride_t;
  s.causal = causal ? 1 : 0;
  s.window = causal && window > 0 && window < t ? window : 0;
  s.scale = scale;
  return s;
}

} // namespace

bool cudnnAttentionFwd(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                       const void* v, void* out, float* lse, int64_t batch, int64_t heads,
                       int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                       int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                       int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                       int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
                       float scale) {
  checkCtx(ctx, loc);
  const Shape s = shapeOf(dt, batch, heads, kv_heads, t, hd, in_stride_b, in_stride_h,
                          in_stride_t, kv_stride_b, kv_stride_h, kv_stride_t, out_stride_b,
                          out_stride_h, out_stride_t, causal, window, scale);
  if (!eligible(s, {q, k, v, out, lse})) return false;
  CudnnGraph* e = graphFor(ctx, loc, false, false, s);
  if (!e) return false;
  std::unordered_map<int64_t, void*> pack = {
      {kQ, const_cast<void*>(q)}, {kK, const_cast<void*>(k)}, {kV, const_cast<void*>(v)},
      {kO, out},                  {kStats, lse}};
  return run(ctx, loc, false, false, s, *e, pack);
}

bool cudnnAttentionBwd(Context* ctx, const char* loc, int32_t dt, const void* q, const void* k,
                       const void* v, const void* out, const float* lse, const void* dout,
                       void* dq, void* dk, void* dv, int64_t batch, int64_t heads,
                       int64_t kv_heads, int64_t t, int64_t hd, int64_t in_stride_b,
                       int64_t in_stride_h, int64_t in_stride_t, int64_t kv_stride_b,
                       int64_t kv_stride_h, int64_t kv_stride_t, int64_t out_stride_b,
                       int64_t out_stride_h, int64_t out_stride_t, int32_t causal, int64_t window,
                       float scale, bool deterministic) {
  checkCtx(ctx, loc);
  const Shape s = shapeOf(dt, batch, heads, kv_heads, t, hd, in_stride_b, in_stride_h,
                          in_stride_t, kv_stride_b, kv_stride_h, kv_stride_t, out_stride_b,
                          out_stride_h, out_stride_t, causal, window, scale);
  if (!eligible(s, {q, k, v, out, lse, dout, dq, dk, dv})) return false;
  CudnnGraph* e = graphFor(ctx, loc, true, deterministic, s);
  if (!e) return false;
  std::unordered_map<int64_t, void*> pack = {
      {kQ, const_cast<void*>(q)},     {kK, const_cast<void*>(k)},
      {kV, const_cast<void*>(v)},     {kO, const_cast<void*>(out)},
      {kStats, const_cast<float*>(lse)}, {kDO, const_cast<void*>(dout)},
      {kDQ, dq},                      {kDK, dk},
      {kDV, dv}};
  return run(ctx, loc, true, deterministic, s, *e, pack);
}

int64_t cudnnAttentionWorkspace(Context* ctx, const char* loc, bool backward, int32_t dt,
                                int64_t batch, int64_t heads, int64_t kv_heads, int64_t t,
                                int64_t hd, int64_t in_stride_b, int64_t in_stride_h,
                                int64_t in_stride_t, int64_t kv_stride_b, int64_t kv_stride_h,
                                int64_t kv_stride_t, int64_t out_stride_b, int64_t out_stride_h,
                                int64_t out_stride_t, int32_t causal, int64_t window, float scale,
                                bool deterministic) {
  checkCtx(ctx, loc);
  const Shape s = shapeOf(dt, batch, heads, kv_heads, t, hd, in_stride_b, in_stride_h,
                          in_stride_t, kv_stride_b, kv_stride_h, kv_stride_t, out_stride_b,
                          out_stride_h, out_stride_t, causal, window, scale);
  // Any aligned non-null address stands for the tensors here.
  const void* p = reinterpret_cast<const void*>(uintptr_t(256));
  if (!eligible(s, {p})) return -1;
  const CudnnGraph* e = graphFor(ctx, loc, backward, backward && deterministic, s);
  return e ? e->workspace : -1;
}

bool cudnnAttentionAvailable(Context* ctx) {
  checkCtx(ctx, "cudnn_attention_available");
  return openCudnn(ctx, "cudnn_attention_available");
}

int64_t cudnnVersion(Context* ctx) {
  checkCtx(ctx, "cudnn_version");
  return openCudnn(ctx, "cudnn_version") ? ctx->cudnn->version : 0;
}

void destroyCudnn(Context* ctx) {
  if (!ctx || !ctx->cudnn) return;
  CudnnState* s = ctx->cudnn;
  try {
    s->graphs.clear();
    if (s->handle) fe::detail::destroy_handle(s->handle);
  } catch (const std::exception&) {
  }
  if (s->ws) cudaFree(s->ws);
  delete s;
  ctx->cudnn = nullptr;
}

} // namespace tgrt_cuda
