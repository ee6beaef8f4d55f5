//===- AttentionMask.cuh - causal / sliding-window masks over attention tiles ---===//
//
// Shared by the fp32 (Attention.cu), TF32 (AttentionTf32.cu) and bf16 (AttentionBf16.cu)
// flash-attention kernels. Query i sees key j iff j < t and, when causal, j <= i and
// (window <= 0 or i - j < window). Tiles outside the visible band are never visited; tiles
// entirely inside it skip the per-element mask.
//
//===----------------------------------------------------------------------------===//
#ifndef TGRT_CUDA_ATTENTIONMASK_CUH
#define TGRT_CUDA_ATTENTIONMASK_CUH

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <type_traits>
// Include after runtime/cuda/Internal.h (CUDA, or the CPU emulator's stand-ins).

namespace tgrt_cuda {
namespace attn {

/// Strided layout of one attention operand (tgrt_attention_fwd): row i (hd contiguous
/// elements) of problem bh = b * heads + h starts at element b * sb + h * sh + i * st.
/// Grouped-query attention (tgrt_attention_gqa_fwd): the k / v layout has group = heads /
/// kv_heads (heads: the query heads) and query problem bh reads kv head h / group, whose row i
/// starts at b * sb + (h / group) * sh + i * st (kvBase). group is 1 for every other layout.
struct Layout {
  int64_t heads, sb, sh, st;
  int64_t group = 1;
  /// Element offset of row 0 of problem bh (q, out, dq, dout; k, v without GQA).
  __host__ __device__ __forceinline__ int64_t base(int64_t bh) const {
    return (bh / heads) * sb + (bh % heads) * sh;
  }
  /// Element offset of row 0 of the kv head that query problem bh reads (the k / v layout).
  __host__ __device__ __forceinline__ int64_t kvBase(int64_t bh) const {
    return (bh / heads) * sb + ((bh % heads) / group) * sh;
  }
  /// The first query problem b * heads + kh * group of kv problem bkv = b * kv_heads + kh
  /// (its group's query problems are it and the group - 1 after it, in one sequence b).
  __host__ __device__ __forceinline__ int64_t firstQuery(int64_t bkv) const {
    const int64_t kvHeads = heads / group;
    return (bkv / kvHeads) * heads + (bkv % kvHeads) * group;
  }
};

/// Whether k, v (layout lk) need the grouped-query kernels: kv heads shared by groups of
/// query heads, or their own strides. Otherwise (plain attention, and GQA with kv_heads =
/// heads in the q layout) k, v sit in q's layout and the kernels compiled without GQA run:
/// exactly the code of plain attention.
inline bool separateKv(const Layout& li, const Layout& lk) {
  return lk.group != 1 || lk.sb != li.sb || lk.sh != li.sh || lk.st != li.st;
}

/// Calls f(std::integral_constant<int, HD>, std::bool_constant<GQA>) for head dim hd (32, 64
/// or 128; false for another) and GQA = separateKv(li, lk).
template <typename F>
bool withHdGqa(int64_t hd, const Layout& li, const Layout& lk, F&& f) {
  auto g = [&](auto hdC) {
    if (separateKv(li, lk)) f(hdC, std::true_type{});
    else f(hdC, std::false_type{});
  };
  switch (hd) {
  case 32: g(std::integral_constant<int, 32>{}); return true;
  case 64: g(std::integral_constant<int, 64>{}); return true;
  case 128: g(std::integral_constant<int, 128>{}); return true;
  default: return false;
  }
}

/// Fails unless every tensor pointer is 16-byte aligned (the kernels load 16-byte words).
inline void checkAlignedTensors16(const char* loc, const char* what,
                                  std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if ((uintptr_t)p % 16 != 0)
      fail(loc, "%s: every tensor must be 16-byte aligned (got %p)", what, p);
}

/// Fails unless every stride of `li`, `lk` and `lo` is a multiple of `elems` elements
/// (16-byte aligned rows: 4 for f32, 8 for bf16 / f16).
inline void checkRowStrides16(const char* loc, const char* what, const Layout& li,
                              const Layout& lk, const Layout& lo, int64_t elems) {
  const int64_t s[9] = {li.sb, li.sh, li.st, lk.sb, lk.sh, lk.st, lo.sb, lo.sh, lo.st};
  for (int64_t x : s)
    if (x % elems != 0) {
      if (lk.group == 1 && lk.sb == li.sb && lk.sh == li.sh && lk.st == li.st)
        fail(loc,
             "%s: row stride / strides (in %lld, %lld, %lld; out %lld, %lld, %lld) must be "
             "multiples of %lld elements (16-byte aligned rows)",
             what, (long long)li.sb, (long long)li.sh, (long long)li.st, (long long)lo.sb,
             (long long)lo.sh, (long long)lo.st, (long long)elems);
      fail(loc,
           "%s: row stride / strides (in %lld, %lld, %lld; kv %lld, %lld, %lld; out %lld, %lld, "
           "%lld) must be multiples of %lld elements (16-byte aligned rows)",
           what, (long long)li.sb, (long long)li.sh, (long long)li.st, (long long)lk.sb,
           (long long)lk.sh, (long long)lk.st, (long long)lo.sb, (long long)lo.sh,
           (long long)lo.st, (long long)elems);
    }
}

/// The (q[, dq]), (k, v[, dk, dv]) and (out[, dout]) layouts of a tgrt_attention_gqa_fwd
/// (`forward`) or tgrt_attention_gqa_bwd call, after checking that the sizes and strides are
/// non-negative and that kv_heads divides heads (fails naming the call and the argument list
/// otherwise). `gqa` false: a tgrt_attention_fwd / _bwd call (kv_heads = heads, kv strides =
/// in strides), whose messages name that call.
struct Layouts {
  Layout in, kv, out;
};
inline Layouts checkedLayouts(const char* loc, bool forward, bool gqa, int64_t batch,
                              int64_t heads, int64_t kv_heads, int64_t t, int64_t hd,
                              int64_t in_stride_b, int64_t in_stride_h, int64_t in_stride_t,
                              int64_t kv_stride_b, int64_t kv_stride_h, int64_t kv_stride_t,
                              int64_t out_stride_b, int64_t out_stride_h, int64_t out_stride_t) {
  const char* fn = forward ? (gqa ? "attention_gqa_fwd" : "attention_fwd")
                           : (gqa ? "attention_gqa_bwd" : "attention_bwd");
  char what[64];
  std::snprintf(what, sizeof what, "%s(batch, heads, t, hd)", fn);
  checkNonNegative(loc, what, batch, heads, t, hd);
  std::snprintf(what, sizeof what, "%s(in strides)", fn);
  checkNonNegative(loc, what, in_stride_b, in_stride_h, in_stride_t);
  if (gqa) {
    std::snprintf(what, sizeof what, "%s(kv strides)", fn);
    checkNonNegative(loc, what, kv_stride_b, kv_stride_h, kv_stride_t);
  }
  std::snprintf(what, sizeof what, "%s(out strides)", fn);
  checkNonNegative(loc, what, out_stride_b, out_stride_h, out_stride_t);
  if (gqa && (kv_heads <= 0 ? heads > 0 : heads % kv_heads != 0))
    fail(loc, "%s: kv_heads %lld does not divide heads %lld", fn, (long long)kv_heads,
         (long long)heads);
  const int64_t group = heads > 0 ? heads / kv_heads : 1;
  return {Layout{heads, in_stride_b, in_stride_h, in_stride_t},
          Layout{heads, kv_stride_b, kv_stride_h, kv_stride_t, group},
          Layout{heads, out_stride_b, out_stride_h, out_stride_t}};
}

/// Is key j visible to query i? Keys >= t never are (rows >= t are never stored).
__device__ __forceinline__ bool visibleKey(int64_t i, int64_t j, int64_t t, int causal,
                                           int64_t window) {
  if (j >= t) return false;
  if (!causal) return true;
  return j <= i && (window <= 0 || i - j < window);
}

/// Is every (query, key) pair of the tiles [q0, q0 + nq) x [k0, k0 + nk) visible (keys < t)?
__device__ __forceinline__ bool tileFull(int64_t q0, int nq, int64_t k0, int nk, int64_t t,
                                         int causal, int64_t window) {
  if (k0 + nk > t) return false;
  if (!causal) return true;
  return k0 + nk - 1 <= q0 && (window <= 0 || q0 + nq - 1 - k0 < window);
}

/// Key tiles [lo, hi] (of bc keys) that a query tile [q0, q0 + br) must visit.
__host__ __device__ __forceinline__ void keyTiles(int64_t q0, int br, int bc, int64_t t, int causal,
                                         int64_t window, int64_t& lo, int64_t& hi) {
  int64_t kHi = t - 1, kLo = 0;
  if (causal) {
    kHi = q0 + br - 1 < t - 1 ? q0 + br - 1 : t - 1;
    if (window > 0) kLo = q0 - window + 1 > 0 ? q0 - window + 1 : 0;
  }
  lo = kLo / bc;
  hi = kHi / bc;
}

/// Query tiles [lo, hi] (of br queries) that see any key of the key tile [k0, k0 + bc).
__device__ __forceinline__ void queryTiles(int64_t k0, int br, int bc, int64_t t, int causal,
                                           int64_t window, int64_t& lo, int64_t& hi) {
  int64_t qLo = 0, qHi = t - 1;
  if (causal) {
    qLo = k0;
    if (window > 0) {
      const int64_t last = k0 + bc - 1 + window - 1;
      qHi = last < t - 1 ? last : t - 1;
    }
  }
  lo = qLo / br;
  hi = qHi / br;
}

__device__ __forceinline__ float quadMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quadSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

} // namespace attn
} // namespace tgrt_cuda

#endif
