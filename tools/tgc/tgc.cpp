//===- tgc.cpp - the tgc driver ----------------------------------------------===//
//
//   tgc compile [SPEC] [--set k=v]... [--emit=...] [--target=cpu|cuda] [-o OUT]
//   tgc summary [SPEC] [--set k=v]...
//   tgc plan    [SPEC] [--set k=v]... [--json FILE] [--max-batch --memory BYTES] [--tradeoff]
//   tgc data prepare [--input PATH]... [--vocab N] --out DIR
//
// With no SPEC, the small embedded default spec is used.
//
//===----------------------------------------------------------------------------===//
#include "tools/tgc/Driver.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {
cl::SubCommand compileCmd("compile", "Compile a spec into a training executable or IR");
cl::SubCommand summaryCmd("summary", "Print the parameter table of a spec");
cl::SubCommand planCmd("plan", "Print the static memory plan of a spec before anything runs");
cl::SubCommand dataCmd("data", "Prepare a corpus: `tgc data prepare --input ... --out DIR`");

cl::OptionCategory specCat("Spec options");
cl::opt<std::string> specFile(cl::Positional, cl::desc("[SPEC.json]"), cl::init(""),
                              cl::sub(compileCmd), cl::sub(summaryCmd), cl::sub(planCmd),
                              cl::cat(specCat));
cl::list<std::string> overrides("set", cl::desc("Override a spec field: --set path=value"),
                                cl::value_desc("path=value"), cl::sub(compileCmd),
                                cl::sub(summaryCmd), cl::sub(planCmd), cl::cat(specCat));

cl::OptionCategory compileCat("Compile options");
cl::opt<std::string> emit(
    "emit",
    cl::desc("What to produce: mlir (forward IR), fused, step (after autodiff), planned "
             "(memory plan in IR), emitc (after tg-lower-to-emitc), cpp (C++ source), exe "
             "(executable, default), "
             "lib (shared library with the C ABI)"),
    cl::init("exe"), cl::sub(compileCmd), cl::cat(compileCat));
cl::opt<std::string> target("target",
                            cl::desc("Runtime backend: cpu | cuda (compile: cpu; plan: cuda)"),
                            cl::init("cpu"), cl::sub(compileCmd), cl::sub(planCmd),
                            cl::cat(compileCat));
cl::opt<std::string> output("o", cl::desc("Output file (default: stdout for IR/C++, ./train "
                                          "for exe)"),
                            cl::value_desc("file"), cl::init(""), cl::sub(compileCmd),
                            cl::cat(compileCat));

cl::OptionCategory planCat("Plan options");
cl::opt<std::string> planJson("json", cl::desc("Write the full plan report as JSON"),
                              cl::value_desc("file"), cl::init(""), cl::sub(planCmd),
                              cl::cat(planCat));
cl::opt<bool> maxBatch("max-batch",
                       cl::desc("Find the largest micro-batch whose plan fits --memory"),
                       cl::sub(planCmd), cl::cat(planCat));
cl::opt<bool> tradeoff(
    "tradeoff",
    cl::desc("Compare checkpointing policies (none, selective, layer, budgets): arena, peaks, "
             "extra FLOPs, largest micro-batch for --memory; --json writes the rows"),
    cl::sub(planCmd), cl::cat(planCat));
cl::opt<std::string> memory("memory",
                            cl::desc("Device memory available, e.g. 80GiB, 24GB, 1073741824"),
                            cl::init("80GiB"), cl::sub(planCmd), cl::cat(planCat));

cl::OptionCategory dataCat("Data options");
cl::opt<std::string> dataVerb(cl::Positional, cl::desc("prepare"), cl::sub(dataCmd),
                              cl::cat(dataCat));
cl::list<std::string> dataInputs(
    "input",
    cl::desc("Text files or directories (.txt, .rst, .rst.gz, .md, .jsonl); default: the "
             "Linux kernel documentation from Debian's linux-doc"),
    cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<int> dataVocab("vocab", cl::desc("BPE vocabulary size (tokens)"), cl::init(2048),
                       cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<std::string> dataOut("out", cl::desc("Output directory"), cl::init(""),
                             cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<std::string> dataMaxBytes("max-bytes",
                                  cl::desc("Cap on input text read, e.g. 4MiB (0: no cap)"),
                                  cl::init("0"), cl::sub(dataCmd), cl::cat(dataCat));
cl::opt<unsigned> dataSeed("seed", cl::desc("Shuffle seed for the document split"),
                           cl::init(1234), cl::sub(dataCmd), cl::cat(dataCat));
} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  cl::HideUnrelatedOptions({&specCat, &compileCat, &planCat, &dataCat});
  cl::ParseCommandLineOptions(
      argc, argv,
      "tgc: compile a GPT-style transformer spec into a training executable with a\n"
      "statically planned memory layout.\n\n"
      "  tgc compile SPEC -o train     build the training executable\n"
      "  tgc plan SPEC                 print the memory plan before anything runs\n"
      "  tgc summary SPEC              print the parameter table\n"
      "  tgc data prepare --out DIR    tokenize a corpus (default: Linux kernel docs)\n\n"
      "Run `tgc <subcommand> --help` for the options of each.\n");

  tgc::DriverOptions opts;
  opts.specFile = specFile;
  opts.overrides.assign(overrides.begin(), overrides.end());
  if (compileCmd) {
    opts.emit = emit;
    opts.target = target;
    opts.output = output;
    return tgc::runCompile(opts);
  }
  if (summaryCmd)
    return tgc::runSummary(opts);
  if (planCmd) {
    opts.planJson = planJson;
    opts.maxBatch = maxBatch;
    opts.tradeoff = tradeoff;
    opts.memory = memory;
    opts.target = target.getNumOccurrences() ? target.getValue() : std::string("cuda");
    return tgc::runPlan(opts);
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
    return tgc::runDataPrepare(d);
  }
  errs() << "tgc: error: no subcommand given; try `tgc --help`\n";
  return 2;
}
