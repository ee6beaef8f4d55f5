//===- Driver.h - tgc subcommands ---------------------------------*- C++ -*-===//
#ifndef TGC_TOOLS_TGC_DRIVER_H
#define TGC_TOOLS_TGC_DRIVER_H

#include <string>
#include <vector>

namespace tgc {

struct DriverOptions {
  std::string specFile;               ///< empty: the embedded default spec
  std::vector<std::string> overrides; ///< --set path=value
  std::string emit = "exe", target = "cpu", output;
  std::string planJson, memory = "80GiB";
  bool maxBatch = false;
  bool tradeoff = false; ///< tgc plan --tradeoff: checkpointing policies side by side
};

struct DataCliOptions {
  std::vector<std::string> inputs;
  int vocab = 2048;
  std::string out, maxBytes = "0";
  unsigned seed = 1234;
};

/// Each returns the process exit code (0 success, 1 input error, 2 usage error) and
/// prints "tgc: error: <where>: <what>" on failure. No partial output file is left.
int runCompile(const DriverOptions &opts);
int runSummary(const DriverOptions &opts);
int runPlan(const DriverOptions &opts);
int runDataPrepare(const DataCliOptions &opts);

/// Parses "80GiB", "24GB", "512MiB", "1073741824" into bytes; -1 on error.
long long parseBytes(const std::string &text);

} // namespace tgc

#endif
