//===- Driver.h - tgc subcommands ---------------------------------*- C++ -*-===//
#ifndef TGC_TOOLS_TGC_DRIVER_H
#define TGC_TOOLS_TGC_DRIVER_H

#include "passes/CostModel.h"
#include "passes/LowerToEmitC.h"

#include <string>
#include <vector>

namespace mlir::tg {
struct PlanReport;
struct RuntimeCall;
} // namespace mlir::tg

namespace tgc {

struct Spec;

struct DriverOptions {
  std::string specFile;               ///< empty: the embedded default spec
  std::vector<std::string> overrides; ///< --set path=value
  std::string emit = "exe", target = "cpu", output;
  /// --memory as given, the device's whole memory (for target cuda a plan fits when plan +
  /// the context reserve <= memory); "" when not given (--max-batch then refuses to guess;
  /// --tradeoff and --ranks assume 80GiB and say so).
  std::string planJson, memory;
  /// --context-bytes as given; "" when not given (defaultContextBytes(target)).
  std::string contextBytes;
  std::string planSvg; ///< tgc plan --svg FILE: the plan as a picture (tools/tgc/PlanSvg.h)
  bool maxBatch = false;
  bool tradeoff = false; ///< tgc plan --tradeoff: checkpointing policies side by side
  int64_t ranks = 0;     ///< tgc plan --ranks N: one rank's memory per ZeRO stage
  bool ranksGiven = false; ///< --ranks was given (then N must be in [1, 64])
  /// tgc plan / compile --calibration FILE: the cost model's calibration table ("" = the
  /// shipped table of the target, findCalibration); compile uses it only to resolve
  /// training.checkpointing auto:<memory>.
  std::string calibration;
  /// tgc plan --tradeoff --sort: "" (policy order) or "time" (predicted step time).
  std::string sortBy;
  /// tgc plan --calls FILE: each runtime call with its predicted time (JSON lines).
  std::string callsFile;
};

/// `tgc calibrate --out FILE [--target cuda|cpu] [--quick]`: runs the calibration
/// executable of the target (tgc-calibrate-cpu / tgc-calibrate-cuda next to bin/tgc,
/// tools/calibrate) on this machine, which times the runtime's kernels and writes the
/// table. Returns its exit code (2: usage error or no such executable).
struct CalibrateOptions {
  std::string out, target = "cpu";
  bool quick = false;
  /// --power-only TABLE (cuda): only the power section, into a copy of TABLE written to out.
  std::string powerOnly;
  /// --only GROUP --into TABLE: one group of kernels (rows, gemms, batched-gemms, attention,
  /// loss) timed again (on the --quick grid or the full one), replacing those kernels' points
  /// in a copy of TABLE written to out.
  std::string onlyGroup, into;
};
int runCalibrate(const CalibrateOptions &opts);

/// `tgc data prepare` (tools/data/DataPrepare.h, docs/prepare.md).
struct DataCliOptions {
  std::vector<std::string> inputs;
  int vocab = 2048;
  bool vocabGiven = false; ///< --vocab given explicitly (refused with --tokenizer)
  std::string out, maxBytes = "0";
  unsigned seed = 1234;
  std::string tokenizer, eosToken, textField = "text", python;
  int threads = 0;
  std::string shardTokens = "100M"; ///< a count of tokens, K/M/G suffixes (powers of 1000)
  bool quiet = false;
};

/// Each returns the process exit code (0 success, 1 input error, 2 usage error) and
/// prints "tgc: error: <where>: <what>" on failure. No partial output file is left.
int runCompile(const DriverOptions &opts);
int runSummary(const DriverOptions &opts);
int runPlan(const DriverOptions &opts);
int runDataPrepare(const DataCliOptions &opts);

/// `tgc advise SPEC --memory BYTES [--target cuda|cpu] [--calibration FILE]
/// [--tokens-per-step T] [--precisions a,b] [--policies a,b] [--top N] [-o OUT] [--json FILE]`
/// (docs/cost-model.md, "tgc advise"): searches precision x checkpointing x micro-batch
/// (x grad_accum with --tokens-per-step) for the highest predicted tokens/s whose plan fits
/// `memory` with the context reserve, prints the best `top`, why each other family lost,
/// and writes the chosen spec. Returns 0, 1 (spec error) or 2 (usage error, nothing fits,
/// unreadable calibration); nothing is written on failure.
struct AdviseOptions {
  std::string specFile;               ///< empty: the embedded default spec
  std::vector<std::string> overrides; ///< --set path=value (applied before the search)
  std::string memory, contextBytes, target = "cuda", calibration;
  std::string precisions = "bf16-mixed,fp16-mixed";
  std::string policies = "none,gelu,selective,layer-attn,layer";
  long long tokensPerStep = 0; ///< 0: keep the spec's grad_accum
  bool tokensGiven = false;
  int top = 5;
  std::string output; ///< "" = ./<spec stem>-advised.json; "-" = stdout
  std::string json;   ///< --json FILE: every candidate with its numbers
};
int runAdvise(const AdviseOptions &opts);

/// `tgc export CHECKPOINT --spec SPEC [--set k=v]... --hf DIR` (tools/tgc/Export.cpp).
struct ExportOptions {
  std::string checkpoint;             ///< a safetensors checkpoint written by `train --save`
  std::string specFile;               ///< the spec it was trained with (empty: default spec)
  std::vector<std::string> overrides; ///< --set path=value, as at compile time
  std::string hfDir;                  ///< output directory
  /// --data DIR: a `tgc data prepare` directory whose tokenizer (meta.json "tokenizer") is
  /// copied next to the model with a tokenizer_config.json (docs/prepare.md).
  std::string dataDir;
};
/// Writes DIR/config.json (GPT2Config) and DIR/model.safetensors (GPT2LMHeadModel names,
/// F32) from the checkpoint's parameters. Returns 0, 1 (input error: unreadable or
/// mismatching checkpoint, a spec GPT-2 cannot express) or 2 (usage error).
int runExport(const ExportOptions &opts);

/// Writes `content` to `path` through a temporary file and a rename (a failure never
/// leaves a partial file); "-" or "" writes to stdout. False, with the error on stderr,
/// when the file cannot be written.
bool writeAtomically(const std::string &path, const std::string &content);

/// Plans `spec` (already validated) with extra --set `overrides` on top of spec.json, for
/// `target` ("cpu" or "cuda": the workspace size differs). False when the spec or the
/// pipeline refuses it; diagnostics go to stderr unless `quiet`, and `why` (if given)
/// receives their text ("; "-joined) for a one-line reason. `calls` (if given) receives
/// the runtime calls of the planned step (traceRuntimeCalls), what the cost model prices.
bool planWith(const Spec &spec, const std::vector<std::string> &overrides,
              const std::string &target, mlir::tg::PlanReport &report, bool quiet = false,
              std::string *why = nullptr,
              std::vector<mlir::tg::RuntimeCall> *calls = nullptr);

/// The device memory a CUDA process holds outside the plan: the CUDA context, library
/// handles and their workspaces. 537 MiB = 563,085,312 bytes, measured with nvidia-smi
/// (polled every 0.1 s over whole runs) on an H100, GPT-2 small and a 774M shape at B=16 and
/// at the planned max batch: peak = plan + 537 MiB every time (issue 25).
constexpr long long kCudaContextBytes = 537LL << 20;

/// The default of --context-bytes: kCudaContextBytes for target "cuda", 0 otherwise (the
/// CPU target's plan is host memory; nothing else is counted against --memory).
long long defaultContextBytes(const std::string &target);

/// --context-bytes as given (`text`), in bytes; when not given ("") for target cuda, the
/// "context_bytes" of the calibration table the command uses (`calibration`: --calibration,
/// "" = the shipped table for this machine's GPU, else the H100's), else
/// defaultContextBytes(target). -1 after printing "tgc: error: --context-bytes: cannot parse
/// '...'" for an unparsable value (an unreadable table is left to the command's own load).
long long contextBytesOption(const std::string &target, const std::string &text,
                             const std::string &calibration = "");

/// The cost model's prediction of one optimizer step of `spec` (docs/cost-model.md).
struct StepEstimate {
  double stepMs = 0;     ///< predicted time of one optimizer step (all micro-steps), ms
  double tokensPerS = 0; ///< tokens per second over all ranks
  double mfu = 0;        ///< model FLOPs per second over the table's peak, one rank
  std::string calibration, device; ///< the table used (path) and the device it measured
  bool rooflineOnly = false;       ///< no table found: the roofline of stated peaks
};

/// Reads the calibration table `calibration` for `target` into `table` ("" = the shipped
/// one: on the cuda target the table whose device is this machine's GPU 0 per nvidia-smi,
/// else calibration/h100.json; none found: the roofline of stated peaks) and names it in
/// `origin`. False, with the error printed, when the file cannot be read or is malformed.
bool loadCalibration(const std::string &calibration, const std::string &target,
                     mlir::tg::CalibrationTable &table, std::string &origin);

/// Predicts one optimizer step of `spec` from the runtime calls of its plan (planWith's
/// `calls`) with a table from loadCalibration (docs/cost-model.md).
StepEstimate estimateStep(const Spec &spec, const mlir::tg::CalibrationTable &table,
                          const std::string &origin,
                          const std::vector<mlir::tg::RuntimeCall> &calls);

/// The largest micro-batch (sequences) whose plan, with `overrides`, fits `memory` bytes
/// of device memory together with `contextBytes` held outside the plan (plan +
/// contextBytes <= memory): doubling from 1 (up to 2^16), then bisection (the plan grows
/// with the micro-batch). Returns 0 when even 1 does not fit or plans fail; `*bytes` gets
/// the total bytes of the plan at the returned batch (0 when 0). `progress` prints each
/// fitting batch on stderr.
int64_t maxMicroBatch(const Spec &spec, std::vector<std::string> overrides,
                      const std::string &target, long long memory, long long contextBytes,
                      int64_t *bytes, bool progress);

/// Parses "80GiB", "24GB", "512MiB", "1073741824" into bytes; -1 on error.
long long parseBytes(const std::string &text);

} // namespace tgc

#endif
