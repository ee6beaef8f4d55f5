//===- CostModel.h - predicted time of a compiled training step --*- C++ -*-===//
//
// The cost model of issue 23: the time of one optimizer step, predicted before anything
// runs, from the runtime calls the compiled step makes (traceRuntimeCalls in
// LowerToEmitC.h, on the planned module) and a calibration table measured on the machine
// (`tgc calibrate`, docs/cost-model.md).
//
// The model (all times in milliseconds):
//
//   step = grad_accum * sum(t(c) for c in @micro_step) + sum(t(c) for c in @optimizer_step)
//   t(c) = o + r(c) / e(kernel(c), dtype(c), r(c))
//   r(c) = max(flops(c) / P(dtype(c)), bytes(c) / B)          (the roofline time at peak)
//
// where o is the table's per-call overhead (launch and host cost of one call), P the peak
// FLOP/s of the call's dtype (f32, bf16, f16; tf32 is listed for reference), B the peak
// memory bandwidth, bytes(c) = bytes read + bytes written by the call's tensor arguments
// (tgrt_zero: its byte count argument) and flops(c) the FLOPs of the call from its integer
// arguments for GEMMs, attention and the fused loss, 0 for the memory-bound kernels
// (effectiveFlops). So t(c) is
// `o + max(flops / achieved FLOP/s, bytes / achieved bytes/s)` with achieved = e * peak.
// The efficiency e comes from the measured points (flops_i, bytes_i, ms_i) of the call's
// kernel and dtype: e_i = r_i / max(ms_i - o, ms_i / 10), interpolated piecewise linearly
// in (log r, log e) between the points and held constant beyond the smallest and largest,
// so a call the size of a measured point is predicted at exactly its measured time (when
// ms_i >= 10/9 o). GEMM kernels also key points by their transposition (variant "nn",
// "nt", "tn", "tt"); a call uses the points of its variant when there are any, else all
// of its kernel and dtype's points. Norms use the points of their row width d, attention
// and RoPE those of their head dim (and query heads per kv head) when there are any: their
// CUDA kernels take another path per width. A weight-gradient or dGELU GEMM that writes a
// bias gradient adds a tgrt_bias_grad_acc of the summed operand. With a power section in
// the table, the step's compute-bound calls are slowed to the SM clock at which the step's
// power meets the GPU's limit (PowerCoefficients; docs/cost-model.md "The power limit").
// A kernel (and dtype)
// without points is priced at the
// roofline of the peaks (e = 1) and reported as uncalibrated. Collectives (all-reduce,
// all-gather, reduce-scatter, broadcast) without points cost o + k * bytes / L with L the
// table's link bandwidth (k = 2 for an all-reduce, 1 otherwise) and are reported as
// uncalibrated; the waits cost o.
//
// What it ignores (docs/cost-model.md): overlap between calls (the CUDA runtime's
// all-reduce buckets run beside the backward: counted in full), the host work of the
// driver between steps (batch sampling, uploads, the loss download), data-dependent
// timing (the embedding backward's sort), the aspect ratio of a GEMM beyond its
// transposition (only its size, the roofline time, selects the efficiency), the cache
// state a kernel finds (the calibration runs each shape repeatedly, warm), the clock a
// GPU at its power cap leaves to compute-bound calls in a long step unless the table has a
// power section (then predictStep solves for the step's SM clock: PowerCoefficients),
// @eval_step.
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_PASSES_COSTMODEL_H
#define TGC_PASSES_COSTMODEL_H

#include "passes/LowerToEmitC.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mlir::tg {

/// One measured call of a kernel: its FLOPs and bytes as the cost model counts them for
/// the same call in a compiled step (RuntimeCall.flops, bytesRead + bytesWritten) and the
/// median time per call in ms.
struct CalibrationPoint {
  double flops = 0; ///< FLOPs
  double bytes = 0; ///< bytes read + written
  double ms = 0;    ///< measured time per call, ms (> 0)
  std::string variant; ///< GEMMs: "nn", "nt", "tn" or "tt" (trans_a, trans_b); else ""
  std::string shape;   ///< what was measured, for people ("m 512 n 192 k 64")
  /// The shape's "key value" integers (m 512, n 192, ...), parsed once when the table is
  /// read (parseCalibrationTable): what samePath compares, per call and point.
  std::map<std::string, int64_t> fields;
};

/// One kernel that `tgc calibrate` ran under sustained load (the table's "power" section):
/// its calls back to back for about a second, the board's energy counter read around the
/// last 0.6 s, so that the power limit acts as it does in a training step.
struct PowerProbe {
  std::string name; ///< "idle" (no kernel), "memory" (a bandwidth-bound kernel) or "gemm"
  std::string kernel, dtype, shape; ///< what was run ("" for idle)
  double flops = 0, bytes = 0;      ///< per call, counted as the model counts them
  double burstMs = 0;     ///< per call as the grid times a point (5 x ~3 ms), ms
  double burstMhz = 0;    ///< the SM clock right after those repetitions, MHz
  double sustainedMs = 0; ///< per call over the window, ms
  double sustainedMhz = 0; ///< the median SM clock over the window, MHz
  double watts = 0;       ///< board power at the window's end as NVML reports it (its own
                          ///< ~1 s average: the number the power limit holds), W
  double energyWatts = 0; ///< the energy counter's slope over the window, W (informative:
                          ///< 2-5% under `watts` on the H200 for the throttled probes)
};

/// The power section of a table: what the GPU's power limit does to compute-bound calls.
struct PowerTable {
  double limitW = 0; ///< the enforced board power limit, W
  double maxMhz = 0; ///< the SM clock's maximum, MHz
  std::vector<PowerProbe> probes;
};

/// The power model's coefficients, derived from a table's probes (powerCoefficients):
///   P(f) = staticW + (jPerFlop * (f / maxMhz)^2 * F + jPerByte * B) / T(f)
/// the mean board power of a step that computes F FLOPs and moves B bytes in T(f) seconds
/// at SM clock f. Dynamic energy per FLOP scales with the square of the clock (CMOS dynamic
/// power alpha C V^2 f, with the supply voltage roughly proportional to the clock across
/// the DVFS range); energy per byte of DRAM traffic does not depend on the SM clock.
struct PowerCoefficients {
  bool valid = false;
  double staticW = 0;   ///< the idle probe's power, W
  double jPerByte = 0;  ///< joules per byte moved (the memory probes)
  double jPerFlop = 0;  ///< joules per FLOP at maxMhz (the gemm probes)
  double burstMhz = 0;  ///< the SM clock of the grid's compute-bound points (gemm probes)
  /// How close the calibration's compute-bound calls run to their clock-bound time (the
  /// gemm probes whose clock fell: (sustainedMs / burstMs) * (sustainedMhz / burstMhz), in
  /// (0, 1]): a call of burst time t takes t * max(1, clockBound * burstMhz / f) at clock f
  /// (a roofline in the clock: at the calibration's clock a GEMM waits partly on memory,
  /// and only below clockBound * burstMhz does it slow with the clock; on the H200 both
  /// probes give 0.89: no slowdown above ~1770 MHz, 1.22x at 1455).
  double clockBound = 1;
  double maxMhz = 0, limitW = 0;
  std::string why; ///< when not valid: what the table lacks
};

/// A calibration table (JSON; docs/cost-model.md "Calibration table" gives the format):
/// the machine's peaks, the per-call overhead and the measured points of each kernel.
struct CalibrationTable {
  std::string path;   ///< the file it was read from; "" for a built-in table
  std::string target; ///< "cuda" or "cpu"
  std::string device; ///< e.g. "NVIDIA H100 80GB HBM3", "Intel(R) Xeon(R) ... (2 CPUs)"
  std::string measured; ///< when (free text, e.g. an ISO date); may be empty
  /// Peak FLOP/s by dtype: "f32", "tf32", "bf16", "f16" (dense). A dtype not listed uses
  /// "f32".
  std::map<std::string, double> peakFlops;
  double memBytesPerS = 0;  ///< peak memory bandwidth, bytes/s (> 0)
  double linkBytesPerS = 0; ///< collectives' bandwidth per rank, bytes/s (0: none known)
  double callOverheadMs = 0; ///< launch + host cost of one runtime call, ms (>= 0)
  /// Measured points: kernel (tgrt_*) -> dtype ("f32", "bf16", "f16", "i32", or "any" for
  /// calls without a dtype argument) -> points.
  std::map<std::string, std::map<std::string, std::vector<CalibrationPoint>>> kernels;
  /// True for a table made from stated default peaks (defaultRooflineTable), not measured.
  bool roofline = false;
  /// Free text carried in the file ("note"), e.g. how it was measured.
  std::string note;
  /// The device memory a training process holds outside its plan on this GPU
  /// ("context_bytes": CUDA context, library handles, their workspaces), bytes, measured
  /// with NVML from the trainers' own report at the end of their runs; 0 when the table has
  /// none (then --context-bytes defaults to the H100's kCudaContextBytes). tgc takes it as
  /// the default --context-bytes with this table (tools/tgc/Driver.cpp contextBytesOption).
  int64_t contextBytes = 0;
  /// The device memory CUDA allocations draw from on this GPU ("memory_bytes": cudaMemGetInfo's
  /// total, which the CUDA context's own memory also comes out of), bytes; 0 when the table
  /// has none. With this table it is the memory training.checkpointing "auto" fits a plan +
  /// the reserve into when no --memory is given (tools/tgc/Driver.cpp
  /// resolveAutoCheckpointing; docs/spec.md).
  int64_t memoryBytes = 0;
  /// The probes of the GPU's power limit ("power"; empty when the table has none: then
  /// no clock is predicted and every call keeps its burst time).
  PowerTable power;
};

/// Derives the coefficients from `table.power` (see PowerCoefficients): staticW = the idle
/// probe's watts; jPerByte = the mean over memory probes of (watts - staticW) / bytes per
/// second; jPerFlop = the mean over gemm probes of (watts - staticW - jPerByte * bytes per
/// second) / FLOPs per second, scaled by (maxMhz / sustainedMhz)^2; burstMhz = the mean of
/// the gemm probes' burstMhz; clockBound from the gemm probes whose clock fell (1 if none).
/// Not valid (with `why`) without a limit, an idle, a memory or
/// a gemm probe, or when a coefficient comes out <= 0.
PowerCoefficients powerCoefficients(const CalibrationTable &table);

/// Parses a calibration table from JSON `text`; `path` names it in errors. Returns false
/// with `error` = "PATH: $.json.path: what is wrong" (e.g. "h100.json: $.kernels.tgrt_matmul
/// .bf16[2].ms: expected a number > 0, got -1") for malformed JSON (then "PATH: line:col:
/// ..."), a wrong "format", a missing or non-positive peak, or a malformed point.
bool parseCalibrationTable(const std::string &text, const std::string &path,
                           CalibrationTable &table, std::string &error);

/// Reads and parses the file `path` (parseCalibrationTable); an unreadable file is an error
/// naming it.
bool loadCalibrationTable(const std::string &path, CalibrationTable &table,
                          std::string &error);

/// The table as JSON text (the format parseCalibrationTable reads; points sorted by kernel
/// and dtype as stored).
std::string calibrationTableJson(const CalibrationTable &table);

/// A table without measured points from stated peaks, for when no calibration file exists:
/// "cuda": the H100 SXM's datasheet numbers (dense bf16 / f16 989.4 TFLOP/s, tf32 494.7,
/// f32 66.9, HBM3 3.35 TB/s, NVLink 450 GB/s per direction, 0.004 ms per call); any other
/// target: a generic CPU (50 GFLOP/s in every dtype, 10 GB/s, 0.001 ms per call). Every
/// prediction from it is the roofline at peak plus the overhead: optimistic.
CalibrationTable defaultRooflineTable(const std::string &target);

/// The lower-case dtype key of a call: "f32", "bf16", "f16" from "TGRT_F32" etc.; "any"
/// when the call has no dtype argument.
std::string dtypeKey(const std::string &tgrtDtype);

/// The GEMM variant of a call of a matmul kernel ("nn", "nt", "tn", "tt" from its trans_a,
/// trans_b arguments), or "" for other kernels.
std::string gemmVariant(const RuntimeCall &call);

/// True for the collectives (tgrt_all_reduce_*, tgrt_all_gather_*, tgrt_reduce_scatter_*,
/// tgrt_broadcast).
bool isCollective(const std::string &kernel);

/// True for the kernels whose time the model relates to FLOPs: the GEMMs (tgrt_matmul*),
/// the attention kernels (tgrt_attention_*) and tgrt_linear_cross_entropy. Every other
/// kernel is priced by its bytes alone (its FLOPs, one or a few per element, never bind on
/// either backend; the efficiency curve absorbs what a kernel computes per byte, e.g. the
/// exponentials of a softmax), and so are the points measured for it.
bool usesFlops(const std::string &kernel);

/// The FLOPs the model prices for a call, from its integer arguments (runtime/tgrt.h), not
/// from RuntimeCall.flops: the GEMMs 2 batch m n k, attention 4 (forward) or 10 (backward)
/// hd per visible (query, key) pair and head (CostOpInterface's counts), linear cross
/// entropy 6 rows d vocab (its logits, dx and dw GEMMs); 0 for every kernel that is not
/// usesFlops. The integer arguments are what the call computes, whichever call the trace
/// attributes an op's FLOPs to (the GEMM of a deferred GELU gradient's call goes to the
/// call after it). The calibration counts its points the same way.
double effectiveFlops(const RuntimeCall &call);

/// Visible (query, key) pairs of one attention head of t queries: t^2 without a mask,
/// t (t + 1) / 2 causal, and with a window w > 0 each query sees min(i + 1, w) keys.
double attentionPairs(int64_t t, bool causal, int64_t window);

/// Peak FLOP/s of `dtype` ("f32", "bf16", ...; "any" and unknown dtypes: "f32").
double peakFlopsOf(const CalibrationTable &table, const std::string &dtype);

/// The roofline time of a call at the table's peaks, ms: max(flops / P(dtype), bytes / B).
double rooflineMs(const CalibrationTable &table, double flops, double bytes,
                  const std::string &dtype);

/// The position of the parameter named `param` among runtime kernel `kernel`'s parameters
/// after (ctx, loc), as the kernel list declares them (runtime/tgrt_kernels.def): the
/// position RuntimeCall::nullArgs and the access strings use. -1 when the kernel is not in
/// the list or has no such parameter.
int kernelParamIndex(const std::string &kernel, const std::string &param);

/// The predicted time of one call, ms (see the file comment). `calibrated` (if given) is
/// set to whether measured points priced it.
double predictCallMs(const CalibrationTable &table, const RuntimeCall &call,
                     bool *calibrated = nullptr);

/// Predicted time of one kernel and dtype over a whole optimizer step.
struct KernelTime {
  std::string kernel, dtype;
  int64_t calls = 0; ///< calls per optimizer step (micro-step calls x grad_accum)
  double ms = 0;     ///< ms per optimizer step
  bool calibrated = true;
};

/// The predicted time of one optimizer step.
struct StepPrediction {
  double stepMs = 0;          ///< grad_accum * microStepMs + optimizerStepMs
  double microStepMs = 0;     ///< one @micro_step
  double optimizerStepMs = 0; ///< one @optimizer_step
  double evalStepMs = 0;      ///< one @eval_step (not part of stepMs)
  double overheadMs = 0;      ///< the per-call overheads within stepMs
  int64_t gradAccum = 1;
  int64_t callsPerStep = 0;   ///< runtime calls per optimizer step
  std::vector<KernelTime> byKernel; ///< per kernel and dtype, largest ms first
  double uncalibratedMs = 0;  ///< the part of stepMs priced without measured points
  /// "kernel/dtype" of every uncalibrated kernel in the step, largest time first.
  std::vector<std::string> uncalibrated;
  /// The power limit (a table with a valid power section, powerCoefficients): the SM clock
  /// predicted for the step, MHz (0: no power model; = burstMhz when the step's power at
  /// the calibration's clock is within the limit), the mean power at it, W, and the step
  /// at the calibration's clock, ms (stepMs is the step at clockMhz: its compute-bound
  /// calls, usesFlops, slowed by burstMhz / clockMhz, the per-call overhead excepted).
  double clockMhz = 0, burstMhz = 0, powerW = 0, unthrottledStepMs = 0;
  /// The step's energy at clockMhz (power model only; 0 without), J per optimizer step, by
  /// the model's three terms: its FLOPs at PowerCoefficients::jPerFlop (f / maxMhz)^2, its
  /// bytes at jPerByte, and the static power over the step's time. Their sum is powerW x
  /// stepMs (within the per-call overheads' share): at the limit a step's time follows its
  /// energy (docs/cost-model.md "The power limit").
  double energyFlopsJ = 0, energyBytesJ = 0, energyStaticJ = 0;
  double stepFlops = 0, stepBytes = 0; ///< what the energy terms count, per optimizer step
};

/// Predicts one optimizer step of `calls` (traceRuntimeCalls of the planned module: the
/// calls of @micro_step, @optimizer_step and @eval_step) with `gradAccum` (>= 1) micro-steps
/// per optimizer step.
StepPrediction predictStep(const CalibrationTable &table, const std::vector<RuntimeCall> &calls,
                           int64_t gradAccum);

} // namespace mlir::tg

#endif
