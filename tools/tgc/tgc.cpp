//===- tgc.cpp - the tgc driver ----------------------------------------------===//
//
//   tgc compile [SPEC] [--set k=v]... [--emit=...] [--target=cpu|cuda] [-o OUT]
//   tgc summary [SPEC] [--set k=v]...
//   tgc plan    [SPEC] [--set k=v]... [--json FILE] [--max-batch --memory BYTES] [--tradeoff]
//               [--ranks N] [--context-bytes BYTES] [--calibration FILE] [--sort time]
//   tgc advise  [SPEC] --memory BYTES [--target cuda|cpu] [--calibration FILE]
//               [--tokens-per-step T] [--precisions a,b] [--policies a,b] [--top N]
//               [-o OUT.json] [--json FILE]
//   tgc calibrate --out FILE [--target cpu|cuda] [--quick | --power-only TABLE |
//                                                   --only GROUP --into TABLE]
//   tgc data prepare [--input PATH]... [--vocab N | --tokenizer FILE.json] --out DIR
//               [--text-field NAME] [--threads N] [--shard-tokens N] [--python PY]
//   tgc experiment MATRIX.json --out DIR [--only a,b] [--skip a,b] [--stage compile|all] ...
//   tgc export  CHECKPOINT.safetensors --spec SPEC [--set k=v]... --hf DIR [--data DIR]
//
// With no SPEC, the small embedded default spec is used.
//
//===----------------------------------------------------------------------------===//
#include "tools/tgc/Driver.h"
#include "tools/tgc/Experiment.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <cstdlib>
#include <unistd.h>

using namespace llvm;

namespace {
cl::SubCommand compileCmd("compile", "Compile a spec into a training executable or IR");
cl::SubCommand summaryCmd("summary", "Print the parameter table of a spec");
cl::SubCommand planCmd("plan", "Print the static memory plan of a spec before anything runs");
cl::SubCommand adviseCmd(
    "advise",
    "Search precision x checkpointing x micro-batch (x grad_accum) for the configuration "
    "with the\nhighest predicted tokens/s whose plan fits --memory, and write its spec:\n"
    "  tgc advise SPEC --memory 80GiB [--target cuda|cpu] [--tokens-per-step T] [-o OUT.json]\n"
    "Every candidate is planned exactly (plan + --context-bytes <= --memory) and its step "
    "time\npredicted by the cost model (docs/cost-model.md, \"tgc advise\"). ZeRO stages, "
    "CPU offload and\nthe number of ranks are not searched: the spec's "
    "training.distributed and optimizer.offload\nare kept.");
cl::SubCommand dataCmd("data", "Prepare a corpus: `tgc data prepare --input ... --out DIR`");
cl::SubCommand experimentCmd(
    "experiment",
    "Compile (and run) a matrix of training configurations over one spec:\n"
    "  tgc experiment MATRIX.json --out DIR [--only a,b] [--skip a,b] [--stage compile|all]\n"
    "Every configuration is checked against the spec first; each is planned (\"batch\": "
    "\"max\" = the\nlargest micro-batch whose plan + --context-bytes fits --memory), "
    "compiled into "
    "DIR/configs/<name>/train, then\ntools/experiment/run.py trains them and writes the "
    "report. See docs/experiments.md.");
cl::SubCommand calibrateCmd(
    "calibrate",
    "Time the runtime's kernels on this machine and write the cost model's calibration "
    "table:\n  tgc calibrate --out FILE [--target cpu|cuda] [--quick]\n"
    "  tgc calibrate --out FILE --target cuda --power-only TABLE\n"
    "  tgc calibrate --out FILE [--target cpu|cuda] [--quick] --only GROUP --into TABLE\n"
    "Runs tgc-calibrate-<target> (next to tgc), which links that runtime; see "
    "docs/cost-model.md.");
cl::SubCommand exportCmd("export",
                         "Write a trained checkpoint as a Hugging Face GPT-2 or Llama "
                         "directory (config.json + model.safetensors)");

cl::OptionCategory specCat("Spec options");
cl::opt<std::string> specFile(cl::Positional, cl::desc("[SPEC.json]"), cl::init(""),
                              cl::sub(compileCmd), cl::sub(summaryCmd), cl::sub(planCmd),
                              cl::sub(adviseCmd), cl::cat(specCat));
cl::list<std::string> overrides("set", cl::desc("Override a spec field: --set path=value"),
                                cl::value_desc("path=value"), cl::sub(compileCmd),
                                cl::sub(summaryCmd), cl::sub(planCmd), cl::sub(exportCmd),
                                cl::sub(adviseCmd), cl::cat(specCat));

cl::OptionCategory compileCat("Compile options");
cl::opt<std::string> emit(
    "emit",
    cl::desc("What to produce: mlir (forward IR), fused, step (after autodiff), planned "
             "(memory plan in IR), emitc (after tg-lower-to-emitc), cpp (C++ source), exe "
             "(executable, default), "
             "lib (shared library with the C ABI)"),
    cl::init("exe"), cl::sub(compileCmd), cl::cat(compileCat));
cl::opt<std::string> target("target",
                            cl::desc("Runtime backend: cpu | cuda (compile: cpu; plan, advise: cuda)"),
                            cl::init("cpu"), cl::sub(compileCmd), cl::sub(planCmd),
                            cl::sub(adviseCmd),
                            cl::cat(compileCat));
cl::opt<std::string> output("o", cl::desc("Output file (default: stdout for IR/C++, ./train "
                                          "for exe)"),
                            cl::value_desc("file"), cl::init(""), cl::sub(compileCmd),
                            cl::cat(compileCat));

cl::OptionCategory planCat("Plan options");
cl::opt<std::string> planJson("json", cl::desc("Write the full plan report as JSON"),
                              cl::value_desc("file"), cl::init(""), cl::sub(planCmd),
                              cl::cat(planCat));
cl::opt<std::string> planCalibration(
    "calibration",
    cl::desc("The cost model's calibration table (tgc calibrate) for the predicted step time "
             "(default: the shipped table of the target: for cuda the one whose device is this "
             "machine's GPU per nvidia-smi, else calibration/h100.json; calibration/cpu-*.json "
             "for cpu; none: a roofline of stated peaks); compile: the table "
             "training.checkpointing auto (the default) and auto:<memory> predict with, and "
             "whose memory_bytes auto fits without --memory (build for another machine's "
             "GPU: its table)"),
    cl::value_desc("file"), cl::init(""), cl::sub(planCmd), cl::sub(adviseCmd),
    cl::sub(experimentCmd), cl::sub(compileCmd), cl::cat(planCat));
cl::opt<std::string> planCalls(
    "calls",
    cl::desc("Write every runtime call of the step with its FLOPs, bytes and predicted ms "
             "(JSON lines), what the predicted step time sums"),
    cl::value_desc("file"), cl::init(""), cl::sub(planCmd), cl::cat(planCat));
cl::opt<std::string> planSort("sort",
                              cl::desc("With --tradeoff: order the rows by this key (time: "
                                       "the predicted step time, fastest first)"),
                              cl::value_desc("time"), cl::init(""), cl::sub(planCmd),
                              cl::cat(planCat));
cl::opt<std::string> planSvg(
    "svg",
    cl::desc("Write the plan as an SVG picture: one panel per function, x = op index, "
             "y = arena offset, one rectangle per buffer (tooltip: name, dtype, bytes)"),
    cl::value_desc("file"), cl::init(""), cl::sub(planCmd), cl::cat(planCat));
cl::opt<bool> maxBatch("max-batch",
                       cl::desc("Find the largest micro-batch whose plan fits --memory "
                                "(with the --context-bytes reserve)"),
                       cl::sub(planCmd), cl::cat(planCat));
cl::opt<bool> tradeoff(
    "tradeoff",
    cl::desc("Compare checkpointing policies (none, gelu, selective, layer-attn, layer, budgets): arena, peaks, "
             "extra FLOPs, largest micro-batch for --memory; --json writes the rows"),
    cl::sub(planCmd), cl::cat(planCat));
cl::opt<int64_t> planRanks(
    "ranks",
    cl::desc("Data-parallel ranks: one rank's memory (parameters, gradients, AdamW state, "
             "working copies, arena) for each ZeRO stage, and with --memory its largest "
             "micro-batch"),
    cl::init(0), cl::sub(planCmd));
cl::opt<std::string> memory("memory",
                            cl::desc("The device's whole memory, e.g. 80GiB, 24GB, 1073741824: "
                                     "a plan fits when plan + --context-bytes <= it "
                                     "(without it: the calibration table's memory_bytes, "
                                     "else --max-batch refuses and --tradeoff and --ranks "
                                     "assume 80GiB); the memory the default "
                                     "training.checkpointing auto fits"),
                            cl::value_desc("bytes"), cl::init(""), cl::sub(planCmd),
                            cl::sub(compileCmd), cl::cat(planCat));
cl::opt<std::string> contextBytes(
    "context-bytes",
    cl::desc("Device memory the process holds outside the plan (CUDA context, library "
             "handles), counted against --memory, e.g. 537MiB, 1GiB, 0 (default for target "
             "cuda: the calibration table's context_bytes (calibration/h200.json: 545MiB), "
             "else 537MiB = 563085312, measured with nvidia-smi on an H100; 0 for cpu)"),
    cl::value_desc("bytes"), cl::init(""), cl::sub(planCmd), cl::sub(experimentCmd),
    cl::sub(adviseCmd), cl::sub(compileCmd), cl::cat(planCat));

cl::OptionCategory adviseCat("Advise options");
cl::opt<std::string> adviseMemory(
    "memory",
    cl::desc("The device's whole memory, e.g. 80GiB, 24GB, 1073741824 (default: the "
             "calibration table's memory_bytes; required when it has none): a configuration "
             "fits when its plan + --context-bytes <= it"),
    cl::value_desc("bytes"), cl::init(""), cl::sub(adviseCmd), cl::cat(adviseCat));
cl::opt<long long> adviseTokens(
    "tokens-per-step",
    cl::desc("Keep the global batch: micro-batch x grad_accum x context == T tokens per "
             "optimizer step (or the closest >= T, marked *); micro-batches above T / context "
             "are not searched (default: the spec's grad_accum)"),
    cl::value_desc("T"), cl::init(0), cl::sub(adviseCmd), cl::cat(adviseCat));
cl::opt<std::string> advisePrecisions(
    "precisions",
    cl::desc("Precisions searched, comma-separated (default bf16-mixed,fp16-mixed; fp32 and "
             "bf16 only when listed)"),
    cl::value_desc("a,b"), cl::init("bf16-mixed,fp16-mixed"), cl::sub(adviseCmd),
    cl::cat(adviseCat));
cl::opt<std::string> advisePolicies(
    "policies",
    cl::desc("Checkpointing policies searched, comma-separated (default "
             "none,gelu,selective,layer-attn,layer; budget:BYTES when listed)"),
    cl::value_desc("a,b"), cl::init("none,gelu,selective,layer-attn,layer"),
    cl::sub(adviseCmd), cl::cat(adviseCat));
cl::opt<int> adviseTop("top", cl::desc("How many of the best configurations to print"),
                       cl::init(5), cl::sub(adviseCmd), cl::cat(adviseCat));
cl::opt<std::string> adviseOut(
    "o",
    cl::desc("Where to write the chosen spec, valid for `tgc compile` (default: "
             "./<spec stem>-advised.json in the current directory, default-advised.json "
             "without SPEC; - : stdout)"),
    cl::value_desc("file"), cl::init(""), cl::sub(adviseCmd), cl::cat(adviseCat));
cl::opt<std::string> adviseJson("json",
                                cl::desc("Write every candidate planned with its plan bytes, "
                                         "fit, predicted ms, tokens/s and MFU (JSON)"),
                                cl::value_desc("file"), cl::init(""), cl::sub(adviseCmd),
                                cl::cat(adviseCat));

cl::OptionCategory dataCat("Data options");
cl::opt<std::string> dataVerb(cl::Positional, cl::desc("prepare"), cl::sub(dataCmd),
                              cl::cat(dataCat));
cl::list<std::string> dataInputs(
    "input",
    cl::desc("Text files or directories (.txt, .rst, .md, .jsonl and their .gz, .parquet; "
             "directories recursively, sorted); default: the Linux kernel documentation from "
             "Debian's linux-doc"),
    cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<int> dataVocab("vocab",
                       cl::desc("Vocabulary size (tokens) of the sentencepiece BPE tokenizer "
                                "trained on the train split (not with --tokenizer)"),
                       cl::init(2048), cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<std::string> dataTokenizer(
    "tokenizer",
    cl::desc("Encode with this pretrained Hugging Face tokenizer (tokenizer.json, e.g. GPT-2's "
             "or Llama 3's) through the Python `tokenizers` package instead of training one"),
    cl::value_desc("FILE.json"), cl::init(""), cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<std::string> dataEosToken(
    "eos-token",
    cl::desc("With --tokenizer: the token after each document (default: tokenizer_config.json's "
             "eos_token, else <|endoftext|>, <|end_of_text|>, </s>, ...)"),
    cl::init(""), cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<std::string> dataTextField("text-field",
                                   cl::desc("The text field of .jsonl lines and column of "
                                            ".parquet files"),
                                   cl::init("text"), cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<int> dataThreads("threads",
                         cl::desc("Encoding threads (0: all cores); the ids do not depend on it"),
                         cl::init(0), cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<std::string> dataShardTokens(
    "shard-tokens",
    cl::desc("Tokens per shard file at most (a split that fits is one <split>.npy; larger "
             "splits are <split>-00000.npy, ...); suffixes K, M, G (x1000)"),
    cl::init("100M"), cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<std::string> dataPython(
    "python",
    cl::desc("Python interpreter for --tokenizer and .parquet (default: $TGC_PYTHON, else the "
             "repository's .venv-hf/bin/python, else python3)"),
    cl::init(""), cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<bool> dataQuiet("quiet", cl::desc("No progress messages"), cl::sub(dataCmd),
                        cl::cat(dataCat));
cl::opt<std::string> dataOut("out", cl::desc("Output directory"), cl::init(""),
                             cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<std::string> dataMaxBytes("max-bytes",
                                  cl::desc("Cap on input text read, e.g. 4MiB (0: no cap)"),
                                  cl::init("0"), cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<unsigned> dataSeed("seed", cl::desc("Shuffle seed for the document split"),
                           cl::init(1234), cl::sub(dataCmd), cl::cat(dataCat));
cl::OptionCategory calibrateCat("Calibrate options");
cl::opt<std::string> calOut("out", cl::desc("The calibration table to write (JSON)"),
                            cl::value_desc("file"), cl::init(""), cl::sub(calibrateCmd),
                            cl::cat(calibrateCat));
cl::opt<std::string> calTarget("target", cl::desc("Runtime backend to time: cpu | cuda"),
                               cl::init("cpu"), cl::sub(calibrateCmd), cl::cat(calibrateCat));
cl::opt<bool> calQuick("quick",
                       cl::desc("A small grid of shapes (seconds, for tests); the default grid "
                                "takes a few minutes"),
                       cl::sub(calibrateCmd), cl::cat(calibrateCat));
cl::opt<std::string> calPowerOnly(
    "power-only",
    cl::desc("cuda: measure only the power section (the GPU's power limit: idle, a "
             "bandwidth-bound kernel, two GEMMs; ~8 s) into a copy of this table, written to "
             "--out"),
    cl::value_desc("table"), cl::init(""), cl::sub(calibrateCmd), cl::cat(calibrateCat));
cl::opt<std::string> calOnly(
    "only",
    cl::desc("Measure one group of kernels again (rows, gemms, batched-gemms, attention, "
             "loss; the full grid, or --quick's), e.g. after a kernel change; their points "
             "replace those of the --into table in a copy written to --out"),
    cl::value_desc("group"), cl::init(""), cl::sub(calibrateCmd), cl::cat(calibrateCat));
cl::opt<std::string> calInto("into",
                             cl::desc("With --only: the table whose other kernels are kept"),
                             cl::value_desc("table"), cl::init(""), cl::sub(calibrateCmd),
                             cl::cat(calibrateCat));
cl::OptionCategory exportCat("Export options");
cl::opt<std::string> exportCheckpoint(cl::Positional, cl::desc("CHECKPOINT.safetensors"),
                                      cl::init(""), cl::sub(exportCmd), cl::cat(exportCat));
cl::opt<std::string> exportSpec("spec",
                                cl::desc("The spec the checkpoint was trained with (the "
                                         "same --set overrides as at compile time)"),
                                cl::value_desc("SPEC.json"), cl::init(""), cl::sub(exportCmd),
                                cl::cat(exportCat));
cl::opt<std::string> exportHf("hf",
                              cl::desc("Output directory for the Hugging Face model "
                                       "(created if missing; config.json and "
                                       "model.safetensors are replaced)"),
                              cl::value_desc("DIR"), cl::init(""), cl::sub(exportCmd),
                              cl::cat(exportCat));
cl::opt<std::string> exportData(
    "data",
    cl::desc("The `tgc data prepare` directory the model was trained on: its tokenizer "
             "(tokenizer.json or tokenizer.model) is copied into the --hf directory with a "
             "tokenizer_config.json, so that AutoTokenizer.from_pretrained(DIR) loads it"),
    cl::value_desc("DIR"), cl::init(""), cl::sub(exportCmd), cl::cat(exportCat));
cl::OptionCategory experimentCat("Experiment options");
cl::opt<std::string> expMatrix(cl::Positional, cl::desc("MATRIX.json"), cl::init(""),
                               cl::sub(experimentCmd), cl::cat(experimentCat));
cl::opt<std::string> expOut("out", cl::desc("Output directory (created; reruns reuse it)"),
                            cl::value_desc("dir"), cl::init(""), cl::sub(experimentCmd),
                            cl::cat(experimentCat));
cl::list<std::string> expOnly("only",
                              cl::desc("Only these configurations (comma-separated names)"),
                              cl::value_desc("a,b"), cl::sub(experimentCmd),
                              cl::cat(experimentCat));
cl::list<std::string> expSkip("skip", cl::desc("Skip these configurations (comma-separated)"),
                              cl::value_desc("a,b"), cl::sub(experimentCmd),
                              cl::cat(experimentCat));
cl::opt<std::string> expData("data",
                             cl::desc("Token directory from `tgc data prepare` (overrides the "
                                      "matrix's \"data\")"),
                             cl::value_desc("dir"), cl::init(""), cl::sub(experimentCmd),
                             cl::cat(experimentCat));
cl::opt<std::string> expMemory(
    "memory",
    cl::desc("Device memory for \"batch\": \"max\", the device's whole memory, e.g. 80GiB, or "
             "auto (GPU 0's free memory from nvidia-smi, read before any CUDA context of ours "
             "exists, so the plans get free minus --context-bytes); a plan fits when plan + "
             "--context-bytes <= it; overrides the matrix's \"memory\""),
    cl::value_desc("bytes|auto"), cl::init(""), cl::sub(experimentCmd), cl::cat(experimentCat));
cl::opt<std::string> expTarget("target",
                               cl::desc("auto | cpu | cuda (auto: cuda when a GPU is visible "
                                        "and tgc has the CUDA runtime); overrides the matrix"),
                               cl::init(""), cl::sub(experimentCmd), cl::cat(experimentCat));
cl::opt<std::string> expStage("stage",
                              cl::desc("compile: stop after compiling; all (default): then run "
                                       "tools/experiment/run.py DIR"),
                              cl::init("all"), cl::sub(experimentCmd), cl::cat(experimentCat));
cl::opt<bool> expForce("force", cl::desc("Recompile configurations that are up to date"),
                       cl::sub(experimentCmd), cl::cat(experimentCat));
cl::opt<bool> expNoPytorch("no-pytorch",
                           cl::desc("Run only the tgc rows (no PyTorch rows, whatever the "
                                    "matrix's \"pytorch\" says)"),
                           cl::sub(experimentCmd), cl::cat(experimentCat));
cl::opt<double> expMinutes("minutes",
                           cl::desc("Train each configuration for this many minutes instead of "
                                    "the matrix's budget (run.py --minutes; > 0)"),
                           cl::init(0.0), cl::sub(experimentCmd), cl::cat(experimentCat));
} // namespace

/// `tgc --version`: tgc's version and the commit CMake was configured at, then the LLVM /
/// MLIR it was built against.
static void printVersion(raw_ostream &os) {
  os << "tgc version " << TGC_VERSION << " (git " << TGC_GIT_COMMIT << ")\n"
     << "  built with LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
}

/// A tgc started by `tgc experiment` leads its own process group (TGC_END_GROUP_ON_TERM
/// and getpgrp() == getpid()): when terminated (SIGTERM: its parent died, or a kill), it
/// ends the whole group, so the host compiler it started does not outlive it. Runs from
/// LLVM's signal handler after it has removed its temporary files and restored the
/// default actions: kill() is async-signal-safe and ends this process too.
static void endProcessGroup() { kill(0, SIGTERM); }

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  if (const char *g = getenv("TGC_END_GROUP_ON_TERM"); g && *g == '1' && getpgrp() == getpid())
    sys::SetInterruptFunction(endProcessGroup);
  cl::SetVersionPrinter(printVersion);
  cl::HideUnrelatedOptions({&specCat, &compileCat, &planCat, &dataCat, &exportCat,
                            &experimentCat, &calibrateCat, &adviseCat});
  cl::ParseCommandLineOptions(
      argc, argv,
      "tgc: compile a GPT-style transformer spec into a training executable with a\n"
      "statically planned memory layout.\n\n"
      "  tgc compile SPEC -o train     build the training executable\n"
      "  tgc plan SPEC                 print the memory plan before anything runs\n"
      "  tgc advise SPEC --memory 80GiB the fastest predicted configuration that fits\n"
      "  tgc summary SPEC              print the parameter table\n"
      "  tgc data prepare --out DIR    tokenize a corpus (default: Linux kernel docs)\n"
      "  tgc export CKPT --hf DIR      a checkpoint as a Hugging Face model (--spec SPEC)\n"
      "  tgc experiment M.json --out D compile and run a matrix of configurations\n"
      "  tgc calibrate --out FILE      time the runtime's kernels for the cost model\n\n"
      "Run `tgc <subcommand> --help` for the options of each.\n");

  tgc::DriverOptions opts;
  opts.specFile = specFile;
  opts.overrides.assign(overrides.begin(), overrides.end());
  if (compileCmd) {
    opts.emit = emit;
    opts.target = target;
    opts.output = output;
    opts.calibration = planCalibration; // training.checkpointing auto, auto:<memory>
    opts.contextBytes = contextBytes;
    opts.memory = memory;               // training.checkpointing auto
    return tgc::runCompile(opts);
  }
  if (summaryCmd)
    return tgc::runSummary(opts);
  if (planCmd) {
    opts.planJson = planJson;
    opts.planSvg = planSvg;
    opts.maxBatch = maxBatch;
    opts.tradeoff = tradeoff;
    opts.ranks = planRanks;
    opts.ranksGiven = planRanks.getNumOccurrences() > 0;
    opts.memory = memory;
    opts.contextBytes = contextBytes;
    opts.target = target.getNumOccurrences() ? target.getValue() : std::string("cuda");
    opts.calibration = planCalibration;
    opts.sortBy = planSort;
    opts.callsFile = planCalls;
    return tgc::runPlan(opts);
  }
  if (adviseCmd) {
    tgc::AdviseOptions a;
    a.specFile = specFile;
    a.overrides.assign(overrides.begin(), overrides.end());
    a.memory = adviseMemory;
    a.contextBytes = contextBytes;
    a.target = target.getNumOccurrences() ? target.getValue() : std::string("cuda");
    a.calibration = planCalibration;
    a.precisions = advisePrecisions;
    a.policies = advisePolicies;
    a.tokensPerStep = adviseTokens;
    a.tokensGiven = adviseTokens.getNumOccurrences() > 0;
    a.top = adviseTop;
    a.output = adviseOut;
    a.json = adviseJson;
    return tgc::runAdvise(a);
  }
  if (calibrateCmd) {
    tgc::CalibrateOptions c;
    c.out = calOut;
    c.target = calTarget;
    c.quick = calQuick;
    c.powerOnly = calPowerOnly;
    c.onlyGroup = calOnly;
    c.into = calInto;
    return tgc::runCalibrate(c);
  }
  if (exportCmd) {
    tgc::ExportOptions e;
    e.checkpoint = exportCheckpoint;
    e.specFile = exportSpec;
    e.overrides.assign(overrides.begin(), overrides.end());
    e.hfDir = exportHf;
    e.dataDir = exportData;
    return tgc::runExport(e);
  }
  if (dataCmd) {
    if (dataVerb != "prepare") {
      errs() << "tgc: error: unknown data command '" << dataVerb
             << "' (expected: tgc data prepare --out DIR)\n";
      return 2;
    }
    tgc::DataCliOptions d;
    d.inputs.assign(dataInputs.begin(), dataInputs.end());
    d.vocab = dataVocab;
    d.out = dataOut;
    d.maxBytes = dataMaxBytes;
    d.seed = dataSeed;
    d.vocabGiven = dataVocab.getNumOccurrences() > 0;
    d.tokenizer = dataTokenizer;
    d.eosToken = dataEosToken;
    d.textField = dataTextField;
    d.threads = dataThreads;
    d.shardTokens = dataShardTokens;
    d.python = dataPython;
    d.quiet = dataQuiet;
    return tgc::runDataPrepare(d);
  }
  if (experimentCmd) {
    tgc::ExperimentOptions e;
    e.matrixFile = expMatrix;
    e.out = expOut;
    e.only.assign(expOnly.begin(), expOnly.end());
    e.skip.assign(expSkip.begin(), expSkip.end());
    e.data = expData;
    e.memory = expMemory;
    e.contextBytes = contextBytes;
    e.target = expTarget;
    e.stage = expStage;
    e.force = expForce;
    e.noPytorch = expNoPytorch;
    e.minutes = expMinutes;
    e.calibration = planCalibration;
    return tgc::runExperiment(e);
  }
  errs() << "tgc: error: no subcommand given; try `tgc --help`\n";
  return 2;
}
