//===- Driver.cpp - tgc subcommands ------------------------------------------===//
#include "tools/tgc/Driver.h"

#include "dialect/TgDialect.h"
#include "frontend/MLIRGen.h"
#include "frontend/Spec.h"
#include "passes/CostModel.h"
#include "passes/LowerToEmitC.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"
#include "tools/data/DataPrepare.h"
#include "tools/tgc/PlanSvg.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include <cstdlib>
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>
#include <sstream>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

using namespace mlir;

namespace tgc {
static bool resolveAutoCheckpointing(const DriverOptions &opts, Spec &spec);
namespace {

/// Prints a spec error as "tgc: error: <file>: <path>: <message>" (syntax errors carry
/// "<file>:L:C" in their path already).
void reportSpecError(const std::string &file, const SpecError &err) {
  std::string where = file.empty() ? "<default spec>" : file;
  llvm::errs() << "tgc: error: ";
  if (err.path.rfind("--set", 0) == 0 || err.path.rfind(where, 0) == 0)
    llvm::errs() << err.path << ": " << err.message << "\n";
  else if (err.path.empty())
    llvm::errs() << where << ": " << err.message << "\n";
  else
    llvm::errs() << where << ": " << err.path << ": " << err.message << "\n";
}

bool loadSpec(const DriverOptions &opts, Spec &spec) {
  SpecError err;
  bool ok = opts.specFile.empty()
                ? parseSpec(defaultSpecJson(), opts.overrides, spec, err, "<default spec>")
                : loadSpecFile(opts.specFile, opts.overrides, spec, err);
  if (!ok) {
    reportSpecError(opts.specFile, err);
    return false;
  }
  return resolveAutoCheckpointing(opts, spec);
}

void setupContext(MLIRContext &ctx) {
  DialectRegistry registry;
  registry.insert<tg::TgDialect, func::FuncDialect>();
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
}

} // namespace

/// Writes `content` to `path` through a temporary file and a rename, so a failure
/// never leaves a partial file. "-" or "" writes to stdout.
bool writeAtomically(const std::string &path, const std::string &content) {
  if (path.empty() || path == "-") {
    llvm::outs() << content;
    llvm::outs().flush();
    return true;
  }
  // Writes `content` to `file`; errors name `path` (the user's name for it).
  auto writeFile = [&](const std::string &file) {
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    if (ec) {
      llvm::errs() << "tgc: error: " << path << ": cannot write: " << ec.message() << "\n";
      return false;
    }
    os << content;
    os.close();
    if (os.has_error()) {
      llvm::errs() << "tgc: error: " << path << ": write failed\n";
      return false;
    }
    return true;
  };
  // A device or FIFO (e.g. -o /dev/null) is written in place: a rename would replace it.
  llvm::sys::fs::file_status st;
  if (!llvm::sys::fs::status(path, st) && llvm::sys::fs::exists(st) &&
      st.type() != llvm::sys::fs::file_type::regular_file &&
      st.type() != llvm::sys::fs::file_type::directory_file)
    return writeFile(path);
  std::string tmp = path + ".tmp-tgc";
  if (!writeFile(tmp)) {
    llvm::sys::fs::remove(tmp);
    return false;
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, path)) {
    llvm::errs() << "tgc: error: " << path << ": cannot rename: " << ec.message() << "\n";
    llvm::sys::fs::remove(tmp);
    return false;
  }
  return true;
}

namespace {

std::string withCommas(long long n) {
  std::string s = std::to_string(n < 0 ? -n : n);
  for (int i = (int)s.size() - 3; i > 0; i -= 3)
    s.insert(i, ",");
  return (n < 0 ? "-" : "") + s;
}

/// Builds the forward module from the spec and runs the shared pipeline up to `stage`.
/// Diagnostics go to stderr with their locations (op names from the model); `quiet`: the
/// caller handles them (e.g. a max-batch search where a refused plan is an answer) and no
/// summary line is printed on failure.
bool buildModule(MLIRContext &ctx, const Spec &spec, tg::PipelineStage stage,
                 OwningOpRef<ModuleOp> &module, llvm::StringRef target = "cpu",
                 bool quiet = false) {
  module = buildForwardModule(ctx, spec);
  if (failed(mlir::verify(*module))) {
    llvm::errs() << "tgc: error: internal: the generated forward IR does not verify\n";
    return false;
  }
  PassManager pm(&ctx);
  tg::TrainingPipelineOptions o;
  const tgc::OptimizerSpec &opt = spec.training.optimizer;
  o.attention = spec.training.attention.kernel;
  // The spec's policy strings were validated through these enums' symbolize functions.
  o.precision = *tg::symbolizePrecision(spec.training.precision);
  o.gradAccum = spec.training.grad_accum;
  o.lossScaleInit = spec.training.loss_scale_init;
  o.lossScaleGrowthInterval = spec.training.loss_scale_growth_interval;
  o.beta1 = opt.beta1;
  o.beta2 = opt.beta2;
  o.eps = opt.eps;
  o.weightDecay = opt.weight_decay;
  o.gradClip = opt.grad_clip;
  o.decayEmbeddings = opt.decay_embeddings;
  o.offload = *tg::symbolizeOffload(opt.offload);
  o.ranks = spec.training.distributed.ranks;
  o.zero = spec.training.distributed.zero;
  o.lossChunkBytes = spec.training.loss_chunk_bytes;
  o.biasRows = spec.training.bias_rows == "on" ||
               (spec.training.bias_rows == "auto" && target == "cuda");
  o.gradients = spec.training.gradients;
  o.lowPrecisionGrads = spec.training.gradient_dtype == "auto";
  o.splitMaster = spec.training.master_values != "f32";
  o.splitTables = spec.training.master_values == "all";
  o.attentionImpl = spec.training.attention.impl;
  o.workspaceBytes = tg::workspaceBytesFor(target);
  o.commBytes = tg::commBytesFor(target, spec.training.distributed.ranks);
  const std::string &ck = spec.training.checkpointing;
  if (ck.rfind("auto", 0) == 0) {
    // loadSpec resolves auto and auto:<memory> to a policy (tgc experiment: an unset policy
    // is none); a spec built otherwise must do the same.
    llvm::errs() << "tgc: error: training.checkpointing: " << ck
                 << " must be resolved to a policy before planning (tgc resolves it when it "
                    "loads the spec)\n";
    return false;
  }
  if (ck.rfind("budget", 0) == 0) {
    int64_t bytes = 0;
    (void)parseCheckpointBudget(ck, bytes); // validated with the spec
    o.checkpointing = tg::Checkpointing::budget;
    o.checkpointBudget = bytes;
  } else {
    o.checkpointing = *tg::symbolizeCheckpointing(ck);
  }
  tg::buildTrainingPipeline(pm, o, stage);
  // The IR is verified once after the whole pipeline, not after every pass (about 10% of
  // planning time at 1000 layers, docs/memory-planning.md "Planning cost");
  // TGC_VERIFY_EACH_PASS=1 restores per-pass verification to find which pass broke it.
  const char *each = std::getenv("TGC_VERIFY_EACH_PASS");
  pm.enableVerifier(each && *each && std::string(each) != "0");
  if (failed(pm.run(*module))) {
    if (!quiet)
      llvm::errs() << "tgc: error: the pass pipeline failed (see the diagnostics above)\n";
    return false;
  }
  if (failed(mlir::verify(*module))) {
    llvm::errs() << "tgc: error: internal: the IR after the pass pipeline does not verify "
                    "(rerun with TGC_VERIFY_EACH_PASS=1 to name the pass)\n";
    return false;
  }
  return true;
}

std::string printModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  flags.elideLargeElementsAttrs(16);
  flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false); // keep model place names
  module->print(os, flags);
  os << "\n";
  return text;
}

/// Directory holding the runtime archives (build tree by default; TGC_RUNTIME_DIR overrides).
std::string runtimeDir() {
  if (const char *env = getenv("TGC_RUNTIME_DIR"))
    return env;
  return TGC_BINARY_DIR;
}

/// Compiles the emitted C++ with the host compiler and links it with the runtime into an
/// executable (emit=exe) or a shared library with the tglib.h C ABI (emit=lib).
bool linkExecutable(const std::string &cpp, const DriverOptions &opts) {
  bool lib = opts.emit == "lib";
  std::string out = opts.output.empty() ? (lib ? "model.so" : "train") : opts.output;
  std::string rt = runtimeDir();
  std::string backend = opts.target == "cuda" ? rt + "/runtime/cuda/libtgrt_cuda.a"
                                              : rt + "/runtime/cpu/libtgrt_cpu.a";
  if (opts.target == "cuda" && !TGC_CUDA_ENABLED && !getenv("TGC_RUNTIME_DIR")) {
    llvm::errs() << "tgc: error: --target=cuda: this tgc was built without the CUDA runtime "
                    "(configure with -DTGC_ENABLE_CUDA=ON)\n";
    return false;
  }
  for (const std::string &f : {backend, rt + "/runtime/driver/libtgrt_driver.a"})
    if (!llvm::sys::fs::exists(f)) {
      llvm::errs() << "tgc: error: runtime library not found: " << f
                   << " (build it, or set TGC_RUNTIME_DIR)\n";
      return false;
    }
  llvm::SmallString<128> src;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("tgc-model", "cpp", src)) {
    llvm::errs() << "tgc: error: cannot create a temporary file: " << ec.message() << "\n";
    return false;
  }
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(src, ec);
    os << cpp;
  }
  std::string tmpOut = out + ".tmp-tgc";
  std::vector<std::string> args = {TGC_CXX_COMPILER, "-O2", "-std=c++17", "-fPIC",
                                   "-I" + std::string(TGC_SOURCE_DIR), std::string(src)};
  if (lib) {
    args.insert(args.begin() + 1, "-shared");
    args.push_back("-Wl,--whole-archive");
    args.push_back(rt + "/runtime/driver/libtgrt_lib.a");
    args.push_back("-Wl,--no-whole-archive");
  } else {
    args.push_back(rt + "/runtime/driver/libtgrt_main_a.a");
  }
  args.push_back(rt + "/runtime/driver/libtgrt_driver.a");
  args.push_back(backend);
  if (opts.target == "cuda") {
    for (const char *a : {"-L/usr/local/cuda/lib64", "-Wl,-rpath,/usr/local/cuda/lib64",
                          "-lcublasLt", "-lnccl", "-lcudart_static", "-ldl", "-lrt"})
      args.push_back(a);
  } else {
    args.push_back("-lopenblas");
  }
  args.push_back("-lpthread");
  // Extra host-compiler flags, e.g. TGC_HOST_FLAGS="-g -fsanitize=address" (whitespace-split).
  if (const char *extra = getenv("TGC_HOST_FLAGS")) {
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(extra).split(parts, ' ', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef p : parts)
      if (!p.trim().empty())
        args.push_back(p.trim().str());
  }
  args.push_back("-o");
  args.push_back(tmpOut);
  llvm::SmallVector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string errMsg;
  int rc = llvm::sys::ExecuteAndWait(args[0], argRefs, std::nullopt, {}, 0, 0, &errMsg);
  llvm::sys::fs::remove(src);
  if (rc != 0) {
    llvm::sys::fs::remove(tmpOut);
    llvm::errs() << "tgc: error: the host compiler failed (" << (errMsg.empty() ? "exit " + std::to_string(rc) : errMsg)
                 << "); command:";
    for (auto &a : args)
      llvm::errs() << " " << a;
    llvm::errs() << "\n";
    return false;
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmpOut, out)) {
    llvm::errs() << "tgc: error: " << out << ": " << ec.message() << "\n";
    return false;
  }
  llvm::errs() << "tgc: wrote " << out << " (" << (lib ? "shared library" : "executable")
               << ", target " << opts.target << ")\n";
  return true;
}

/// Plans `spec` and returns the report, and with `calls` the runtime calls of the planned
/// step (what the lowering would emit: tg::traceRuntimeCalls). False on failure
/// (diagnostics printed).
bool planSpec(MLIRContext &ctx, const Spec &spec, llvm::StringRef target, tg::PlanReport &report,
              bool quiet = false, std::vector<tg::RuntimeCall> *calls = nullptr) {
  OwningOpRef<ModuleOp> module;
  if (!buildModule(ctx, spec, tg::PipelineStage::Planned, module, target, quiet))
    return false;
  if (failed(tg::readPlanReport(*module, report)))
    return false;
  return !calls || succeeded(tg::traceRuntimeCalls(*module, *calls));
}

} // namespace

int runSummary(const DriverOptions &opts) {
  Spec spec;
  if (!loadSpec(opts, spec))
    return 1;
  std::vector<ParamInfo> params = modelParameters(spec.model);
  size_t width = 4;
  for (const ParamInfo &p : params)
    width = std::max(width, p.name.size());
  llvm::raw_ostream &os = llvm::outs();
  os << "model '" << spec.name << "': " << spec.model.n_layers << " layers, d_model "
     << spec.model.d_model << ", " << spec.model.n_heads << " heads, d_ff " << spec.model.d_ff
     << ", context " << spec.model.context << ", vocab " << spec.model.vocab_size
     << (spec.model.tie_embeddings ? ", tied embeddings" : "") << "\n\n";
  os << llvm::left_justify("name", width) << "  " << llvm::left_justify("shape", 14)
     << llvm::right_justify("count", 14) << "\n";
  long long total = 0;
  for (const ParamInfo &p : params) {
    std::string shape;
    for (size_t i = 0; i < p.shape.size(); ++i)
      shape += (i ? "x" : "") + std::to_string(p.shape[i]);
    os << llvm::left_justify(p.name, width) << "  " << llvm::left_justify(shape, 14)
       << llvm::right_justify(withCommas(p.numel()), 14) << "\n";
    total += p.numel();
  }
  os << "\ntotal parameters: " << total << " (" << withCommas(total) << ", "
     << llvm::format("%.2f", total / 1e6) << " M)\n";
  return 0;
}

/// The directory that will hold `-o FILE` must exist and be writable: checked before
/// compiling, so that the error names the path instead of the linker failing at the end.
static bool checkOutputDir(const DriverOptions &opts) {
  std::string out = opts.output;
  if (out == "-" || (out.empty() && opts.emit != "exe" && opts.emit != "lib"))
    return true;  // stdout
  if (out.empty())
    out = opts.emit == "lib" ? "model.so" : "train";
  llvm::SmallString<256> dir(llvm::sys::path::parent_path(out));
  if (dir.empty())
    dir = ".";
  if (!llvm::sys::fs::is_directory(dir)) {
    llvm::errs() << "tgc: error: -o " << out << ": directory " << dir
                 << (llvm::sys::fs::exists(dir) ? " is not a directory" : " does not exist")
                 << "\n";
    return false;
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    llvm::errs() << "tgc: error: -o " << out << ": directory " << dir
                 << " is not writable\n";
    return false;
  }
  if (llvm::sys::fs::is_directory(out)) {
    llvm::errs() << "tgc: error: -o " << out << ": is a directory (give a file name)\n";
    return false;
  }
  return true;
}

int runCompile(const DriverOptions &opts) {
  if (!checkOutputDir(opts))
    return 1;
  Spec spec;
  if (!loadSpec(opts, spec))
    return 1;
  static const std::pair<const char *, tg::PipelineStage> stages[] = {
      {"mlir", tg::PipelineStage::Forward}, {"fused", tg::PipelineStage::Fused},
      {"step", tg::PipelineStage::Step},    {"planned", tg::PipelineStage::Planned}};
  if (opts.target != "cpu" && opts.target != "cuda") {
    llvm::errs() << "tgc: error: --target: unknown backend '" << opts.target
                 << "' (expected cpu or cuda)\n";
    return 2;
  }
  MLIRContext ctx;
  setupContext(ctx);
  for (auto [name, stage] : stages) {
    if (opts.emit != name)
      continue;
    OwningOpRef<ModuleOp> module;
    if (!buildModule(ctx, spec, stage, module, opts.target))
      return 1;
    return writeAtomically(opts.output, printModule(*module)) ? 0 : 1;
  }
  if (opts.emit == "emitc") {
    OwningOpRef<ModuleOp> module;
    if (!buildModule(ctx, spec, tg::PipelineStage::Planned, module, opts.target) ||
        failed(tg::lowerToEmitC(*module)))
      return 1;
    return writeAtomically(opts.output, printModule(*module)) ? 0 : 1;
  }
  if (opts.emit == "lib" && spec.training.distributed.ranks > 1 &&
      spec.training.distributed.zero >= 2) {
    // tglib.h reads and writes whole value and gradient slots of one process.
    llvm::errs() << "tgc: error: --emit=lib: the library's C ABI (runtime/tglib.h) reads whole "
                    "parameter and gradient slots, but training.distributed.zero="
                 << spec.training.distributed.zero
                 << " keeps only one rank's chunk of them; compile the library without "
                    "ZeRO-2/3 (training.distributed.zero 0 or 1)\n";
    return 1;
  }
  if (opts.emit == "cpp" || opts.emit == "exe" || opts.emit == "lib") {
    OwningOpRef<ModuleOp> module;
    if (!buildModule(ctx, spec, tg::PipelineStage::Planned, module, opts.target))
      return 1;
    std::string cpp;
    llvm::raw_string_ostream os(cpp);
    if (failed(tg::emitTrainingCpp(*module, os)))
      return 1;
    if (opts.emit == "cpp")
      return writeAtomically(opts.output, cpp) ? 0 : 1;
    return linkExecutable(cpp, opts) ? 0 : 1;
  }
  llvm::errs() << "tgc: error: --emit: unknown or unavailable output '" << opts.emit
               << "' (expected mlir, fused, step, planned, emitc, cpp, exe or lib)\n";
  return 2;
}

bool planWith(const Spec &spec, const std::vector<std::string> &overrides,
              const std::string &target, tg::PlanReport &report, bool quiet,
              std::string *why, std::vector<tg::RuntimeCall> *calls) {
  SpecError err;
  Spec s;
  if (!parseSpec(spec.json, overrides, s, err, "<spec>")) {
    if (why)
      *why = err.str();
    if (!quiet)
      llvm::errs() << "tgc: error: " << err.str() << "\n";
    return false;
  }
  MLIRContext c;
  setupContext(c);
  if (quiet || why)
    c.getDiagEngine().registerHandler([quiet, why](Diagnostic &d) {
      if (why && d.getSeverity() == DiagnosticSeverity::Error)
        *why += (why->empty() ? "" : "; ") + d.str();
      return quiet ? success() : failure(); // failure: passed on to the default printer
    });
  return planSpec(c, s, target, report, quiet, calls);
}

long long defaultContextBytes(const std::string &target) {
  return target == "cuda" ? kCudaContextBytes : 0;
}

/// tg::loadCalibrationTable, each file parsed once per process (a command asks for the same
/// table several times: the reserve, auto's memory and prediction, the command's own; the
/// shipped tables hold ~1500 points). Same results, errors included.
static bool loadCalibrationCached(const std::string &path, tg::CalibrationTable &table,
                                  std::string &error) {
  struct Entry {
    bool ok;
    tg::CalibrationTable table;
    std::string error;
  };
  static std::mutex mu;
  static std::map<std::string, Entry> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(path);
  if (it == cache.end()) {
    Entry e;
    e.ok = tg::loadCalibrationTable(path, e.table, e.error);
    it = cache.emplace(path, std::move(e)).first;
  }
  if (it->second.ok)
    table = it->second.table;
  else
    error = it->second.error;
  return it->second.ok;
}

static bool findCalibration(const std::string &option, const std::string &target,
                            tg::CalibrationTable &table, std::string &origin);

long long contextBytesOption(const std::string &target, const std::string &text,
                             const std::string &calibration) {
  if (text.empty() && target == "cuda") {
    tg::CalibrationTable table;
    std::string origin, error;
    // Quietly: a table that cannot be read is reported by the command's own load.
    bool found = false;
    if (!calibration.empty())
      found = loadCalibrationCached(calibration, table, error);
    else
      found = findCalibration("", target, table, origin);
    if (found && table.contextBytes > 0)
      return table.contextBytes;
  }
  if (text.empty())
    return defaultContextBytes(target);
  long long bytes = parseBytes(text);
  if (bytes < 0)
    llvm::errs() << "tgc: error: --context-bytes: cannot parse '" << text << "'\n";
  return bytes < 0 ? -1 : bytes;
}

/// The device's whole memory when no --memory is given: for target cuda the memory_bytes of
/// the calibration table (`calibration`, else the shipped table of the GPU nvidia-smi names,
/// else h100.json), and `from` names it ("memory_bytes of FILE"); 0 when none is known (target
/// cpu, a table without it, a table that cannot be read: the command's own load reports that).
static long long tableMemoryBytes(const std::string &target, const std::string &calibration,
                                  std::string &from) {
  if (target != "cuda")
    return 0;
  tg::CalibrationTable table;
  std::string origin, error;
  const bool found = calibration.empty() ? findCalibration("", target, table, origin)
                                         : loadCalibrationCached(calibration, table, error);
  if (!found || table.memoryBytes <= 0)
    return 0;
  from = "memory_bytes of " + (calibration.empty() ? origin : calibration);
  return table.memoryBytes;
}

/// No --memory (`memory` empty): the GPU's, tableMemoryBytes, when its table states it; the
/// command `cmd` says so on stderr ("tgc: plan: no --memory given: N bytes, the memory_bytes
/// of FILE"). `memory` stays empty otherwise.
static void memoryFromTable(const char *cmd, const std::string &target,
                            const std::string &calibration, std::string &memory) {
  std::string from;
  if (!memory.empty())
    return;
  if (long long m = tableMemoryBytes(target, calibration, from); m > 0) {
    memory = std::to_string(m);
    llvm::errs() << "tgc: " << cmd << ": no --memory given: " << m << " bytes, the " << from
                 << "\n";
  }
}

int64_t maxMicroBatch(const Spec &spec, std::vector<std::string> overrides,
                      const std::string &target, long long memory, long long contextBytes,
                      int64_t *bytes, bool progress) {
  const long long limit = memory - contextBytes;
  // The largest answer: what the doubling-then-bisection search this replaces could return.
  constexpr int64_t kCap = (1 << 17) - 1;
  std::map<int64_t, int64_t> total; // micro-batch -> planned bytes; -1: the plan is refused
  auto plan = [&](int64_t batch) {
    std::vector<std::string> o = overrides;
    o.push_back("training.batch_size=" + std::to_string(batch));
    tg::PlanReport r;
    int64_t t = planWith(spec, o, target, r, /*quiet=*/true) ? r.totalBytes() : -1;
    total[batch] = t;
    if (progress && t >= 0 && t <= limit)
      llvm::errs() << "tgc: plan: micro-batch " << batch << " fits (" << t << " bytes)\n";
    return t >= 0 && t <= limit;
  };
  *bytes = 0;
  if (!plan(1))
    return 0;
  // The planned bytes grow almost linearly with the micro-batch (activations scale with
  // it; parameters, optimizer state and most workspaces do not), so the next micro-batch
  // tried is where the line through two planned points meets the limit (regula falsi),
  // clamped inside the bracket; a step that does not halve the bracket is followed by a
  // bisection (or a doubling while no micro-batch is known not to fit). Plans: ~4 for a
  // linear model instead of ~2 log2(max). The answer is the bisection's whenever fitting is
  // monotone in the micro-batch, which both searches assume.
  int64_t lo = 1, hi = kCap + 1; // lo fits; hi does not (kCap + 1: not planned)
  bool interpolate = true;
  while (hi - lo > 1) {
    int64_t guess = -1;
    bool secant = false;
    if (interpolate) {
      // The other point: hi when it was planned, else the largest planned one below lo.
      int64_t p = -1;
      if (hi <= kCap && total.count(hi) && total[hi] >= 0)
        p = hi;
      else
        for (auto it = total.begin(); it != total.end() && it->first < lo; ++it)
          if (it->second >= 0)
            p = it->first;
      if (p > 0) {
        double slope = (double)(total[p] - total[lo]) / (double)(p - lo);
        if (slope > 0) {
          guess = lo + (int64_t)std::min(std::floor((double)(limit - total[lo]) / slope),
                                         (double)kCap);
          secant = true;
        }
      }
    }
    if (!secant)
      guess = hi > kCap ? std::min<int64_t>(2 * lo, kCap) : lo + (hi - lo) / 2;
    guess = std::clamp<int64_t>(guess, lo + 1, hi - 1);
    const int64_t width = hi - lo;
    const bool fit = plan(guess);
    (fit ? lo : hi) = guess;
    // The safeguard: while no micro-batch is known not to fit, an interpolated guess that
    // fit is followed by a doubling; after that, one that did not halve the bracket by a
    // bisection.
    interpolate = hi > kCap ? !(secant && fit) : 2 * (hi - lo) <= width;
  }
  *bytes = total[lo];
  return lo;
}

/// How a fit's reserve reads in reports: " + CUDA context reserve N bytes" (target cuda),
/// " + reserve N bytes (--context-bytes)" (another target, when not 0), else "".
static std::string reserveText(const std::string &target, long long contextBytes) {
  if (target == "cuda")
    return " + CUDA context reserve " + std::to_string(contextBytes) + " bytes";
  if (contextBytes != 0)
    return " + reserve " + std::to_string(contextBytes) + " bytes (--context-bytes)";
  return "";
}

//===------------------------------------------------------ predicted time --===//

/// Where the shipped calibration tables live: $TGC_CALIBRATION_DIR, else the source tree's
/// calibration/ directory.
static std::string calibrationDir() {
  if (const char *env = getenv("TGC_CALIBRATION_DIR"); env && *env)
    return env;
  return std::string(TGC_SOURCE_DIR) + "/calibration";
}

/// The calibration table for `target`: the file `option` when given, else the shipped one
/// (cuda: DIR/h100.json; cpu: the first DIR/cpu-*.json by name); when none exists, the
/// roofline of stated peaks (tg::defaultRooflineTable) and `origin` says so. False, with
/// "tgc: error: FILE: $.path: ..." printed, when the table cannot be read or is malformed.
/// The name of GPU 0 as nvidia-smi prints it ("NVIDIA H200"), or "" when nvidia-smi is
/// absent or fails (no GPU here: the usual case for `tgc plan`).
static std::string queryGpuName() {
  auto smi = llvm::sys::findProgramByName("nvidia-smi");
  if (!smi)
    return "";
  llvm::SmallString<128> tmp;
  if (llvm::sys::fs::createTemporaryFile("tgc-gpu", "txt", tmp))
    return "";
  llvm::StringRef argv[] = {*smi, "--query-gpu=name", "--format=csv,noheader", "-i", "0"};
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), llvm::StringRef(tmp),
                                                llvm::StringRef("")};
  int rc = llvm::sys::ExecuteAndWait(*smi, argv, std::nullopt, redirects);
  std::string name;
  if (auto buf = llvm::MemoryBuffer::getFile(tmp); rc == 0 && buf)
    name = (*buf)->getBuffer().trim().str();
  llvm::sys::fs::remove(tmp);
  return name;
}

/// queryGpuName, asked once per process (contextBytesOption and the command's own table
/// lookup both need it).
static std::string localGpuName() {
  static const std::string name = queryGpuName();
  return name;
}

static bool findCalibration(const std::string &option, const std::string &target,
                            tg::CalibrationTable &table, std::string &origin) {
  std::string error;
  if (!option.empty()) {
    if (!loadCalibrationCached(option, table, error)) {
      llvm::errs() << "tgc: error: --calibration: " << error << "\n";
      return false;
    }
    origin = option;
    if (table.target != target)
      llvm::errs() << "tgc: plan: note: --calibration " << option << " was measured for target "
                   << table.target << ", the plan is for target " << target << "\n";
    return true;
  }
  const std::string dir = calibrationDir();
  std::string path;
  if (target == "cuda") {
    // The table measured on this machine's GPU when there is one (nvidia-smi's name equals
    // a shipped table's "device"), else the H100's.
    path = dir + "/h100.json";
    const std::string gpu = localGpuName();
    std::error_code ec;
    std::vector<std::string> tables;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; !gpu.empty() && !ec && it != end;
         it.increment(ec))
      if (llvm::StringRef(it->path()).ends_with(".json") &&
          !llvm::sys::path::filename(it->path()).starts_with("cpu-"))
        tables.push_back(it->path());
    std::sort(tables.begin(), tables.end());
    for (const std::string &t : tables) {
      tg::CalibrationTable candidate;
      std::string ignored;
      if (loadCalibrationCached(t, candidate, ignored) && candidate.target == "cuda" &&
          candidate.device == gpu) {
        path = t;
        break;
      }
    }
  } else {
    std::error_code ec;
    std::vector<std::string> found;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      llvm::StringRef name = llvm::sys::path::filename(it->path());
      if (name.starts_with("cpu-") && name.ends_with(".json"))
        found.push_back(it->path());
    }
    std::sort(found.begin(), found.end());
    path = found.empty() ? dir + "/cpu-*.json" : found.front();
  }
  if (llvm::sys::fs::exists(path)) {
    if (!loadCalibrationCached(path, table, error)) {
      llvm::errs() << "tgc: error: calibration table: " << error << "\n";
      return false;
    }
    origin = path;
    return true;
  }
  table = tg::defaultRooflineTable(target);
  origin = "none found (" + path + "; `tgc calibrate --target " + target +
           "` measures one, --calibration FILE uses it): roofline of stated peaks";
  return true;
}

/// Model FLOPs of one token (PaLM's and nanoGPT's MFU convention): 6 N for the GEMM
/// parameters N (all parameters but the learned positions and, when untied, the input
/// embedding, which are looked up, not multiplied) + 12 L H hd T for attention (scores and
/// values, forward and backward, all T keys: the convention ignores the causal mask).
static double modelFlopsPerToken(const Spec &spec) {
  const ModelSpec &m = spec.model;
  double n = 0;
  for (const ParamInfo &p : modelParameters(m)) {
    if (p.name == "wpe" || (p.name == "wte" && !m.tie_embeddings))
      continue;
    n += (double)p.numel();
  }
  return 6.0 * n + 12.0 * (double)m.n_layers * (double)m.n_heads * (double)m.headDim() *
                       (double)m.context;
}

namespace {
/// The predicted step of one plan and what follows from it.
struct Prediction {
  tg::StepPrediction step;
  double tokensPerStep = 0; ///< all ranks
  double tokensPerS = 0;
  double modelFlopsPerStep = 0; ///< one rank's tokens
  double peakFlops = 0;         ///< the table's peak for the precision, FLOP/s
  std::string peakDtype;
  double mfu = 0; ///< model FLOPs per second / peak, one rank
};
} // namespace

static Prediction predictPlan(const Spec &spec, const tg::CalibrationTable &table,
                              const std::vector<tg::RuntimeCall> &calls) {
  Prediction p;
  p.step = tg::predictStep(table, calls, spec.training.grad_accum);
  const double rankTokens = (double)spec.training.batch_size * (double)spec.model.context *
                            (double)std::max<int64_t>(1, spec.training.grad_accum);
  p.tokensPerStep = rankTokens * (double)std::max<int64_t>(1, spec.training.distributed.ranks);
  p.tokensPerS = p.step.stepMs > 0 ? p.tokensPerStep / (p.step.stepMs / 1e3) : 0.0;
  p.modelFlopsPerStep = modelFlopsPerToken(spec) * rankTokens;
  const tg::Precision prec = *tg::symbolizePrecision(spec.training.precision);
  p.peakDtype = prec == tg::Precision::fp32         ? "f32"
                : prec == tg::Precision::fp16_mixed ? "f16"
                                                    : "bf16";
  p.peakFlops = tg::peakFlopsOf(table, p.peakDtype);
  p.mfu = p.step.stepMs > 0 && p.peakFlops > 0
              ? p.modelFlopsPerStep / (p.step.stepMs / 1e3) / p.peakFlops
              : 0.0;
  return p;
}

bool loadCalibration(const std::string &calibration, const std::string &target,
                     tg::CalibrationTable &table, std::string &origin) {
  return findCalibration(calibration, target, table, origin);
}

StepEstimate estimateStep(const Spec &spec, const tg::CalibrationTable &table,
                          const std::string &origin, const std::vector<tg::RuntimeCall> &calls) {
  Prediction p = predictPlan(spec, table, calls);
  StepEstimate out;
  out.stepMs = p.step.stepMs;
  out.tokensPerS = p.tokensPerS;
  out.mfu = p.mfu;
  out.calibration = origin;
  out.device = table.device;
  out.rooflineOnly = table.roofline;
  return out;
}

static std::string fmt3(double v) { return llvm::formatv("{0:f3}", v).str(); }

/// Flops as "6.21 GFLOP/s"-style text with the largest unit that keeps it >= 1.
static std::string siUnits(double v, const char *unit) {
  const char *prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000.0 && i < 5) {
    v /= 1000.0;
    ++i;
  }
  return llvm::formatv("{0:f2} {1}{2}", v, prefixes[i], unit).str();
}

/// The prediction lines of `tgc plan` (after the memory report).
static std::string formatPrediction(const Prediction &p, const tg::CalibrationTable &t,
                                    const std::string &origin) {
  std::string out;
  llvm::raw_string_ostream os(out);
  const tg::StepPrediction &s = p.step;
  os << "predicted step time: " << fmt3(s.stepMs) << " ms = grad_accum " << s.gradAccum
     << " x micro-step " << fmt3(s.microStepMs) << " ms + optimizer step "
     << fmt3(s.optimizerStepMs) << " ms (" << s.callsPerStep << " runtime calls, "
     << fmt3(s.overheadMs) << " ms of per-call overhead)\n";
  os << "predicted throughput: " << withCommas((long long)std::llround(p.tokensPerS))
     << " tokens/s (" << withCommas((long long)p.tokensPerStep) << " tokens per step), MFU "
     << llvm::formatv("{0:f1}", 100.0 * p.mfu) << "% (model "
     << siUnits(p.modelFlopsPerStep, "FLOP") << " per step = 6 N tokens + attention, peak "
     << siUnits(p.peakFlops, "FLOP/s") << " " << p.peakDtype << ")\n";
  os << "calibration: " << origin << " (" << t.device << ", target " << t.target;
  if (!t.measured.empty())
    os << ", measured " << t.measured;
  os << ")\n";
  if (s.clockMhz > 0) {
    os << "power limit: predicted SM clock " << llvm::formatv("{0:f0}", s.clockMhz)
       << " MHz (the calibration's " << llvm::formatv("{0:f0}", s.burstMhz) << " MHz), "
       << llvm::formatv("{0:f0}", s.powerW) << " W of the " << llvm::formatv("{0:f0}", t.power.limitW)
       << " W limit; " << fmt3(s.unthrottledStepMs)
       << " ms at the calibration's clock (docs/cost-model.md \"The power limit\")\n";
    const double j = s.energyFlopsJ + s.energyBytesJ + s.energyStaticJ;
    os << "predicted energy: " << llvm::formatv("{0:f2}", j) << " J per step = FLOPs "
       << llvm::formatv("{0:f2}", s.energyFlopsJ) << " J (" << siUnits(s.stepFlops, "FLOP")
       << " at " << llvm::formatv("{0:f0}", s.clockMhz) << " MHz) + memory traffic "
       << llvm::formatv("{0:f2}", s.energyBytesJ) << " J (" << siUnits(s.stepBytes, "B")
       << ") + static " << llvm::formatv("{0:f2}", s.energyStaticJ)
       << " J (the trainer reports the measured J per step)\n";
  }
  if (!s.uncalibrated.empty()) {
    os << "uncalibrated (roofline of the peaks"
       << (t.linkBytesPerS > 0 ? "; collectives: bytes / link bandwidth" : "") << "): "
       << fmt3(s.uncalibratedMs) << " ms of " << fmt3(s.stepMs) << " ms in "
       << s.uncalibrated.size() << " kernel" << (s.uncalibrated.size() > 1 ? "s" : "") << ":";
    size_t shown = 0;
    for (const tg::KernelTime &k : s.byKernel) {
      if (k.calibrated)
        continue;
      if (shown++ == 6) {
        os << " ...";
        break;
      }
      os << " " << k.kernel << "/" << k.dtype << " " << fmt3(k.ms) << " ms";
    }
    os << "\n";
  }
  os << "largest predicted:";
  for (size_t i = 0; i < s.byKernel.size() && i < 4; ++i) {
    const tg::KernelTime &k = s.byKernel[i];
    os << (i ? ", " : " ") << k.kernel << "/" << k.dtype << " " << fmt3(k.ms) << " ms ("
       << k.calls << " calls)";
  }
  os << "\n";
  return out;
}

static llvm::json::Object predictionJson(const Prediction &p, const tg::CalibrationTable &t,
                                         const std::string &origin) {
  const tg::StepPrediction &s = p.step;
  llvm::json::Array kernels;
  for (const tg::KernelTime &k : s.byKernel)
    kernels.push_back(llvm::json::Object{{"kernel", k.kernel},
                                         {"dtype", k.dtype},
                                         {"calls", k.calls},
                                         {"ms", k.ms},
                                         {"calibrated", k.calibrated}});
  llvm::json::Array uncal;
  for (const std::string &u : s.uncalibrated)
    uncal.push_back(u);
  return llvm::json::Object{
      {"step_ms", s.stepMs},
      {"micro_step_ms", s.microStepMs},
      {"optimizer_step_ms", s.optimizerStepMs},
      {"eval_step_ms", s.evalStepMs},
      {"overhead_ms", s.overheadMs},
      {"grad_accum", s.gradAccum},
      {"calls_per_step", s.callsPerStep},
      {"tokens_per_step", p.tokensPerStep},
      {"tokens_per_s", p.tokensPerS},
      {"model_flops_per_step", p.modelFlopsPerStep},
      {"peak_flops_per_s", p.peakFlops},
      {"peak_dtype", p.peakDtype},
      {"mfu", p.mfu},
      {"calibration", origin},
      {"calibration_device", t.device},
      {"calibration_target", t.target},
      {"roofline_only", t.roofline},
      {"uncalibrated_ms", s.uncalibratedMs},
      {"uncalibrated", std::move(uncal)},
      {"clock_mhz", s.clockMhz},
      {"burst_mhz", s.burstMhz},
      {"power_w", s.powerW},
      {"unthrottled_step_ms", s.unthrottledStepMs},
      {"energy_j", llvm::json::Object{{"flops", s.energyFlopsJ},
                                      {"bytes", s.energyBytesJ},
                                      {"static", s.energyStaticJ}}},
      {"step_flops", s.stepFlops},
      {"step_bytes", s.stepBytes},
      {"by_kernel", std::move(kernels)}};
}

/// Runs fn(0) .. fn(n - 1) on up to std::thread::hardware_concurrency() threads (each index
/// once; returns when all are done). fn must be safe to run concurrently for distinct
/// indices: planWith is (each plan builds its own MLIRContext).
static void parallelFor(size_t n, const std::function<void(size_t)> &fn) {
  size_t threads = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < n;)
      fn(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
}

/// Replaces training.checkpointing by `policy` (the spec's JSON re-parsed with it). False,
/// printed, when the spec does not take it (it always should: a policy tgc planned).
static bool setCheckpointing(Spec &spec, const std::string &policy) {
  SpecError err;
  Spec resolved;
  if (!parseSpec(spec.json, {"training.checkpointing=" + policy}, resolved, err, "<spec>")) {
    llvm::errs() << "tgc: error: " << err.str() << "\n";
    return false;
  }
  spec = std::move(resolved);
  return true;
}

/// training.checkpointing "auto:<memory>" (the device's whole memory, bytes) or "auto" (the
/// default: the memory of --memory, else the calibration table's memory_bytes): plans every
/// policy (none, gelu, selective, layer-attn, layer) and the budget that gives the arena
/// what a budget plan's persistent region, workspace and NCCL reserve leave of memory -
/// context reserve (--context-bytes, default for the target), predicts each plan's step
/// time with the target's calibration table (--calibration; docs/cost-model.md), and
/// replaces the policy with the fastest whose plan fits (ties: the smaller plan), printing
/// the choice on stderr (for "auto", only a choice other than none). "auto" is none when no
/// memory is known (target cpu; a table without memory_bytes and no --memory) and for
/// `tgc plan --max-batch / --tradeoff / --ranks`, which search the fit themselves. Returns
/// true when the spec has no auto policy. Errors (false, printed): no policy fits (naming
/// the smallest plan), a reserve not below the memory, a calibration table that cannot be
/// read, an unreadable --memory.
static bool resolveAutoCheckpointing(const DriverOptions &opts, Spec &spec) {
  int64_t memory = 0;
  const std::string target = opts.target; // "" (tgc summary, advise): auto -> none
  std::string memoryFrom;
  const bool bare = spec.training.checkpointing == "auto";
  if (bare) {
    if (target != "cuda" || opts.maxBatch || opts.tradeoff || opts.ranksGiven)
      return setCheckpointing(spec, "none");
  } else if (!parseCheckpointAuto(spec.training.checkpointing, memory)) {
    return true;
  }
  // The table the candidates are predicted with, loaded once (an unreadable --calibration is
  // an error, not "no memory known"); bare auto without --memory fits its memory_bytes.
  tg::CalibrationTable table;
  std::string origin;
  if (!findCalibration(opts.calibration, target, table, origin))
    return false;
  if (bare && !opts.memory.empty()) {
    memory = parseBytes(opts.memory);
    if (memory <= 0) {
      llvm::errs() << "tgc: error: --memory: cannot parse '" << opts.memory << "'\n";
      return false;
    }
    memoryFrom = "--memory " + opts.memory;
  } else if (bare) {
    if (table.memoryBytes <= 0)
      return setCheckpointing(spec, "none"); // no device memory known
    memory = table.memoryBytes;
    memoryFrom = "memory_bytes of " + origin;
  }
  const std::string policy = spec.training.checkpointing;
  const long long context = contextBytesOption(target, opts.contextBytes, opts.calibration);
  if (context < 0)
    return false;
  if (context >= memory) {
    llvm::errs() << "tgc: error: training.checkpointing: " << policy << ": the reserve of "
                 << context << " bytes outside the plan (--context-bytes) is not below the "
                 << memory << " bytes of memory" << (bare ? " (" + memoryFrom + ")" : "")
                 << "\n";
    return false;
  }
  struct Candidate {
    std::string policy;
    bool ok = false;
    tg::PlanReport r;
    double ms = 0;
  };
  std::vector<Candidate> cands;
  for (tg::Checkpointing c :
       {tg::Checkpointing::none, tg::Checkpointing::gelu, tg::Checkpointing::selective,
        tg::Checkpointing::layer_attn, tg::Checkpointing::layer})
    cands.emplace_back().policy = tg::stringifyCheckpointing(c).str();
  auto plan = [&](Candidate &c) {
    std::vector<tg::RuntimeCall> calls;
    c.ok = planWith(spec, {"training.checkpointing=" + c.policy}, target, c.r, /*quiet=*/true,
                    nullptr, &calls);
    if (c.ok)
      c.ms = predictPlan(spec, table, calls).step.stepMs;
  };
  // What the messages call the policy: auto's memory and where it came from.
  const std::string named =
      bare ? "auto (" + std::to_string(memory) + " bytes of memory: " + memoryFrom + ")" : policy;
  if (!bare)
    llvm::errs() << "tgc: checkpointing " << policy << ": planning " << cands.size() + 1
                 << " policies...\n";
  parallelFor(cands.size(), [&](size_t i) { plan(cands[i]); });
  const long long limit = memory - context;
  if (cands[0].ok && cands[0].r.totalBytes() > limit) {
    // What a budget leaves the arena: memory - context - the budget plan's other regions.
    // Those are read from a budget plan at none's arena (it fits: a mix of none), not from
    // none's: under a budget the gradient slots may live elsewhere (training.gradients).
    Candidate probe;
    probe.policy = "budget:" + std::to_string(cands[0].r.arenaBytes);
    plan(probe);
    const tg::PlanReport &b = probe.r;
    const long long arena =
        limit - (b.totalBytes() - b.arenaBytes); // persistent + workspace + NCCL reserve
    if (probe.ok && arena > 0) {
      cands.emplace_back().policy = "budget:" + std::to_string(arena);
      plan(cands.back());
    }
  }
  const Candidate *best = nullptr, *smallest = nullptr;
  for (const Candidate &c : cands) {
    if (!c.ok)
      continue;
    if (!smallest || c.r.totalBytes() < smallest->r.totalBytes())
      smallest = &c;
    if (c.r.totalBytes() > limit)
      continue;
    if (!best || c.ms < best->ms ||
        (c.ms == best->ms && c.r.totalBytes() < best->r.totalBytes()))
      best = &c;
  }
  auto size = [](long long b) {
    return b >= (1LL << 30) ? llvm::formatv("{0:f2} GiB", (double)b / (1LL << 30)).str()
                            : llvm::formatv("{0:f1} MiB", (double)b / (1LL << 20)).str();
  };
  std::string others;
  for (const Candidate &c : cands)
    others += "; " + c.policy + " " +
              (c.ok ? size(c.r.totalBytes()) +
                          (c.r.totalBytes() > limit ? " (does not fit)"
                                                    : ", " + fmt3(c.ms) + " ms")
                    : std::string("refused"));
  if (!best) {
    llvm::errs() << "tgc: error: training.checkpointing: " << named
                 << ": no checkpointing policy fits " << memory << " bytes ("
                 << context << " of them reserved outside the plan)";
    if (smallest)
      llvm::errs() << ": the smallest plan is " << smallest->policy << "'s, "
                   << smallest->r.totalBytes() << " bytes";
    llvm::errs() << " (" << others.substr(2) << ")\n";
    return false;
  }
  if (!bare || best->policy != "none")
    llvm::errs() << "tgc: checkpointing " << named << " -> " << best->policy << " (plan "
                 << best->r.totalBytes() << " bytes + reserve " << context << " <= " << memory
                 << "; predicted " << fmt3(best->ms) << " ms a step, calibration " << origin
                 << "; " << others.substr(2) << ")\n";
  return setCheckpointing(spec, best->policy);
}

/// `tgc plan --tradeoff`: none / gelu / selective / layer and a sweep of budgets between the
/// smallest (layer) and the largest (none) arena, each planned for real: arena, total,
/// per-phase peaks, extra FLOPs, and the largest micro-batch that fits --memory.
/// `tgc plan --ranks N`: one rank's plan for each implemented ZeRO stage at N data-parallel
/// ranks (each rank runs the spec's micro-batch): parameters, gradients, AdamW state, working
/// copies, arena, total, and the largest micro-batch per rank that fits `memory`. The plan is
/// the same on every rank (ZeRO-1: the largest rank's share of the moments; ZeRO-2/3: one
/// rank's chunks of the sharded tensors).
static int runRanks(const Spec &spec, const std::string &target, long long memory,
                    long long contextBytes, int64_t ranks) {
  if (ranks < 1 || ranks > 64) {
    llvm::errs() << "tgc: error: --ranks: " << ranks << " is outside [1, 64]\n";
    return 2;
  }
  auto gib = [](int64_t b) { return llvm::formatv("{0:f3}", (double)b / (1LL << 30)).str(); };
  llvm::outs() << "per rank, " << ranks << " data-parallel rank" << (ranks > 1 ? "s" : "")
               << " (micro-batch " << spec.training.batch_size << " per rank, global batch "
               << ranks * spec.training.batch_size << " x grad_accum " << spec.training.grad_accum
               << "), precision " << spec.training.precision << ", target " << target
               << "; GiB; max micro-batch per rank for " << memory << " bytes (plan"
               << reserveText(target, contextBytes) << ")\n";
  llvm::outs() << llvm::left_justify("stage", 30) << llvm::right_justify("params", 9)
               << llvm::right_justify("grads", 9) << llvm::right_justify("AdamW", 9)
               << llvm::right_justify("copies", 9) << llvm::right_justify("arena", 9)
               << llvm::right_justify("total", 9) << llvm::right_justify("max batch", 11) << "\n";
  for (int zero : {0, 1, 2, 3}) {
    std::vector<std::string> sets = {"training.distributed.ranks=" + std::to_string(ranks),
                                      "training.distributed.zero=" + std::to_string(zero)};
    const char *names[] = {"ZeRO-0 (replicated)", "ZeRO-1 (AdamW state sharded)",
                           "ZeRO-2 (+ gradients)", "ZeRO-3 (+ parameters)"};
    const char *name = names[zero];
    llvm::errs() << "tgc: plan: " << name << "...\n";
    tg::PlanReport r;
    if (!planWith(spec, sets, target, r, true)) {
      llvm::outs() << llvm::left_justify(name, 30) << "  refused (see tgc plan --set ...)\n";
      continue;
    }
    int64_t bytes = 0;
    int64_t maxB = maxMicroBatch(spec, sets, target, memory, contextBytes, &bytes, false);
    llvm::outs() << llvm::left_justify(name, 30) << llvm::right_justify(gib(r.paramBytes), 9)
                 << llvm::right_justify(gib(r.gradBytes), 9)
                 << llvm::right_justify(gib(r.optimizerStateBytes), 9)
                 << llvm::right_justify(gib(r.workBytes), 9)
                 << llvm::right_justify(gib(r.arenaBytes), 9)
                 << llvm::right_justify(gib(r.totalBytes()), 9)
                 << llvm::right_justify(std::to_string(maxB), 11) << "\n";
  }
  llvm::outs() << "(ZeRO-3's arena holds the gathered parameters of the layer running and of "
                  "the next; docs/distributed.md)\n";
  if (int64_t comm = tg::commBytesFor(target, ranks))
    llvm::outs() << "(total includes " << comm << " bytes (" << gib(comm)
                 << " GiB) per rank for NCCL's own buffers, reserved in the plan: "
                    "docs/distributed.md, \"NCCL's memory\")\n";
  if (spec.training.optimizer.offload == "cpu")
    llvm::outs() << "(training.optimizer.offload=cpu: the AdamW column is pinned host memory, "
                    "not in the total)\n";
  return 0;
}

static int runTradeoff(const DriverOptions &opts, const Spec &spec, const std::string &target,
                       long long memory, long long contextBytes,
                       const tg::CalibrationTable &table, const std::string &origin) {
  struct Row {
    std::string policy;
    bool ok = false;
    tg::PlanReport r;
    int64_t maxBatch = 0, maxBatchBytes = 0;
    Prediction pred; ///< at the spec's micro-batch
  };
  // Each row plans its policy and predicts it; then every row searches its largest
  // micro-batch. Rows are independent (every plan has its own MLIRContext), so they run on
  // all cores: first the plans (the budget rows need none's and layer's arenas), then all
  // the searches together, the budget rows' first (each of their plans searches a mix), so
  // that the cores stay busy until the end.
  auto plan = [&](Row &row) {
    std::vector<tg::RuntimeCall> calls;
    row.ok = planWith(spec, {"training.checkpointing=" + row.policy}, target, row.r, true,
                      nullptr, &calls);
    if (row.ok)
      row.pred = predictPlan(spec, table, calls);
  };
  auto planAll = [&](std::vector<Row> &batch) {
    for (const Row &row : batch)
      llvm::errs() << "tgc: plan: " << row.policy << "...\n";
    parallelFor(batch.size(), [&](size_t i) { plan(batch[i]); });
  };
  auto searchAll = [&](std::vector<Row> &all) {
    std::vector<Row *> order;
    for (Row &row : all)
      if (row.ok && row.policy.rfind("budget", 0) == 0)
        order.push_back(&row);
    for (Row &row : all)
      if (row.ok && row.policy.rfind("budget", 0) != 0)
        order.push_back(&row);
    parallelFor(order.size(), [&](size_t i) {
      Row &row = *order[i];
      row.maxBatch = maxMicroBatch(spec, {"training.checkpointing=" + row.policy}, target,
                                   memory, contextBytes, &row.maxBatchBytes, false);
    });
  };
  std::vector<Row> rows;
  // Every policy but budget (searched below), from the least recomputation to the most
  // ("layer" last: the smallest arena).
  for (tg::Checkpointing c :
       {tg::Checkpointing::none, tg::Checkpointing::gelu, tg::Checkpointing::selective,
        tg::Checkpointing::layer_attn, tg::Checkpointing::layer})
    rows.emplace_back().policy = tg::stringifyCheckpointing(c).str();
  planAll(rows);
  const Row &none = rows[0], &layer = rows[4];
  if (none.ok && layer.ok) {
    int64_t hi = none.r.arenaBytes, lo = layer.r.arenaBytes;
    std::vector<Row> budgets;
    for (double f : {0.8, 0.6, 0.4, 0.2}) {
      int64_t budget = lo + (int64_t)((double)(hi - lo) * f);
      // MiB labels, or KiB below 64 MiB (small models: distinct budgets stay distinct).
      budgets.emplace_back().policy =
          budget >= (64LL << 20) ? "budget:" + std::to_string(budget >> 20) + "MiB"
                                 : "budget:" + std::to_string(budget >> 10) + "KiB";
    }
    planAll(budgets);
    for (Row &row : budgets)
      rows.push_back(std::move(row));
  }
  searchAll(rows);
  llvm::outs() << "trade-off (micro-batch " << spec.training.batch_size << ", precision "
               << spec.training.precision << ", target " << target << ", max micro-batch for "
               << memory << " bytes: plan" << reserveText(target, contextBytes) << ")\n";
  llvm::outs() << llvm::left_justify("policy", 22) << llvm::right_justify("arena GiB", 11)
               << llvm::right_justify("total GiB", 11) << llvm::right_justify("fwd peak", 10)
               << llvm::right_justify("bwd peak", 10) << llvm::right_justify("extra FLOPs", 13)
               << llvm::right_justify("max batch", 11) << llvm::right_justify("pred ms", 11)
               << "\n";
  if (opts.sortBy == "time")
    std::stable_sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) {
      if (a.ok != b.ok)
        return a.ok;
      return a.ok && a.pred.step.stepMs < b.pred.step.stepMs;
    });
  auto gib = [](int64_t b) { return llvm::formatv("{0:f2}", (double)b / (1LL << 30)).str(); };
  llvm::json::Array json;
  for (const Row &row : rows) {
    llvm::outs() << llvm::left_justify(row.policy, 22);
    if (!row.ok) {
      llvm::outs() << "  refused (no checkpointing fits this budget)\n";
      json.push_back(llvm::json::Object{{"policy", row.policy}, {"ok", false}});
      continue;
    }
    double pct = row.r.stepFlops > 0 ? 100.0 * (double)row.r.extraFlops / (double)row.r.stepFlops : 0.0;
    llvm::outs() << llvm::right_justify(gib(row.r.arenaBytes), 11)
                 << llvm::right_justify(gib(row.r.totalBytes()), 11)
                 << llvm::right_justify(gib(row.r.peakForward), 10)
                 << llvm::right_justify(gib(row.r.peakBackward), 10)
                 << llvm::right_justify(llvm::formatv("{0:f1}%", pct).str(), 13)
                 << llvm::right_justify(std::to_string(row.maxBatch), 11)
                 << llvm::right_justify(fmt3(row.pred.step.stepMs), 11) << "\n";
    json.push_back(llvm::json::Object{{"policy", row.policy},
                                      {"ok", true},
                                      {"arena_bytes", row.r.arenaBytes},
                                      {"total_bytes", row.r.totalBytes()},
                                      {"peak_forward_bytes", row.r.peakForward},
                                      {"peak_backward_bytes", row.r.peakBackward},
                                      {"extra_flops", row.r.extraFlops},
                                      {"step_flops", row.r.stepFlops},
                                      {"chosen", row.r.rematPolicy},
                                      {"max_micro_batch", row.maxBatch},
                                      {"max_micro_batch_bytes", row.maxBatchBytes},
                                      {"predicted_ms", row.pred.step.stepMs},
                                      {"predicted_tokens_per_s", row.pred.tokensPerS},
                                      {"predicted_mfu", row.pred.mfu}});
  }
  llvm::outs() << "(budget rows: the arena bound given to training.checkpointing; extra FLOPs "
                  "are of one micro-step; max batch keeps the row's policy)\n";
  llvm::outs() << "(pred ms: predicted time of one optimizer step at micro-batch "
               << spec.training.batch_size << (opts.sortBy == "time" ? ", rows sorted by it" : "")
               << "; calibration: " << origin << ")\n";
  if (!opts.planJson.empty()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                     {"memory_bytes", memory},
                                     {"context_bytes", contextBytes},
                                     {"calibration", origin},
                                     {"sort", opts.sortBy.empty() ? "policy" : opts.sortBy},
                                     {"rows", std::move(json)}}))
       << "\n";
    if (!writeAtomically(opts.planJson, text))
      return 1;
  }
  return 0;
}

int runPlan(const DriverOptions &given) {
  DriverOptions opts = given;
  const bool fits = opts.maxBatch || opts.tradeoff || opts.ranksGiven;
  if (fits)
    memoryFromTable("plan", opts.target.empty() ? "cuda" : opts.target, opts.calibration,
                    opts.memory);
  if (opts.maxBatch && opts.memory.empty()) {
    llvm::errs() << "tgc: error: --max-batch needs --memory BYTES, the device memory the plan "
                    "must fit (e.g. --memory 80GiB, 24GB, 1073741824), or a calibration table "
                    "with memory_bytes (--calibration)\n";
    return 2;
  }
  if (opts.ranksGiven && (opts.ranks < 1 || opts.ranks > 64)) {
    llvm::errs() << "tgc: error: --ranks: " << opts.ranks << " is outside [1, 64]\n";
    return 2;
  }
  Spec spec;
  if (!loadSpec(opts, spec))
    return 1;
  const std::string memoryText = opts.memory.empty() ? "80GiB" : opts.memory;
  long long memory = parseBytes(memoryText);
  if (memory <= 0) {
    llvm::errs() << "tgc: error: --memory: cannot parse '" << memoryText << "'\n";
    return 2;
  }
  std::string target = opts.target.empty() ? "cuda" : opts.target;
  const long long contextBytes = contextBytesOption(target, opts.contextBytes, opts.calibration);
  if (contextBytes < 0)
    return 2;
  // --memory is the device's whole memory: a plan fits when plan + reserve <= memory.
  const bool fitting = opts.maxBatch || opts.tradeoff || opts.ranksGiven;
  if (fitting && contextBytes >= memory) {
    const std::string origin =
        opts.contextBytes.empty() ? " (the default for target " + target + ")" : "";
    llvm::errs() << "tgc: error: --context-bytes: the reserve of " << contextBytes
                 << " bytes outside the plan" << origin << " is not below --memory "
                 << memoryText << " (" << memory
                 << " bytes): nothing is left for the plan (--memory is the device's whole "
                    "memory)\n";
    return 2;
  }
  if (opts.memory.empty() && (opts.tradeoff || opts.ranksGiven))
    llvm::errs() << "tgc: plan: no --memory given: the max batch column assumes 80GiB\n";
  if (!opts.sortBy.empty() && opts.sortBy != "time") {
    llvm::errs() << "tgc: error: --sort: unknown key '" << opts.sortBy
                 << "' (expected: time)\n";
    return 2;
  }
  if (!opts.sortBy.empty() && !opts.tradeoff) {
    llvm::errs() << "tgc: error: --sort orders the rows of --tradeoff; give --tradeoff too\n";
    return 2;
  }
  tg::CalibrationTable table;
  std::string origin;
  if (!findCalibration(opts.calibration, target, table, origin))
    return 1;
  if (opts.tradeoff)
    return runTradeoff(opts, spec, target, memory, contextBytes, table, origin);
  if (opts.ranksGiven)
    return runRanks(spec, target, memory, contextBytes, opts.ranks);
  MLIRContext ctx;
  setupContext(ctx);
  tg::PlanReport report;
  std::vector<tg::RuntimeCall> calls;
  if (!planSpec(ctx, spec, target, report, /*quiet=*/false, &calls))
    return 1;
  const Prediction prediction = predictPlan(spec, table, calls);
  llvm::outs() << "spec '" << spec.name << "', micro-batch " << spec.training.batch_size
               << ", context " << spec.model.context << ", precision "
               << spec.training.precision << ", attention " << spec.training.attention.kernel
               << (spec.training.attention.window ? " (window " + std::to_string(spec.training.attention.window) + ")" : "")
               << ", checkpointing " << spec.training.checkpointing << ", target " << target << "\n";
  llvm::outs() << tg::formatPlanReport(report, 10);
  if (target == "cuda" || contextBytes != 0) {
    const long long whole = report.totalBytes() + contextBytes;
    llvm::outs() << "whole process on the device: plan " << report.totalBytes()
                 << reserveText(target, contextBytes) << " = " << whole << " bytes ("
                 << llvm::formatv("{0:f2}", (double)whole / (1LL << 30)).str()
                 << " GiB; the reserve: --context-bytes)\n";
  }
  llvm::outs() << formatPrediction(prediction, table, origin);
  if (!opts.callsFile.empty()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    for (const tg::RuntimeCall &c : calls) {
      bool cal = true;
      double ms = tg::predictCallMs(table, c, &cal);
      llvm::json::Array ints, nullArgs;
      for (int64_t i : c.ints)
        ints.push_back(i);
      for (int i : c.nullArgs)
        nullArgs.push_back(i);
      os << llvm::json::Value(llvm::json::Object{
                {"function", c.function}, {"kernel", c.kernel}, {"location", c.location},
                {"phase", c.phase}, {"op", c.op}, {"dtype", tg::dtypeKey(c.dtype)},
                {"variant", tg::gemmVariant(c)}, {"flops", tg::effectiveFlops(c)},
                {"bytes", c.bytesRead + c.bytesWritten}, {"ints", std::move(ints)},
                {"null_args", std::move(nullArgs)},
                {"predicted_ms", ms}, {"calibrated", cal}})
         << "\n";
    }
    if (!writeAtomically(opts.callsFile, text))
      return 1;
  }
  if (!opts.planJson.empty()) {
    // The plan report with the prediction added under "prediction".
    llvm::Expected<llvm::json::Value> doc = llvm::json::parse(tg::planReportJson(report));
    if (!doc || !doc->getAsObject()) {
      llvm::errs() << "tgc: error: internal: the plan report is not a JSON object\n";
      if (!doc)
        llvm::consumeError(doc.takeError());
      return 1;
    }
    doc->getAsObject()->insert({"prediction", predictionJson(prediction, table, origin)});
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv("{0:2}", *doc) << "\n";
    if (!writeAtomically(opts.planJson, text))
      return 1;
  }
  if (!opts.planSvg.empty()) {
    PlanSvgOptions so;
    so.title = "tgc plan: '" + spec.name + "', micro-batch " +
               std::to_string(spec.training.batch_size) + ", context " +
               std::to_string(spec.model.context) + ", precision " + spec.training.precision +
               ", checkpointing " + spec.training.checkpointing + ", target " + target;
    if (!writeAtomically(opts.planSvg, planSvg(report, so)))
      return 1;
  }
  if (opts.maxBatch) {
    int64_t best = 0;
    int64_t lo = maxMicroBatch(spec, {}, target, memory, contextBytes, &best,
                               /*progress=*/true);
    if (lo == 0) {
      // Say what micro-batch 1 would need (or why it cannot be planned at all).
      tg::PlanReport one;
      std::string why;
      if (planWith(spec, {"training.batch_size=1"}, target, one, /*quiet=*/true, &why))
        llvm::errs() << "tgc: error: --max-batch: not even micro-batch 1 fits in " << memory
                     << " bytes (--memory " << opts.memory << "): its plan needs "
                     << one.totalBytes() << " bytes" << reserveText(target, contextBytes)
                     << "\n";
      else
        llvm::errs() << "tgc: error: --max-batch: micro-batch 1 cannot be planned: "
                     << (why.empty() ? "(no diagnostic)" : why) << "\n";
      return 1;
    }
    llvm::outs() << "max micro-batch: " << lo << " (plan " << best << " bytes"
                 << reserveText(target, contextBytes) << " of " << memory << " available)\n";
  }
  return 0;
}

//===------------------------------------------------------------- advise --===//

namespace {
/// One (precision, checkpointing) pair of `tgc advise`.
struct AdviseFamily {
  std::string precision, policy;
  int64_t maxBatch = 0, maxBatchBytes = 0;
  bool planned1 = false;  ///< micro-batch 1 could be planned (when maxBatch is 0)
  int64_t bytes1 = 0;     ///< its plan's total bytes
  std::string why;        ///< why micro-batch 1 cannot be planned
};
/// One planned and predicted configuration.
struct AdviseCandidate {
  size_t family = 0;
  int64_t batch = 0, gradAccum = 1;
  long long tokensPerStep = 0;
  bool exact = true; ///< tokens per step == --tokens-per-step (always true without it)
  bool fits = false;
  int64_t planBytes = 0;
  Prediction pred;
  Spec spec;
};

std::vector<std::string> splitList(const std::string &text) {
  std::vector<std::string> out;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(text).split(parts, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef p : parts)
    if (!p.trim().empty())
      out.push_back(p.trim().str());
  return out;
}
} // namespace

int runAdvise(const AdviseOptions &given) {
  AdviseOptions opts = given;
  const std::string &target = opts.target;
  if (target != "cpu" && target != "cuda") {
    llvm::errs() << "tgc: error: advise: --target: unknown backend '" << target
                 << "' (expected cpu or cuda)\n";
    return 2;
  }
  memoryFromTable("advise", target, opts.calibration, opts.memory);
  if (opts.memory.empty()) {
    llvm::errs() << "tgc: error: advise: --memory BYTES is required (the device's whole "
                    "memory, e.g. 80GiB, 24GB, 1073741824) unless the calibration table "
                    "states it (memory_bytes; --calibration)\n";
    return 2;
  }
  const long long memory = parseBytes(opts.memory);
  if (memory <= 0) {
    llvm::errs() << "tgc: error: advise: --memory: cannot parse '" << opts.memory
                 << "' (expected e.g. 80GiB, 24GB, 1073741824)\n";
    return 2;
  }
  const long long contextBytes = contextBytesOption(target, opts.contextBytes, opts.calibration);
  if (contextBytes < 0)
    return 2;
  if (contextBytes >= memory) {
    llvm::errs() << "tgc: error: advise: --context-bytes: the reserve of " << contextBytes
                 << " bytes outside the plan is not below --memory " << opts.memory << " ("
                 << memory << " bytes): nothing is left for the plan\n";
    return 2;
  }
  if (opts.tokensGiven && opts.tokensPerStep <= 0) {
    llvm::errs() << "tgc: error: advise: --tokens-per-step: " << opts.tokensPerStep
                 << " is not a positive number of tokens\n";
    return 2;
  }
  if (opts.top < 1) {
    llvm::errs() << "tgc: error: advise: --top: " << opts.top << " is not >= 1\n";
    return 2;
  }
  DriverOptions dopts;
  dopts.specFile = opts.specFile;
  dopts.overrides = opts.overrides;
  Spec spec;
  if (!loadSpec(dopts, spec))
    return 1;
  const std::vector<std::string> precisions = splitList(opts.precisions);
  const std::vector<std::string> policies = splitList(opts.policies);
  if (precisions.empty() || policies.empty()) {
    llvm::errs() << "tgc: error: advise: " << (precisions.empty() ? "--precisions" : "--policies")
                 << ": an empty list\n";
    return 2;
  }
  // Each value must be one the spec accepts (the spec's validator names what is wrong).
  for (const std::string &p : precisions)
    for (const std::string &c : policies) {
      Spec s;
      SpecError err;
      if (!parseSpec(spec.json, {"training.precision=" + p, "training.checkpointing=" + c}, s,
                     err, "<spec>")) {
        llvm::errs() << "tgc: error: advise: --precisions " << p << " / --policies " << c
                     << ": " << err.str() << "\n";
        return 2;
      }
    }
  // The outputs' directories are checked before the search (minutes on a large spec).
  std::string out = opts.output;
  if (out.empty()) {
    llvm::StringRef stem =
        opts.specFile.empty() ? "default" : llvm::sys::path::stem(opts.specFile);
    out = (stem + "-advised.json").str();
  }
  for (const std::string &file : {out, opts.json}) {
    if (file.empty() || file == "-")
      continue;
    DriverOptions o;
    o.emit = "exe"; // checkOutputDir: a file path whose directory exists and is writable
    o.output = file;
    if (!checkOutputDir(o))
      return 2;
  }
  tg::CalibrationTable table;
  std::string origin;
  if (!findCalibration(opts.calibration, target, table, origin))
    return 2;
  const int64_t context = spec.model.context;
  const long long T = opts.tokensGiven ? opts.tokensPerStep : 0;
  auto gib = [](int64_t b) { return llvm::formatv("{0:f2}", (double)b / (1LL << 30)).str(); };

  // The grad_accum a micro-batch gets: the spec's, or with --tokens-per-step the fewest
  // micro-batches that reach T tokens.
  auto gradAccumFor = [&](int64_t batch) -> int64_t {
    if (!T)
      return spec.training.grad_accum;
    const long long perMicro = (long long)batch * context;
    return std::max<long long>(1, (T + perMicro - 1) / perMicro);
  };
  // Micro-batches searched with --tokens-per-step: those with batch x context <= T (a larger
  // one would exceed the asked global batch), or 1 when even that exceeds it.
  const int64_t tokenCap = T ? std::max<long long>(1, T / context) : (int64_t)1 << 62;

  std::vector<AdviseFamily> families;
  std::vector<AdviseCandidate> cands;
  for (const std::string &p : precisions)
    for (const std::string &c : policies) {
      AdviseFamily f;
      f.precision = p;
      f.policy = c;
      std::vector<std::string> sets = {"training.precision=" + p, "training.checkpointing=" + c};
      // With --tokens-per-step the candidates' grad_accum varies; the plan is the same for
      // every grad_accum >= 2 (the accumulated gradients persist) and smaller at 1, so the
      // largest micro-batch is searched at 2 whenever some candidate accumulates.
      if (T)
        sets.push_back(std::string("training.grad_accum=") +
                       (gradAccumFor(1) > 1 ? "2" : "1"));
      llvm::errs() << "tgc: advise: " << p << " / " << c << ": largest micro-batch for "
                   << memory << " bytes...\n";
      f.maxBatch = maxMicroBatch(spec, sets, target, memory, contextBytes, &f.maxBatchBytes,
                                 /*progress=*/false);
      if (f.maxBatch == 0) {
        tg::PlanReport one;
        std::vector<std::string> o = sets;
        o.push_back("training.batch_size=1");
        f.planned1 = planWith(spec, o, target, one, /*quiet=*/true, &f.why);
        f.bytes1 = f.planned1 ? one.totalBytes() : 0;
        families.push_back(std::move(f));
        continue;
      }
      const size_t fi = families.size();
      families.push_back(f);
      std::vector<int64_t> batches;
      const int64_t top = std::min<int64_t>(f.maxBatch, tokenCap);
      for (int64_t b = 1; b <= top; b *= 2)
        batches.push_back(b);
      if (batches.back() != top)
        batches.push_back(top);
      for (int64_t b : batches) {
        AdviseCandidate cand;
        cand.family = fi;
        cand.batch = b;
        cand.gradAccum = gradAccumFor(b);
        cand.tokensPerStep = (long long)b * cand.gradAccum * context;
        cand.exact = !T || cand.tokensPerStep == T;
        std::vector<std::string> o = sets;
        o.push_back("training.batch_size=" + std::to_string(b));
        o.push_back("training.grad_accum=" + std::to_string(cand.gradAccum));
        llvm::errs() << "tgc: advise: planning " << p << " / " << c << " micro-batch " << b
                     << " grad_accum " << cand.gradAccum << "\n";
        SpecError err;
        if (!parseSpec(spec.json, o, cand.spec, err, "<spec>"))
          continue; // e.g. a grad_accum the spec refuses: not a candidate
        tg::PlanReport r;
        std::vector<tg::RuntimeCall> calls;
        if (!planWith(cand.spec, {}, target, r, /*quiet=*/true, nullptr, &calls))
          continue;
        cand.planBytes = r.totalBytes();
        cand.fits = cand.planBytes + contextBytes <= memory;
        cand.pred = predictPlan(cand.spec, table, calls);
        cands.push_back(std::move(cand));
      }
    }

  // Rank the fitting candidates: highest predicted tokens/s, then the smaller plan.
  std::vector<size_t> order;
  for (size_t i = 0; i < cands.size(); ++i)
    if (cands[i].fits)
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const AdviseCandidate &x = cands[a], &y = cands[b];
    if (x.pred.tokensPerS != y.pred.tokensPerS)
      return x.pred.tokensPerS > y.pred.tokensPerS;
    return x.planBytes < y.planBytes;
  });
  const std::string specName = opts.specFile.empty() ? "<default spec>" : opts.specFile;
  if (order.empty()) {
    // Name the smallest plan at micro-batch 1 (or why none could be planned).
    const AdviseFamily *smallest = nullptr;
    for (const AdviseFamily &f : families)
      if (f.planned1 && (!smallest || f.bytes1 < smallest->bytes1))
        smallest = &f;
    llvm::errs() << "tgc: error: advise: " << specName << ": no configuration fits --memory "
                 << opts.memory << " (" << memory << " bytes)";
    if (smallest)
      llvm::errs() << ": the smallest plan at micro-batch 1 is " << smallest->precision << " / "
                   << smallest->policy << " with " << smallest->bytes1 << " bytes ("
                   << (smallest->bytes1 >= (1LL << 30)
                           ? gib(smallest->bytes1) + " GiB"
                           : llvm::formatv("{0:f2} MiB", (double)smallest->bytes1 / (1 << 20))
                                 .str())
                   << ")" << reserveText(target, contextBytes)
                   << "\n";
    else
      llvm::errs() << ": micro-batch 1 cannot be planned with any precision and policy searched"
                   << (families.empty() || families[0].why.empty() ? ""
                                                                   : ": " + families[0].why)
                   << "\n";
    return 2;
  }
  const AdviseCandidate &best = cands[order.front()];
  const AdviseFamily &bestFamily = families[best.family];

  llvm::raw_ostream &os = llvm::outs();
  os << "advise '" << spec.name << "': target " << target << ", memory " << memory
     << " bytes (plan" << reserveText(target, contextBytes) << " must fit), context "
     << context << ", ";
  if (T)
    os << "tokens per step " << T << " (micro-batch x grad_accum x context; closest >= it "
       << "where not exact, marked *)";
  else
    os << "grad_accum " << spec.training.grad_accum << " (the spec's)";
  os << "\n";
  os << "searched: precision " << llvm::join(precisions, ", ") << "; checkpointing "
     << llvm::join(policies, ", ") << "; micro-batch: powers of two up to the largest that "
     << "fits, and it; " << cands.size() << " configurations planned and predicted\n";
  os << llvm::left_justify("#", 4) << llvm::left_justify("precision", 12)
     << llvm::left_justify("checkpointing", 16) << llvm::right_justify("micro-batch", 12)
     << llvm::right_justify("grad_accum", 11) << llvm::right_justify("plan GiB", 10)
     << llvm::right_justify("total GiB", 11) << llvm::right_justify("pred ms", 11)
     << llvm::right_justify("tokens/s", 14) << llvm::right_justify("MFU", 8) << "\n";
  for (size_t k = 0; k < order.size() && k < (size_t)opts.top; ++k) {
    const AdviseCandidate &c = cands[order[k]];
    const AdviseFamily &f = families[c.family];
    os << llvm::left_justify(std::to_string(k + 1), 4) << llvm::left_justify(f.precision, 12)
       << llvm::left_justify(f.policy, 16) << llvm::right_justify(std::to_string(c.batch), 12)
       << llvm::right_justify(std::to_string(c.gradAccum) + (c.exact ? "" : "*"), 11)
       << llvm::right_justify(gib(c.planBytes), 10)
       << llvm::right_justify(gib(c.planBytes + contextBytes), 11)
       << llvm::right_justify(fmt3(c.pred.step.stepMs), 11)
       << llvm::right_justify(withCommas((long long)std::llround(c.pred.tokensPerS)), 14)
       << llvm::right_justify(llvm::formatv("{0:f1}%", 100.0 * c.pred.mfu).str(), 8) << "\n";
  }
  // Why each other family lost.
  for (size_t fi = 0; fi < families.size(); ++fi) {
    const AdviseFamily &f = families[fi];
    if (&f == &bestFamily)
      continue;
    os << "  " << f.precision << " / " << f.policy << ": ";
    const AdviseCandidate *fb = nullptr;
    for (size_t i : order)
      if (cands[i].family == fi) {
        fb = &cands[i];
        break;
      }
    if (f.maxBatch == 0 && f.planned1)
      os << "does not fit at micro-batch 1 (plan " << gib(f.bytes1) << " GiB"
         << (contextBytes ? " + reserve " + gib(contextBytes) + " GiB" : "") << ")\n";
    else if (f.maxBatch == 0)
      os << "refused: " << (f.why.empty() ? "the plan fails" : f.why) << "\n";
    else if (!fb)
      os << "no candidate could be planned and fit\n";
    else if (fb->pred.tokensPerS >= best.pred.tokensPerS)
      os << "ties: best " << withCommas((long long)std::llround(fb->pred.tokensPerS))
         << " tokens/s at micro-batch " << fb->batch << " (largest fitting " << f.maxBatch
         << "; the chosen has the smaller plan or comes first in the search order)\n";
    else
      os << "slower: best " << withCommas((long long)std::llround(fb->pred.tokensPerS))
         << " tokens/s at micro-batch " << fb->batch << " (largest fitting " << f.maxBatch
         << "), "
         << llvm::formatv("{0:f1}", 100.0 * (1.0 - fb->pred.tokensPerS / best.pred.tokensPerS))
                .str()
         << "% below\n";
  }
  os << "chosen: precision " << bestFamily.precision << ", checkpointing " << bestFamily.policy
     << ", micro-batch " << best.batch << ", grad_accum " << best.gradAccum << " ("
     << best.tokensPerStep << " tokens per step"
     << (best.exact ? "" : ", the closest >= --tokens-per-step " + std::to_string(T))
     << "): predicted " << fmt3(best.pred.step.stepMs) << " ms/step, "
     << withCommas((long long)std::llround(best.pred.tokensPerS)) << " tokens/s, MFU "
     << llvm::formatv("{0:f1}", 100.0 * best.pred.mfu) << "%; plan " << best.planBytes
     << " bytes" << reserveText(target, contextBytes) << " of " << memory << "\n";
  os << "(predictions: docs/cost-model.md; calibration: " << origin << ")\n";

  // The chosen spec: the input spec (with --set) and the chosen fields, defaults filled in.
  std::string specText;
  {
    llvm::Expected<llvm::json::Value> doc = llvm::json::parse(best.spec.json);
    if (!doc) {
      llvm::consumeError(doc.takeError());
      specText = best.spec.json + "\n";
    } else {
      llvm::raw_string_ostream so(specText);
      so << llvm::formatv("{0:2}", *doc) << "\n";
    }
  }
  std::string jsonText;
  if (!opts.json.empty()) {
    llvm::json::Array all;
    for (size_t i = 0; i < cands.size(); ++i) {
      const AdviseCandidate &c = cands[i];
      const AdviseFamily &f = families[c.family];
      all.push_back(llvm::json::Object{{"precision", f.precision},
                                       {"checkpointing", f.policy},
                                       {"batch_size", c.batch},
                                       {"grad_accum", c.gradAccum},
                                       {"tokens_per_step", c.tokensPerStep},
                                       {"exact_tokens_per_step", c.exact},
                                       {"plan_bytes", c.planBytes},
                                       {"total_bytes", c.planBytes + contextBytes},
                                       {"fits", c.fits},
                                       {"predicted_ms", c.pred.step.stepMs},
                                       {"predicted_tokens_per_s", c.pred.tokensPerS},
                                       {"predicted_mfu", c.pred.mfu},
                                       {"chosen", &c == &best}});
    }
    llvm::json::Array fams;
    for (const AdviseFamily &f : families)
      fams.push_back(llvm::json::Object{{"precision", f.precision},
                                        {"checkpointing", f.policy},
                                        {"max_micro_batch", f.maxBatch},
                                        {"max_micro_batch_bytes", f.maxBatchBytes}});
    llvm::raw_string_ostream jo(jsonText);
    jo << llvm::formatv(
              "{0:2}",
              llvm::json::Value(llvm::json::Object{
                  {"spec", specName},
                  {"target", target},
                  {"memory_bytes", memory},
                  {"context_bytes", contextBytes},
                  {"tokens_per_step", T ? llvm::json::Value(T) : llvm::json::Value(nullptr)},
                  {"calibration", origin},
                  {"chosen",
                   llvm::json::Object{{"precision", bestFamily.precision},
                                      {"checkpointing", bestFamily.policy},
                                      {"batch_size", best.batch},
                                      {"grad_accum", best.gradAccum},
                                      {"predicted_tokens_per_s", best.pred.tokensPerS}}},
                  {"families", std::move(fams)},
                  {"candidates", std::move(all)}}))
       << "\n";
  }
  if (!opts.json.empty() && !writeAtomically(opts.json, jsonText))
    return 2;
  if (!writeAtomically(out, specText)) {
    if (!opts.json.empty())
      llvm::sys::fs::remove(opts.json);
    return 2;
  }
  if (out != "-")
    llvm::errs() << "tgc: advise: wrote the chosen spec to " << out
                 << " (tgc compile " << out << " --target " << target << ")\n";
  return 0;
}

int runCalibrate(const CalibrateOptions &opts) {
  if (opts.target != "cpu" && opts.target != "cuda") {
    llvm::errs() << "tgc: error: --target: unknown backend '" << opts.target
                 << "' (expected cpu or cuda)\n";
    return 2;
  }
  if (opts.out.empty()) {
    llvm::errs() << "tgc: error: calibrate: --out FILE is required (the table to write)\n";
    return 2;
  }
  if (!opts.powerOnly.empty() && opts.target != "cuda") {
    llvm::errs() << "tgc: error: calibrate: --power-only needs --target cuda (the power "
                    "section is read from the GPU's NVML)\n";
    return 2;
  }
  if (opts.onlyGroup.empty() != opts.into.empty()) {
    llvm::errs() << "tgc: error: calibrate: --only GROUP and --into TABLE go together (the "
                    "group's kernels are measured again into a copy of TABLE)\n";
    return 2;
  }
  if (!opts.onlyGroup.empty() && !opts.powerOnly.empty()) {
    llvm::errs() << "tgc: error: calibrate: --only and --power-only do not go together (one "
                    "measures a group of kernels, the other the power section)\n";
    return 2;
  }
  if (!opts.powerOnly.empty() && opts.quick) {
    llvm::errs() << "tgc: error: calibrate: --power-only and --quick do not go together (the "
                    "power section has no grid)\n";
    return 2;
  }
  // The executable of the target lies next to this tgc (bin/): it links that runtime.
  std::string self = llvm::sys::fs::getMainExecutable("tgc", (void *)(intptr_t)&runCalibrate);
  llvm::SmallString<256> exe(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(exe, "tgc-calibrate-" + opts.target);
  if (!llvm::sys::fs::can_execute(exe)) {
    llvm::errs() << "tgc: error: calibrate: " << exe << " not found"
                 << (opts.target == "cuda" ? " (build tgc with -DTGC_ENABLE_CUDA=ON; it runs "
                                             "on the GPU it times)"
                                           : " (build the tgc-calibrate-cpu target)")
                 << "\n";
    return 2;
  }
  std::vector<std::string> args = {std::string(exe), "--out", opts.out};
  if (opts.quick)
    args.push_back("--quick");
  if (!opts.powerOnly.empty()) {
    args.push_back("--power-only");
    args.push_back(opts.powerOnly);
  }
  if (!opts.onlyGroup.empty()) {
    args.push_back("--only");
    args.push_back(opts.onlyGroup);
    args.push_back(opts.into);
  }
  llvm::errs() << "tgc: calibrate: running " << exe << (opts.quick ? " --quick" : "")
               << (opts.powerOnly.empty() ? "" : " --power-only " + opts.powerOnly)
               << (opts.onlyGroup.empty() ? "" : " --only " + opts.onlyGroup + " " + opts.into)
               << "\n";
  llvm::SmallVector<llvm::StringRef> refs(args.begin(), args.end());
  std::string err;
  int rc = llvm::sys::ExecuteAndWait(args[0], refs, std::nullopt, {}, 0, 0, &err);
  if (rc < 0) {
    llvm::errs() << "tgc: error: calibrate: " << exe << ": " << err << "\n";
    return 1;
  }
  return rc;
}

long long parseBytes(const std::string &text) {
  static const std::pair<const char *, long long> units[] = {
      {"KiB", 1LL << 10}, {"MiB", 1LL << 20}, {"GiB", 1LL << 30}, {"TiB", 1LL << 40},
      {"KB", 1000LL},     {"MB", 1000000LL},  {"GB", 1000000000LL}, {"B", 1}};
  std::string t = text;
  long long mult = 1;
  for (auto [suffix, m] : units) {
    size_t n = strlen(suffix);
    if (t.size() > n && t.compare(t.size() - n, n, suffix) == 0) {
      t = t.substr(0, t.size() - n);
      mult = m;
      break;
    }
  }
  if (t.empty())
    return -1;
  char *end = nullptr;
  double v = strtod(t.c_str(), &end);
  if (*end != '\0' || v < 0)
    return -1;
  return (long long)(v * (double)mult);
}

int runDataPrepare(const DataCliOptions &opts) {
  if (opts.out.empty()) {
    llvm::errs() << "tgc: error: data prepare: --out DIR is required\n";
    return 2;
  }
  DataOptions d;
  d.inputs = opts.inputs;
  d.vocab = opts.vocab;
  d.out = opts.out;
  d.seed = opts.seed;
  long long maxBytes = parseBytes(opts.maxBytes);
  if (maxBytes < 0) {
    llvm::errs() << "tgc: error: --max-bytes: cannot parse '" << opts.maxBytes << "'\n";
    return 2;
  }
  d.max_bytes = maxBytes;
  if (!opts.tokenizer.empty() && opts.vocabGiven) {
    llvm::errs() << "tgc: error: data prepare: --vocab sets the size of the tokenizer that "
                    "prepare trains; with --tokenizer the vocabulary is the tokenizer's\n";
    return 2;
  }
  d.tokenizer = opts.tokenizer;
  d.eos_token = opts.eosToken;
  d.text_field = opts.textField;
  d.threads = opts.threads;
  d.python = opts.python;
  d.quiet = opts.quiet;
  {
    // A token count: digits with an optional K, M or G (powers of 1000).
    std::string t = opts.shardTokens;
    long long mult = 1;
    if (!t.empty() && std::strchr("kKmMgG", t.back())) {
      const char c = (char)std::tolower((unsigned char)t.back());
      mult = c == 'k' ? 1000LL : c == 'm' ? 1000000LL : 1000000000LL;
      t.pop_back();
    }
    char *end = nullptr;
    const long long v = t.empty() ? -1 : std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || v < 1) {
      llvm::errs() << "tgc: error: --shard-tokens: expected a positive token count such as "
                      "100000000 or 100M, got '"
                   << opts.shardTokens << "'\n";
      return 2;
    }
    d.shard_tokens = v * mult;
  }
  std::string err;
  if (!prepareData(d, &err)) {
    llvm::errs() << "tgc: error: data prepare: " << err << "\n";
    return 1;
  }
  return 0;
}

} // namespace tgc
