// Dtype.cuh — element types of runtime/tgrt.h (enum tgrt_dtype) on the device: storage types,
// conversions and 16-byte vector ("pack") access, shared by Kernels.cu and the attention files.
//
// Storage. f32 is `float`; bf16 and f16 are their uint16_t bit patterns wrapped in structs of
// their own (bf16_t, f16_t) so that templates tell them apart. Every kernel computes in float:
// toF() widens exactly, fromF<T>() rounds once, to nearest even.
//
// Conversions match tgrt.h's host helpers (tgrt_bf16_from_float, tgrt_f16_from_float, ...) bit
// for bit, NaN included: bf16 uses the same integer formula on the device; f16 uses the
// hardware cvt.rn.f16.f32 / cvt.f32.f16 (IEEE round-to-nearest-even, subnormals kept, overflow
// to inf) with NaN mapped to tgrt.h's patterns (the hardware returns a canonical NaN).
// Under the emulator (TGRT_CUDA_EMULATE) they are tgrt.h's helpers themselves.
#ifndef TGRT_CUDA_DTYPE_CUH
#define TGRT_CUDA_DTYPE_CUH

#include "runtime/cuda/Internal.h"
#include "runtime/tgrt.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tgrt_cuda {

/// bf16 bit pattern (upper half of an IEEE float32).
struct bf16_t {
  uint16_t bits;
};
/// f16 bit pattern (IEEE binary16).
struct f16_t {
  uint16_t bits;
};

// ------------------------------------------------------------------ bit casts --

__device__ __forceinline__ uint32_t floatBits(float f) {
#ifdef TGRT_CUDA_EMULATE
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#else
  return __float_as_uint(f);
#endif
}
__device__ __forceinline__ float bitsFloat(uint32_t u) {
#ifdef TGRT_CUDA_EMULATE
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#else
  return __uint_as_float(u);
#endif
}
/// True unless f is +-inf or NaN (no libm: the same on the device and in the emulator).
__device__ __forceinline__ bool finiteF(float f) {
  return (floatBits(f) & 0x7f800000u) != 0x7f800000u;
}

/// 2^x by the SFU (ex2.approx.ftz.f32: relative error about 2^-22, subnormal results flushed
/// to 0; x = -inf gives 0): what the flash kernels' softmax and the 16-bit cross-entropy use
/// (one MUFU.EX2 where expf takes eight instructions). exp2f under the emulator.
__device__ __forceinline__ float fastExp2(float x) {
#ifdef TGRT_CUDA_EMULATE
  return exp2f(x);
#else
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#endif
}

// ---------------------------------------------------------------- conversions --

__device__ __forceinline__ float bf16ToFloat(uint16_t h) { return bitsFloat((uint32_t)h << 16); }
/// tgrt_bf16_from_float: RNE; NaN -> quiet NaN with the sign and upper payload kept.
/// On the GPU the non-NaN case is one cvt.rn.bf16.f32 (IEEE round-to-nearest-even, subnormals
/// kept, overflow to inf: the integer formula's bits) instead of the formula's ~8 integer
/// instructions; the cast check compares both over every special and 2^20 random patterns.
__device__ __forceinline__ uint16_t bf16FromFloat(float f) {
  const uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
#ifdef TGRT_CUDA_EMULATE
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#else
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#endif
}
/// True if any of f[0..N) is NaN (f != f: tgc builds without fast math).
template <int N>
__device__ __forceinline__ bool anyNaN(const float* f) {
  bool nan = false;
#pragma unroll
  for (int i = 0; i < N; ++i) nan |= f[i] != f[i];
  return nan;
}
/// Two floats rounded to bf16 (RNE) in one word: lo in bits 0-15 (the lower column or
/// address), hi in bits 16-31. One cvt.rn.bf16x2.f32 on the GPU: the bits of bf16FromFloat
/// for every non-NaN input (the tensor-core kernels' accumulator pairs, Gemm.cu and
/// AttentionBf16.cu).
__device__ __forceinline__ uint32_t packBf16(float lo, float hi) {
#ifdef TGRT_CUDA_EMULATE
  return (uint32_t)bf16FromFloat(lo) | ((uint32_t)bf16FromFloat(hi) << 16);
#else
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#endif
}
/// tgrt_f16_to_float (exact).
__device__ __forceinline__ float f16ToFloat(uint16_t h) {
#ifdef TGRT_CUDA_EMULATE
  return tgrt_f16_to_float(h);
#else
  if ((h & 0x7fffu) > 0x7c00u) // NaN: keep sign and payload as the host helper does
    return bitsFloat(((uint32_t)(h & 0x8000u) << 16) | 0x7f800000u | ((uint32_t)(h & 0x3ffu) << 13));
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#endif
}
/// tgrt_f16_from_float: RNE, subnormals kept, >= 65520 in magnitude -> inf, NaN -> sign|0x7e00.
__device__ __forceinline__ uint16_t f16FromFloat(float f) {
#ifdef TGRT_CUDA_EMULATE
  return tgrt_f16_from_float(f);
#else
  const uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((u >> 16) & 0x8000u) | 0x7e00u);
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#endif
}

/// Two floats rounded to f16 (RNE, overflow to inf) in one word, lo in bits 0-15: one
/// cvt.rn.f16x2.f32 on the GPU, the bits of f16FromFloat for every non-NaN input (the f16
/// tensor-core kernels' accumulator pairs, pack16).
__device__ __forceinline__ uint32_t packF16(float lo, float hi) {
#ifdef TGRT_CUDA_EMULATE
  return (uint32_t)f16FromFloat(lo) | ((uint32_t)f16FromFloat(hi) << 16);
#else
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#endif
}

__device__ __forceinline__ float toF(float x) { return x; }
__device__ __forceinline__ float toF(bf16_t x) { return bf16ToFloat(x.bits); }
__device__ __forceinline__ float toF(f16_t x) { return f16ToFloat(x.bits); }

template <typename T>
__device__ __forceinline__ T fromF(float f);
template <>
__device__ __forceinline__ float fromF<float>(float f) {
  return f;
}
template <>
__device__ __forceinline__ bf16_t fromF<bf16_t>(float f) {
  return bf16_t{bf16FromFloat(f)};
}
template <>
__device__ __forceinline__ f16_t fromF<f16_t>(float f) {
  return f16_t{f16FromFloat(f)};
}

/// The same rounding on the host (fill values, masked values): tgrt.h's helpers.
template <typename T>
inline T hostFromF(float f);
template <>
inline float hostFromF<float>(float f) {
  return f;
}
template <>
inline bf16_t hostFromF<bf16_t>(float f) {
  return bf16_t{tgrt_bf16_from_float(f)};
}
template <>
inline f16_t hostFromF<f16_t>(float f) {
  return f16_t{tgrt_f16_from_float(f)};
}

/// Width in elements of the elementwise "pack" of a kernel over types Ts: 4 (one float4)
/// when all are f32, else 8 (one 16-byte load of a 2-byte type, two of f32).
template <typename... Ts>
__host__ __device__ constexpr int packWidth() {
  return ((sizeof(Ts) == 2) || ...) ? 8 : 4;
}

// ---------------------------------------------------------------- 16-byte access --

__device__ __forceinline__ uint4 load16(const void* p) {
#ifdef TGRT_CUDA_EMULATE
  uint4 r;
  std::memcpy(&r, p, 16);
  return r;
#else
  return *reinterpret_cast<const uint4*>(p);
#endif
}
__device__ __forceinline__ void store16(void* p, uint4 v) {
#ifdef TGRT_CUDA_EMULATE
  std::memcpy(p, &v, 16);
#else
  *reinterpret_cast<uint4*>(p) = v;
#endif
}

/// One 16-byte word widened to floats (4 of f32, 8 of a 2-byte type).
__device__ __forceinline__ void unpack16(uint4 r, float* f, float) {
  f[0] = bitsFloat(r.x);
  f[1] = bitsFloat(r.y);
  f[2] = bitsFloat(r.z);
  f[3] = bitsFloat(r.w);
}
__device__ __forceinline__ void unpack16(uint4 r, float* f, bf16_t) {
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = bitsFloat(w[i] << 16);
    f[2 * i + 1] = bitsFloat(w[i] & 0xffff0000u);
  }
}
__device__ __forceinline__ void unpack16(uint4 r, float* f, f16_t) {
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = f16ToFloat((uint16_t)(w[i] & 0xffffu));
    f[2 * i + 1] = f16ToFloat((uint16_t)(w[i] >> 16));
  }
}
/// floats rounded into one 16-byte word (the inverse of unpack16).
__device__ __forceinline__ uint4 pack16(const float* f, float) {
  return make_uint4(floatBits(f[0]), floatBits(f[1]), floatBits(f[2]), floatBits(f[3]));
}
/// bf16 / f16: a pack without NaN (every pack of a finite step) rounds by four paired cvt
/// (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32: the scalar helpers' bits for every non-NaN input);
/// a pack with a NaN takes the scalar helpers, which keep tgrt.h's NaN patterns. The integer
/// formula had been about 8 instructions per element, most of the 16-bit cross-entropy's
/// gradient pass: with the cvt it took 0.855x its time on the H200 (docs/results.md,
/// 2026-12-01 "bf16 rounding by the hardware").
__device__ __forceinline__ uint4 pack16(const float* f, bf16_t) {
  if (!anyNaN<8>(f))
    return make_uint4(packBf16(f[0], f[1]), packBf16(f[2], f[3]), packBf16(f[4], f[5]),
                      packBf16(f[6], f[7]));
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    w[i] = (uint32_t)bf16FromFloat(f[2 * i]) | ((uint32_t)bf16FromFloat(f[2 * i + 1]) << 16);
  return make_uint4(w[0], w[1], w[2], w[3]);
}
__device__ __forceinline__ uint4 pack16(const float* f, f16_t) {
  if (!anyNaN<8>(f))
    return make_uint4(packF16(f[0], f[1]), packF16(f[2], f[3]), packF16(f[4], f[5]),
                      packF16(f[6], f[7]));
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    w[i] = (uint32_t)f16FromFloat(f[2 * i]) | ((uint32_t)f16FromFloat(f[2 * i + 1]) << 16);
  return make_uint4(w[0], w[1], w[2], w[3]);
}

/// Pack iv of W elements of p (elements [iv*W, iv*W + W)), widened: W*sizeof(T) is 16 or 32
/// bytes, read as one or two 16-byte words. The pack must be 16-byte aligned.
template <int W, typename T>
__device__ __forceinline__ void ldPack(const T* p, int64_t iv, float (&f)[W]) {
  static_assert((W * sizeof(T)) % 16 == 0, "a pack is whole 16-byte words");
  constexpr int kWords = (int)(W * sizeof(T) / 16), kPer = (int)(16 / sizeof(T));
  const T* base = p + iv * W;
#pragma unroll
  for (int u = 0; u < kWords; ++u) unpack16(load16(base + u * kPer), f + u * kPer, T{});
}
/// A pack's accumulate in T's precision, the typed twin of StAccDyn::add:
///   o[j] = round_T(prev[j] + round_T(o[j]))   (as floats; prev already holds T values)
/// what tgrt_add_mixed computes when a backward adds its result into a gradient stored as T
/// (the layer norm's and RMSNorm's register kernels). __fadd_rn: the add is never contracted
/// with o's last product into an FMA (with f32 T an FMA rounds once where the separate
/// calls round twice; it changed an RMSNorm kernel's bits on the H200, 2026-11-29).
template <typename T, int W>
__device__ __forceinline__ void packAccRound(const float (&prev)[W], float (&o)[W]) {
#pragma unroll
  for (int j = 0; j < W; ++j) o[j] = toF(fromF<T>(__fadd_rn(prev[j], toF(fromF<T>(o[j])))));
}

/// Stores pack iv of W floats rounded to T (see ldPack).
template <int W, typename T>
__device__ __forceinline__ void stPack(T* p, int64_t iv, const float (&f)[W]) {
  static_assert((W * sizeof(T)) % 16 == 0, "a pack is whole 16-byte words");
  constexpr int kWords = (int)(W * sizeof(T) / 16), kPer = (int)(16 / sizeof(T));
  T* base = p + iv * W;
#pragma unroll
  for (int u = 0; u < kWords; ++u) store16(base + u * kPer, pack16(f + u * kPer, T{}));
}

// ------------------------------------------------------ runtime-typed access --

/// v rounded to dt (bf16, f16; f32 unchanged), back as a float.
__device__ __forceinline__ float roundDyn(int32_t dt, float v) {
  if (dt == TGRT_BF16) return bf16ToFloat(bf16FromFloat(v));
  if (dt == TGRT_F16) return f16ToFloat(f16FromFloat(v));
  return v;
}
/// Element i of a tensor of runtime dtype dt, as a float (the scalar fallback kernels).
struct LdDyn {
  const void* p;
  int32_t dt;
  __device__ __forceinline__ float operator()(int64_t i) const {
    if (dt == TGRT_BF16) return bf16ToFloat(static_cast<const uint16_t*>(p)[i]);
    if (dt == TGRT_F16) return f16ToFloat(static_cast<const uint16_t*>(p)[i]);
    return static_cast<const float*>(p)[i];
  }
  __device__ __forceinline__ bool valid() const { return p != nullptr; }
};
/// Stores v rounded to the runtime dtype dt at element i.
struct StDyn {
  void* p;
  int32_t dt;
  __device__ __forceinline__ void operator()(int64_t i, float v) const {
    if (dt == TGRT_BF16) static_cast<uint16_t*>(p)[i] = bf16FromFloat(v);
    else if (dt == TGRT_F16) static_cast<uint16_t*>(p)[i] = f16FromFloat(v);
    else static_cast<float*>(p)[i] = v;
  }
  __device__ __forceinline__ bool valid() const { return p != nullptr; }
};
/// StDyn that adds: p[i] = round(p[i] + round(v)), the sum of tgrt_add_mixed (the
/// accumulating layer-norm and RMSNorm backwards). __fadd_rn: the add is never contracted
/// with v's last product into an FMA (with f32 an FMA rounds once where the separate calls
/// round twice; it changed an RMSNorm kernel's bits on the H200, 2026-11-29).
struct StAccDyn {
  void* p;
  int32_t dt;
  /// Stores the sum and returns it (rounded to dt, as a float).
  __device__ __forceinline__ float add(int64_t i, float v) const {
    const float s = roundDyn(dt, __fadd_rn(LdDyn{p, dt}(i), roundDyn(dt, v)));
    StDyn{p, dt}(i, s);
    return s;
  }
  __device__ __forceinline__ void operator()(int64_t i, float v) const { add(i, v); }
  __device__ __forceinline__ bool valid() const { return p != nullptr; }
};

// ------------------------------------------------------------- host dispatch --

/// Calls f(T{}) with T the storage type of dt (float, bf16_t, f16_t); fails on another value.
template <typename F>
void withDtype(const char* loc, const char* what, int32_t dt, F&& f) {
  switch (dt) {
  case TGRT_F32: f(float{}); return;
  case TGRT_BF16: f(bf16_t{}); return;
  case TGRT_F16: f(f16_t{}); return;
  default: fail(loc, "%s: unknown dtype %d (expected 0 f32, 1 bf16 or 2 f16)", what, (int)dt);
  }
}

} // namespace tgrt_cuda

#endif // TGRT_CUDA_DTYPE_CUH
