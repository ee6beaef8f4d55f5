//===- Experiment.h - tgc experiment: compile a comparison matrix ---*- C++ -*-===//
//
// `tgc experiment MATRIX.json --out DIR` expands a matrix of training configurations
// (named runs and/or a cartesian product of spec fields) over one base spec, checks every
// configuration against the spec before anything is built, plans each one (resolving
// "batch": "max" to the largest micro-batch whose plan, with the CUDA context reserve beside
// it, fits the device memory), compiles one
// training executable per configuration into DIR/configs/<name>/, and then hands DIR to
// the Python runner (tools/experiment/run.py) which trains them and writes the report.
// The matrix format and the DIR layout are in docs/experiments.md.
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_TOOLS_TGC_EXPERIMENT_H
#define TGC_TOOLS_TGC_EXPERIMENT_H

#include <string>
#include <vector>

namespace tgc {

struct ExperimentOptions {
  std::string matrixFile;               ///< the matrix (JSON)
  std::string out;                      ///< output directory (created if absent)
  std::vector<std::string> only, skip;  ///< raw --only / --skip values (comma-separated names)
  std::string data;                     ///< non-empty: overrides the matrix's "data"
  std::string memory;                   ///< non-empty: overrides "memory" (bytes or "auto")
  /// non-empty: --context-bytes, the device memory outside the plan counted against
  /// "memory" (default: defaultContextBytes(target), Driver.h)
  std::string contextBytes;
  std::string target;                   ///< non-empty: overrides "target" (auto | cpu | cuda)
  std::string stage = "all";            ///< compile: stop after compiling; all: also run
  bool force = false;                   ///< recompile configurations that are up to date
  bool noPytorch = false;               ///< run.py --no-pytorch: tgc rows only
  double minutes = 0;                   ///< > 0: run.py --minutes (time budget per run)
  /// --calibration: the cost model's table for each configuration's predicted step
  /// (config.json "predicted"); "" = the shipped one (loadCalibration, Driver.h)
  std::string calibration;
};

/// Runs `tgc experiment`. Exit codes: 2 for a matrix or usage error (nothing is written:
/// every configuration is checked against the spec first; the message names the file and
/// the JSON path of the offending entry, e.g. `m.json: runs[3].set."training.precison":
/// ...`); with --stage compile, 0 when every selected configuration was compiled or
/// refused (a refusal, e.g. nothing fits the memory, is a result) and 1 when one failed to
/// compile; with --stage all, the runner's exit code (1 if it cannot be started, or when
/// it succeeded but a configuration failed to compile).
int runExperiment(const ExperimentOptions &opts);

/// Splits a --only / --skip value into configuration names. Names may themselves contain
/// commas (axis products are named "precision=fp32,checkpointing=none"), so at each
/// position the longest of `known` followed by ',' or the end is taken; otherwise the text
/// up to the next comma (an unknown name, reported by the caller).
std::vector<std::string> splitNames(const std::string &value,
                                    const std::vector<std::string> &known);

/// The directory name of a configuration: `name` with every character outside
/// [A-Za-z0-9._=,+-] replaced by '_'.
std::string safeConfigName(const std::string &name);

} // namespace tgc

#endif
