//===- Experiment.cpp - tgc experiment ----------------------------------------===//
//
// Three phases:
//   1. Read the matrix and expand it into configurations (runs, then the product of the
//      axes). Each configuration's overrides are applied to the base spec with parseSpec
//      exactly as `tgc --set` would; any error refuses the whole matrix, located at the
//      matrix entry that caused it. Nothing is written before this passes.
//   2. Per selected configuration: plan it (the "max" micro-batch by bisection over real
//      plans, and the plan at max + 1), write spec.json, compile it with a child
//      `tgc compile` (a compiler crash is recorded, not fatal), write config.json.
//   3. Unless --stage compile, run `python3 tools/experiment/run.py DIR`.
// The files written are described in docs/experiments.md ("The output directory").
//
//===----------------------------------------------------------------------------===//
#include "tools/tgc/Experiment.h"

#include "frontend/Spec.h"
#include "passes/MemoryPlan.h"
#include "tools/tgc/Driver.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <cstring>

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace tgc {
namespace {

using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

/// A located matrix error; thrown while reading the matrix, caught in runExperiment.
struct MatrixError {
  std::string path;    ///< JSON path inside the matrix ("runs[3].set.\"x\""), may be empty
  std::string message;
};

[[noreturn]] void fail(const std::string &path, const std::string &message) {
  throw MatrixError{path, message};
}

/// `parent.key`, or `parent."key"` when the key is not a plain identifier (spec paths).
std::string keyPath(const std::string &parent, const std::string &key) {
  bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum((unsigned char)c) || c == '_';
  });
  std::string k = plain ? key : ojson(key).dump();
  return parent.empty() ? k : parent + "." + k;
}

std::string indexPath(const std::string &parent, size_t i) {
  return parent + "[" + std::to_string(i) + "]";
}

/// A JSON value as it appears in messages, shortened if long.
std::string show(const ojson &v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

std::string joinList(const std::vector<std::string> &items, const char *sep = ", ") {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i)
    s += (i ? sep : "") + items[i];
  return s;
}

/// True if `path` is `prefix` or lies under it ("a.b" under "a").
bool under(const std::string &path, const std::string &prefix) {
  return path.compare(0, prefix.size(), prefix) == 0 &&
         (path.size() == prefix.size() || path[prefix.size()] == '.' ||
          path[prefix.size()] == '[');
}

/// Rejects keys of `obj` (at `path`) that are not in `allowed`.
void checkKeys(const ojson &obj, const std::string &path,
               const std::vector<std::string> &allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end())
      fail(keyPath(path, it.key()), "unknown field (expected one of: " + joinList(allowed) + ")");
}

/// Fields one matrix object may have. nlohmann's ordered_json finds each new key by a
/// linear search, so an object of n keys costs n^2 / 2 comparisons: 300k keys took
/// minutes. A matrix object has a few dozen.
constexpr size_t kMaxMatrixKeys = 10000;

/// Thrown from the parser callback to stop parsing an oversized object.
struct TooManyKeys {
  std::string path;
};

/// Detects keys that appear twice in one object (nlohmann keeps one silently). The
/// nesting is bounded (kMaxJsonDepth, checked before parsing), so the paths kept per
/// frame stay short.
struct DuplicateFinder {
  std::vector<std::pair<std::set<std::string>, std::string>> stack; // keys, path
  std::vector<size_t> index;                                        // arrays: next index
  std::vector<bool> isObject;
  std::string lastKey, duplicate;

  std::string childPath() const {
    if (stack.empty())
      return "";
    return isObject.back() ? keyPath(stack.back().second, lastKey)
                           : indexPath(stack.back().second, index.back());
  }
  void valueDone() {
    if (!isObject.empty() && !isObject.back())
      ++index.back();
  }
  bool operator()(int, ojson::parse_event_t ev, ojson &parsed) {
    switch (ev) {
    case ojson::parse_event_t::object_start:
    case ojson::parse_event_t::array_start:
      stack.push_back({{}, childPath()});
      index.push_back(0);
      isObject.push_back(ev == ojson::parse_event_t::object_start);
      break;
    case ojson::parse_event_t::object_end:
    case ojson::parse_event_t::array_end:
      stack.pop_back();
      index.pop_back();
      isObject.pop_back();
      valueDone();
      break;
    case ojson::parse_event_t::key:
      lastKey = parsed.get<std::string>();
      if (!stack.back().first.insert(lastKey).second && duplicate.empty())
        duplicate = keyPath(stack.back().second, lastKey);
      if (stack.back().first.size() > kMaxMatrixKeys)
        throw TooManyKeys{stack.back().second.empty() ? "(root)" : stack.back().second};
      break;
    case ojson::parse_event_t::value:
      valueDone();
      break;
    }
    return true;
  }
};

/// Reads a whole file; false if it cannot be read.
bool readFile(const std::string &path, std::string &text) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return false;
  text = (*buf)->getBuffer().str();
  return true;
}

/// 64-bit FNV-1a of `text`, as 16 hex digits.
std::string fnv1a(const std::string &text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

/// Bytes for people: "1.50 GiB", "24.0 MiB".
std::string gib(long long bytes) {
  char buf[32];
  if (bytes >= (1LL << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", (double)bytes / (1LL << 30));
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", (double)bytes / (1LL << 20));
  return buf;
}

/// The last `maxLines` lines (at most `maxChars` characters) of `text`, trimmed.
std::string tail(const std::string &text, size_t maxLines = 12, size_t maxChars = 1500) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' '))
    t.pop_back();
  size_t pos = t.size(), lines = 0;
  while (pos > 0 && lines < maxLines) {
    size_t nl = t.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    pos = nl;
    ++lines;
  }
  std::string out = t.substr(pos == 0 ? 0 : pos + 1);
  if (out.size() > maxChars)
    out = "..." + out.substr(out.size() - maxChars);
  return out;
}

/// Runs `program args...` with stdout (and stderr, when `withStderr`) captured; returns
/// the exit code (-1 when it could not be started or crashed) and sets `output`.
int capture(const std::string &program, const std::vector<std::string> &args,
            std::string &output, bool withStderr = false) {
  llvm::SmallString<128> tmp;
  if (llvm::sys::fs::createTemporaryFile("tgc-exp", "txt", tmp))
    return -1;
  std::vector<llvm::StringRef> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), llvm::StringRef(tmp),
                                                withStderr ? std::optional<llvm::StringRef>(tmp)
                                                           : llvm::StringRef("")};
  int rc = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects);
  readFile(std::string(tmp), output);
  llvm::sys::fs::remove(tmp);
  return rc;
}

/// Runs `args` (args[0] the program's path) as a child that ends with this process:
/// killing `tgc experiment` (any signal, SIGKILL included) must not leave a compile or the
/// runner going, which a rerun would race with. The child gets PR_SET_PDEATHSIG SIGTERM
/// (checked against the saved parent pid, for a parent that died before the prctl). With
/// `ownGroup` it also leads a new process group and gets TGC_END_GROUP_ON_TERM=1 in its
/// environment: a child tgc then ends its whole group (the host compiler under it) when
/// terminated (tgc.cpp). stdin is /dev/null; stdout and stderr go to `log` (truncated)
/// when given, else are inherited. Returns the exit status, or -1 (`failedToRun`) when it
/// could not start, or -2 when a signal ended it; `errMsg` says why.
int runTiedToParent(const std::vector<std::string> &args, const std::string *log,
                    bool ownGroup, std::string &errMsg, bool &failedToRun) {
  failedToRun = false;
  // Everything the child needs is built before fork(): after it, in a process that may
  // have threads (MLIR's pool), the child may only call async-signal-safe functions.
  std::vector<char *> argv;
  for (const std::string &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> envStore;
  for (char **e = environ; e && *e; ++e)
    if (std::strncmp(*e, "TGC_END_GROUP_ON_TERM=", 22) != 0)
      envStore.push_back(*e);
  if (ownGroup)
    envStore.push_back("TGC_END_GROUP_ON_TERM=1");
  std::vector<char *> envp;
  for (std::string &e : envStore)
    envp.push_back(e.data());
  envp.push_back(nullptr);

  int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int out = log ? open(log->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
  int execErr[2];
  if (in < 0 || (log && out < 0) || pipe2(execErr, O_CLOEXEC) != 0) {
    errMsg = std::string("cannot set up the child: ") + std::strerror(errno);
    failedToRun = true;
    if (in >= 0)
      close(in);
    if (out >= 0)
      close(out);
    return -1;
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    if (ownGroup)
      setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
      _exit(128 + SIGTERM); // the parent is already gone
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(in, 0);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    execve(argv[0], argv.data(), envp.data());
    int e = errno;
    (void)!write(execErr[1], &e, sizeof e);
    _exit(127);
  }
  close(execErr[1]);
  close(in);
  if (out >= 0)
    close(out);
  if (pid < 0) {
    close(execErr[0]);
    errMsg = std::string("fork failed: ") + std::strerror(errno);
    failedToRun = true;
    return -1;
  }
  if (ownGroup)
    setpgid(pid, pid); // also from this side, so the group exists when waitpid returns
  int e = 0;
  ssize_t n;
  while ((n = read(execErr[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  close(execErr[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n == (ssize_t)sizeof e) {
    errMsg = "cannot execute " + args[0] + ": " + std::strerror(e);
    failedToRun = true;
    return -1;
  }
  if (WIFSIGNALED(status)) {
    errMsg = std::string(strsignal(WTERMSIG(status)));
    return -2;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// True when `nvidia-smi -L` runs and succeeds (a usable NVIDIA GPU).
bool haveGpu() {
  auto smi = llvm::sys::findProgramByName("nvidia-smi");
  if (!smi)
    return false;
  std::string out;
  return capture(*smi, {"-L"}, out) == 0;
}

/// Free memory of GPU 0 in bytes from nvidia-smi; -1 when nvidia-smi is absent or fails.
long long gpuFreeBytes() {
  auto smi = llvm::sys::findProgramByName("nvidia-smi");
  if (!smi)
    return -1;
  std::string out;
  if (capture(*smi, {"--query-gpu=memory.free", "--format=csv,noheader,nounits"}, out) != 0)
    return -1;
  char *end = nullptr;
  long long mib = std::strtoll(out.c_str(), &end, 10);
  if (end == out.c_str() || mib <= 0)
    return -1;
  return mib << 20;
}

//===----------------------------------------------------------------------------===//
// The matrix
//===----------------------------------------------------------------------------===//

/// One spec override of a configuration and the matrix entry it came from.
struct Setting {
  std::string path; ///< spec path ("training.precision")
  ojson value;
  std::string origin; ///< JSON path in the matrix ("runs[2].set.\"training.precision\"")
};

struct Config {
  std::string name, safe;
  std::string origin; ///< "runs[3]" or "axes"
  std::vector<Setting> set;
  ojson batchRequest;          ///< null, a positive integer or "max"
  std::string batchOrigin;     ///< where "batch" was given
  bool pytorch = false;
  Spec spec;                   ///< the base spec with `set` (and an integer batch) applied
};

struct Matrix {
  std::string file, dir, name, description, specFile, specText, data, memory, target;
  bool dataGiven = false;
  ojson budget, pytorch;
  std::vector<Config> configs;
};

const std::vector<std::string> kTopKeys = {"name",   "description", "spec", "data",
                                           "memory", "target",      "budget", "pytorch",
                                           "set",    "runs",        "axes"};

/// "a=b" as given to parseSpec for a JSON value.
std::string overrideText(const Setting &s) { return s.path + "=" + s.value.dump(); }

/// Checks a "batch" value: a positive integer or "max".
void checkBatch(const ojson &v, const std::string &path) {
  if (v.is_string() && v.get<std::string>() == "max")
    return;
  if (v.is_number_integer() && v.get<long long>() > 0)
    return;
  fail(path, "expected a positive integer or \"max\", got " + show(v));
}

/// Reads a "set" object into settings (in file order).
std::vector<Setting> readSet(const ojson &obj, const std::string &path) {
  if (!obj.is_object())
    fail(path, "expected an object of spec paths to values, got " + show(obj));
  std::vector<Setting> out;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (it.key().empty())
      fail(keyPath(path, it.key()), "empty spec path");
    if (it.value().is_null())
      fail(keyPath(path, it.key()), "null is not a value to compare (leave the field out)");
    out.push_back({it.key(), it.value(), keyPath(path, it.key())});
  }
  return out;
}

/// Applies `extra` on top of `base`: a path already set is replaced in place.
void mergeSet(std::vector<Setting> &base, const std::vector<Setting> &extra) {
  for (const Setting &s : extra) {
    auto it = std::find_if(base.begin(), base.end(),
                           [&](const Setting &b) { return b.path == s.path; });
    if (it != base.end())
      *it = s;
    else
      base.push_back(s);
  }
}

/// How an axis value appears in a configuration name.
std::string axisValueName(const ojson &v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

/// Applies the configuration's overrides to the base spec with parseSpec; on failure
/// throws a MatrixError at the matrix entry that caused it.
void checkConfig(const Matrix &m, Config &c) {
  std::vector<std::string> overrides;
  for (const Setting &s : c.set)
    overrides.push_back(overrideText(s));
  if (c.batchRequest.is_number_integer())
    overrides.push_back("training.batch_size=" + c.batchRequest.dump());
  SpecError err;
  if (parseSpec(m.specText, overrides, c.spec, err, m.specFile)) {
    // The default checkpointing "auto" needs a device memory at load time; the matrix names
    // its policies as axes, so a configuration that sets none runs none.
    if (c.spec.training.checkpointing == "auto") {
      overrides.push_back("training.checkpointing=none");
      if (!parseSpec(m.specText, overrides, c.spec, err, m.specFile))
        fail(c.origin, err.str());
    }
    return;
  }
  // "--set P: ..." names the override (or the known prefix of an unknown path).
  if (err.path.rfind("--set ", 0) == 0) {
    std::string p = err.path.substr(6);
    if (c.batchRequest.is_number_integer() && (under(p, "training.batch_size")))
      fail(c.batchOrigin, err.message);
    for (auto it = c.set.rbegin(); it != c.set.rend(); ++it)
      if (under(it->path, p) || under(p, it->path))
        fail(it->origin, (p == it->path ? "" : p + ": ") + err.message);
  }
  fail(c.origin, (c.origin == "set" ? "" : "configuration '" + c.name + "': ") +
                     formatSpecError(m.specFile, err));
}

/// Reads and checks the matrix file; throws MatrixError (path inside the file), or a
/// MatrixError with an empty path for file-level problems (unreadable, syntax).
Matrix readMatrix(const std::string &file) {
  Matrix m;
  m.file = file;
  std::string text;
  if (!readFile(file, text))
    fail("", "cannot read file");
  ojson root;
  DuplicateFinder dups;
  auto lineCol = [&](size_t idx) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < idx && i < text.size(); ++i, ++col)
      if (text[i] == '\n') {
        ++line;
        col = 0;
      }
    return std::to_string(line) + ":" + std::to_string(col);
  };
  if (size_t deep = jsonNestingTooDeep(text); deep != std::string::npos)
    fail(lineCol(deep), "arrays and objects nested deeper than " +
                            std::to_string(kMaxJsonDepth) + " levels (byte offset " +
                            std::to_string(deep) + ")");
  try {
    root = ojson::parse(text, std::ref(dups));
  } catch (const ojson::parse_error &e) {
    size_t idx = e.byte == 0 ? 0 : std::min<size_t>(e.byte - 1, text.size());
    std::string what = e.what();
    size_t colon = what.find(": ", what.find("column "));
    fail(lineCol(idx), colon == std::string::npos ? what : what.substr(colon + 2));
  } catch (const TooManyKeys &e) {
    fail(e.path, "more than " + std::to_string(kMaxMatrixKeys) + " fields in one object");
  }
  if (!dups.duplicate.empty())
    fail(dups.duplicate, "duplicate field (it appears more than once)");
  if (!root.is_object())
    fail("(root)", "expected a JSON object, got " + show(root));
  checkKeys(root, "", kTopKeys);

  auto str = [&](const char *key, const std::string &def) -> std::string {
    if (!root.contains(key))
      return def;
    if (!root[key].is_string())
      fail(key, "expected a string, got " + show(root[key]));
    return root[key].get<std::string>();
  };
  m.dir = llvm::sys::path::parent_path(file).str();
  m.name = str("name", llvm::sys::path::stem(file).str());
  m.description = str("description", "");
  if (!root.contains("spec"))
    fail("spec", "missing: the base spec file, relative to the matrix file");
  std::string spec = str("spec", "");
  llvm::SmallString<256> specPath(spec);
  if (!llvm::sys::path::is_absolute(specPath)) {
    specPath = m.dir;
    llvm::sys::path::append(specPath, spec);
  }
  m.specFile = specPath.str().str();
  if (!readFile(m.specFile, m.specText))
    fail("spec", "cannot read the spec file " + m.specFile);
  if (root.contains("data") && !root["data"].is_null()) {
    m.data = str("data", "");
    m.dataGiven = true;
  }
  if (root.contains("memory") && root["memory"].is_number_integer()) {
    if (root["memory"].get<long long>() <= 0)
      fail("memory", "expected \"auto\" or a positive size, got " + show(root["memory"]));
    m.memory = root["memory"].dump();
  } else {
    m.memory = str("memory", "auto");
    if (m.memory != "auto" && parseBytes(m.memory) <= 0)
      fail("memory", "expected \"auto\" or a size such as \"24GiB\" or 25769803776, got " +
                         show(root["memory"]));
  }
  m.target = str("target", "auto");
  if (m.target != "auto" && m.target != "cpu" && m.target != "cuda")
    fail("target", "expected \"auto\", \"cpu\" or \"cuda\", got " + show(root["target"]));

  // budget: how the runner trains each configuration.
  m.budget = ojson{{"steps", 100}, {"minutes", 0}, {"eval_every", 0}, {"eval_batches", 20}};
  if (root.contains("budget")) {
    const ojson &b = root["budget"];
    if (!b.is_object())
      fail("budget", "expected an object, got " + show(b));
    checkKeys(b, "budget", {"steps", "minutes", "eval_every", "eval_batches"});
    for (auto it = b.begin(); it != b.end(); ++it) {
      std::string p = keyPath("budget", it.key());
      if (it.key() == "minutes") {
        if (!it.value().is_number() || it.value().get<double>() < 0)
          fail(p, "expected a non-negative number of minutes, got " + show(it.value()));
      } else {
        long long min = it.key() == "steps" ? 1 : 0;
        if (!it.value().is_number_integer() || it.value().get<long long>() < min)
          fail(p, std::string("expected a ") + (min ? "positive" : "non-negative") +
                      " integer, got " + show(it.value()));
      }
      m.budget[it.key()] = it.value();
    }
  }
  m.pytorch = ojson{{"enabled", false}, {"compile", false}};
  if (root.contains("pytorch")) {
    const ojson &p = root["pytorch"];
    if (!p.is_object())
      fail("pytorch", "expected an object {\"enabled\": bool, \"compile\": bool}, got " + show(p));
    checkKeys(p, "pytorch", {"enabled", "compile"});
    for (auto it = p.begin(); it != p.end(); ++it) {
      if (!it.value().is_boolean())
        fail(keyPath("pytorch", it.key()), "expected true or false, got " + show(it.value()));
      m.pytorch[it.key()] = it.value();
    }
  }
  bool pytorchDefault = m.pytorch["enabled"].get<bool>();

  std::vector<Setting> common;
  if (root.contains("set"))
    common = readSet(root["set"], "set");

  // The base spec itself must be valid, and so must the common overrides.
  {
    Spec s;
    SpecError err;
    if (!parseSpec(m.specText, {}, s, err, m.specFile))
      fail("spec", formatSpecError(m.specFile, err));
    Config probe;
    probe.name = "(set)";
    probe.origin = "set";
    probe.set = common;
    checkConfig(m, probe);
  }

  if (root.contains("runs")) {
    const ojson &runs = root["runs"];
    if (!runs.is_array())
      fail("runs", "expected an array of {\"name\", \"set\", \"batch\", \"pytorch\"}, got " +
                       show(runs));
    for (size_t i = 0; i < runs.size(); ++i) {
      std::string p = indexPath("runs", i);
      const ojson &r = runs[i];
      if (!r.is_object())
        fail(p, "expected an object, got " + show(r));
      checkKeys(r, p, {"name", "set", "batch", "pytorch"});
      Config c;
      c.origin = p;
      if (!r.contains("name") || !r["name"].is_string() || r["name"].get<std::string>().empty())
        fail(keyPath(p, "name"), "expected a non-empty string naming the configuration");
      c.name = r["name"].get<std::string>();
      c.set = common;
      if (r.contains("set"))
        mergeSet(c.set, readSet(r["set"], keyPath(p, "set")));
      if (r.contains("batch")) {
        c.batchOrigin = keyPath(p, "batch");
        checkBatch(r["batch"], c.batchOrigin);
        c.batchRequest = r["batch"];
        if (r.contains("set") && r["set"].is_object() && r["set"].contains("training.batch_size"))
          fail(c.batchOrigin, "the micro-batch is given twice (also in set.\"training.batch_size\")");
      }
      c.pytorch = pytorchDefault;
      if (r.contains("pytorch")) {
        if (!r["pytorch"].is_boolean())
          fail(keyPath(p, "pytorch"), "expected true or false, got " + show(r["pytorch"]));
        c.pytorch = r["pytorch"].get<bool>();
      }
      m.configs.push_back(std::move(c));
    }
  }

  if (root.contains("axes")) {
    const ojson &axes = root["axes"];
    if (!axes.is_object() || axes.empty())
      fail("axes", "expected a non-empty object of spec paths to arrays of values, got " +
                       show(axes));
    struct Axis {
      std::string path, label, origin;
      std::vector<ojson> values;
    };
    std::vector<Axis> list;
    std::map<std::string, int> lastSegCount;
    for (auto it = axes.begin(); it != axes.end(); ++it) {
      Axis a;
      a.path = it.key();
      a.origin = keyPath("axes", it.key());
      if (!it.value().is_array() || it.value().empty())
        fail(a.origin, "expected a non-empty array of values, got " + show(it.value()));
      for (size_t i = 0; i < it.value().size(); ++i) {
        const ojson &v = it.value()[i];
        if (a.path == "batch")
          checkBatch(v, indexPath(a.origin, i));
        else if (v.is_null() || v.is_object())
          fail(indexPath(a.origin, i), "expected a value of the spec field, got " + show(v));
        a.values.push_back(v);
      }
      size_t dot = a.path.rfind('.');
      a.label = dot == std::string::npos ? a.path : a.path.substr(dot + 1);
      ++lastSegCount[a.label];
      list.push_back(std::move(a));
    }
    for (Axis &a : list)
      if (lastSegCount[a.label] > 1)
        a.label = a.path; // two axes end in the same field name: use the full path
    std::vector<size_t> idx(list.size(), 0);
    while (true) {
      Config c;
      c.origin = "axes";
      c.set = common;
      c.pytorch = pytorchDefault;
      std::vector<Setting> extra;
      for (size_t k = 0; k < list.size(); ++k) {
        const Axis &a = list[k];
        const ojson &v = a.values[idx[k]];
        c.name += (k ? "," : "") + a.label + "=" + axisValueName(v);
        if (a.path == "batch") {
          c.batchRequest = v;
          c.batchOrigin = indexPath(a.origin, idx[k]);
        } else {
          extra.push_back({a.path, v, indexPath(a.origin, idx[k])});
        }
      }
      mergeSet(c.set, extra);
      m.configs.push_back(std::move(c));
      size_t k = list.size();
      while (k > 0 && ++idx[k - 1] == list[k - 1].values.size())
        idx[--k] = 0;
      if (k == 0)
        break;
    }
  }
  if (m.configs.empty())
    fail("(root)", "no configurations: give \"runs\" and/or \"axes\"");

  // Names: unique, and distinct directories.
  std::map<std::string, std::string> byName, bySafe;
  for (Config &c : m.configs) {
    std::string where = c.origin == "axes" ? "axes" : keyPath(c.origin, "name");
    if (c.name == "." || c.name == "..")
      fail(where, "'" + c.name + "' cannot name a configuration");
    c.safe = safeConfigName(c.name);
    if (byName.count(c.name))
      fail(where, "duplicate configuration name '" + c.name + "' (also " + byName[c.name] + ")");
    if (bySafe.count(c.safe))
      fail(where, "configuration '" + c.name + "' has the same directory name '" + c.safe +
                      "' as " + bySafe[c.safe]);
    byName[c.name] = where;
    bySafe[c.safe] = "'" + c.name + "'";
  }
  for (Config &c : m.configs)
    checkConfig(m, c);
  return m;
}

//===----------------------------------------------------------------------------===//
// One configuration
//===----------------------------------------------------------------------------===//

ojson planJson(const mlir::tg::PlanReport &r) {
  return ojson{{"persistent_bytes", r.persistentBytes},
               {"arena_bytes", r.arenaBytes},
               {"workspace_bytes", r.workspaceBytes},
               {"total_bytes", r.totalBytes()},
               {"peak_forward_bytes", r.peakForward},
               {"peak_backward_bytes", r.peakBackward},
               {"peak_optimizer_bytes", r.peakOptimizer},
               {"peak_eval_bytes", r.peakEval},
               {"step_flops", r.stepFlops},
               {"extra_flops", r.extraFlops},
               {"remat_policy", r.rematPolicy}};
}

/// The shared state of the per-configuration loop.
struct Context {
  const Matrix &m;
  std::string out, target, self;
  mlir::tg::CalibrationTable table; ///< the cost model's table, read once (loadCalibration)
  std::string tableOrigin;          ///< its path, or what stands in for it
  bool haveTable = false;           ///< false: it could not be read (reported once)
  long long memory = -1; ///< -1: unknown
  long long contextBytes = 0; ///< held outside the plan: plan + contextBytes <= memory
  bool force = false;
  size_t index = 0, total = 0;
  double secondsDone = 0;
  size_t countDone = 0;
  int compiled = 0, upToDate = 0, refused = 0, errors = 0;

  void progress(const Config &c, const std::string &what) const {
    llvm::errs() << "[" << index << "/" << total << "] " << c.name << ": " << what << "\n";
  }
  std::string eta() const {
    if (countDone == 0)
      return "";
    double left = secondsDone / (double)countDone * (double)(total - index + 1);
    return " (ETA ~" + std::to_string((long long)(left + 0.5)) + " s)";
  }
};

/// Plans, compiles and records one configuration; writes its config.json.
void processConfig(Context &ctx, const Config &c) {
  auto start = Clock::now();
  const Matrix &m = ctx.m;
  llvm::SmallString<256> dir(ctx.out);
  llvm::sys::path::append(dir, "configs", c.safe);
  llvm::sys::fs::create_directories(dir);
  std::string cfgPath = (dir + "/config.json").str(), exePath = (dir + "/train").str(),
              specPath = (dir + "/spec.json").str(), logPath = (dir + "/compile.log").str();

  const Spec &spec = c.spec;
  ojson setObj = ojson::object();
  for (const Setting &s : c.set)
    setObj[s.path] = s.value;
  ojson cfg;
  cfg["name"] = c.name;
  cfg["status"] = "compiled";
  cfg["set"] = setObj;
  cfg["batch_request"] = c.batchRequest;
  cfg["batch"] = spec.training.batch_size;
  cfg["grad_accum"] = spec.training.grad_accum;
  cfg["context"] = spec.model.context;
  cfg["tokens_per_step"] = 0;
  cfg["precision"] = spec.training.precision;
  cfg["attention_kernel"] = spec.training.attention.kernel;
  cfg["window"] = spec.training.attention.window;
  cfg["checkpointing"] = spec.training.checkpointing;
  cfg["n_params"] = parameterCount(spec.model);
  cfg["plan"] = nullptr;
  cfg["max_batch"] = nullptr;
  cfg["exe"] = "train";
  cfg["spec"] = "spec.json";
  cfg["pytorch"] = c.pytorch;
  cfg["target"] = ctx.target;
  cfg["hash"] = "";

  auto finish = [&](const std::string &status, const std::string &reason) {
    cfg["status"] = status;
    if (!reason.empty())
      cfg["reason"] = reason;
    writeAtomically(cfgPath, cfg.dump(2) + "\n");
    ctx.secondsDone += std::chrono::duration<double>(Clock::now() - start).count();
    ++ctx.countDone;
  };

  // The hash covers the base spec, the matrix entry and the target; once the micro-batch
  // is resolved, the effective spec too (a "max" that moved recompiles).
  ojson entry{{"name", c.name}, {"set", setObj}, {"batch_request", c.batchRequest},
              {"target", ctx.target}};
  std::string hashInput = m.specText + '\0' + entry.dump();
  cfg["hash"] = fnv1a(hashInput + '\0' + std::to_string(ctx.memory) + '\0' +
                      std::to_string(ctx.contextBytes));

  ctx.progress(c, "planning…");
  int64_t batch = spec.training.batch_size;
  if (c.batchRequest.is_string()) { // "max"
    int64_t bytes = 0;
    batch = maxMicroBatch(spec, {}, ctx.target, ctx.memory, ctx.contextBytes, &bytes,
                          /*progress=*/false);
    // The reserve beside the plan as reports say it ("" when there is none).
    const std::string reserveName =
        ctx.target == "cuda" ? " + CUDA context reserve " : " + reserve ";
    const std::string reserve = ctx.contextBytes ? reserveName +
                                                       std::to_string(ctx.contextBytes) +
                                                       " bytes (" + gib(ctx.contextBytes) + ")"
                                                 : "";
    if (batch == 0) {
      mlir::tg::PlanReport r;
      std::string why;
      std::string reason;
      if (planWith(spec, {"training.batch_size=1"}, ctx.target, r, true, &why))
        reason = "no micro-batch fits " + std::to_string(ctx.memory) + " bytes (" +
                 gib(ctx.memory) + "): micro-batch 1 plans " + std::to_string(r.totalBytes()) +
                 " bytes (" + gib(r.totalBytes()) + ")" + reserve;
      else
        reason = "the plan is refused: " + why;
      cfg["batch"] = 0;
      cfg["max_batch"] = ojson{{"memory_bytes", ctx.memory},
                               {"context_bytes", ctx.contextBytes},
                               {"max", 0}, {"plan_at_max_bytes", nullptr},
                               {"plan_at_max_plus_1_bytes", r.totalBytes() ? ojson(r.totalBytes()) : ojson()}};
      ++ctx.refused;
      ctx.progress(c, "refused: " + reason);
      finish("refused", reason);
      return;
    }
    mlir::tg::PlanReport next;
    ojson nextBytes = nullptr;
    if (planWith(spec, {"training.batch_size=" + std::to_string(batch + 1)}, ctx.target, next,
                 true))
      nextBytes = next.totalBytes();
    cfg["max_batch"] = ojson{{"memory_bytes", ctx.memory},
                             {"context_bytes", ctx.contextBytes},
                             {"max", batch},
                             {"plan_at_max_bytes", bytes},
                             {"plan_at_max_plus_1_bytes", nextBytes}};
    ctx.progress(c, "max micro-batch " + std::to_string(batch) + " (plan " + gib(bytes) +
                        (ctx.contextBytes ? reserveName + gib(ctx.contextBytes)
                                          : std::string()) +
                        " of " + gib(ctx.memory) + ")");
  }
  cfg["batch"] = batch;
  cfg["set"]["training.batch_size"] = batch;
  cfg["tokens_per_step"] = batch * spec.model.context * spec.training.grad_accum;

  // The effective spec at the resolved micro-batch.
  Spec eff;
  SpecError err;
  if (!parseSpec(spec.json, {"training.batch_size=" + std::to_string(batch)}, eff, err)) {
    ++ctx.errors;
    ctx.progress(c, "error: " + err.str());
    finish("error", "internal: " + err.str());
    return;
  }
  std::string hash = fnv1a(hashInput + '\0' + eff.json);
  cfg["hash"] = hash;
  if (!writeAtomically(specPath, eff.json)) {
    ++ctx.errors;
    finish("error", "cannot write " + specPath);
    return;
  }

  mlir::tg::PlanReport report;
  std::string why;
  std::vector<mlir::tg::RuntimeCall> calls; // the cost model's input
  if (!planWith(eff, {}, ctx.target, report, /*quiet=*/true, &why, &calls)) {
    std::string reason = "the plan is refused: " + (why.empty() ? "(no diagnostic)" : why);
    ++ctx.refused;
    ctx.progress(c, "refused: " + reason);
    finish("refused", reason);
    return;
  }
  if (report.stepFlops == 0) {
    // The FLOP count comes from the rematerialization pass, which the pipeline runs only
    // under a checkpointing policy; it counts the micro-step before any recomputation,
    // so the selective plan's count is this configuration's too.
    mlir::tg::PlanReport sel;
    if (planWith(eff, {"training.checkpointing=selective"}, ctx.target, sel, true))
      report.stepFlops = sel.stepFlops;
  }
  cfg["plan"] = planJson(report);
  // The cost model's prediction (docs/cost-model.md), which the report sets beside the
  // measured step time; null when it cannot be made (the reason is recorded).
  if (ctx.haveTable) {
    StepEstimate est = estimateStep(eff, ctx.table, ctx.tableOrigin, calls);
    cfg["predicted"] = ojson{{"step_ms", est.stepMs},
                             {"tokens_per_s", est.tokensPerS},
                             {"mfu", est.mfu},
                             {"calibration", est.calibration},
                             {"calibration_device", est.device},
                             {"roofline_only", est.rooflineOnly}};
  } else {
    cfg["predicted"] = ojson{{"error", "cannot read the calibration table"}};
  }

  // Up to date: same hash, compiled, executable present.
  if (!ctx.force && llvm::sys::fs::exists(exePath)) {
    std::string old;
    if (readFile(cfgPath, old)) {
      ojson prev = ojson::parse(old, nullptr, /*allow_exceptions=*/false);
      if (prev.is_object() && prev.value("hash", "") == hash &&
          prev.value("status", "") == "compiled") {
        ++ctx.upToDate;
        ctx.progress(c, "up to date");
        finish("compiled", "");
        return;
      }
    }
  }

  ctx.progress(c, "compiling…" + ctx.eta());
  llvm::sys::fs::remove(exePath);
  llvm::sys::fs::remove(logPath); // the redirect does not truncate
  // A child that ends with this process, with the host compiler under it (its own
  // process group); the redirect truncates the log.
  std::string errMsg;
  bool failedToRun = false;
  int rc = runTiedToParent({std::string(ctx.self), "compile", std::string(specPath),
                            "--target", std::string(ctx.target), "-o", std::string(exePath)},
                           &logPath, /*ownGroup=*/true, errMsg, failedToRun);
  std::string log;
  readFile(logPath, log);
  if (rc != 0 || !llvm::sys::fs::exists(exePath)) {
    std::string how = failedToRun ? "could not start tgc compile: " + errMsg
                      : rc < 0    ? "tgc compile crashed (" + errMsg + ")"
                                  : "tgc compile failed (exit " + std::to_string(rc) + ")";
    std::string reason = how + (log.empty() ? "" : ":\n" + tail(log));
    ++ctx.errors;
    ctx.progress(c, "error: " + how + " (log: " + logPath + ")");
    finish("error", reason);
    return;
  }
  ++ctx.compiled;
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", secs);
  ctx.progress(c, std::string("compiled in ") + buf + " s");
  finish("compiled", "");
}

} // namespace

std::string safeConfigName(const std::string &name) {
  std::string s = name;
  for (char &ch : s)
    if (!std::isalnum((unsigned char)ch) && (ch == '\0' || !std::strchr("._=,+-", ch)))
      ch = '_';
  return s;
}

std::vector<std::string> splitNames(const std::string &value,
                                    const std::vector<std::string> &known) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < value.size()) {
    size_t best = 0;
    for (const std::string &k : known)
      if (k.size() > best && value.compare(pos, k.size(), k) == 0 &&
          (pos + k.size() == value.size() || value[pos + k.size()] == ','))
        best = k.size();
    if (best == 0) {
      size_t comma = value.find(',', pos);
      best = (comma == std::string::npos ? value.size() : comma) - pos;
    }
    if (best > 0)
      out.push_back(value.substr(pos, best));
    pos += best + 1;
  }
  return out;
}

int runExperiment(const ExperimentOptions &opts) {
  if (opts.matrixFile.empty()) {
    llvm::errs() << "tgc: error: experiment: give the matrix file (tgc experiment MATRIX.json "
                    "--out DIR)\n";
    return 2;
  }
  if (opts.out.empty()) {
    llvm::errs() << "tgc: error: experiment: --out DIR is required\n";
    return 2;
  }
  if (opts.stage != "compile" && opts.stage != "all") {
    llvm::errs() << "tgc: error: --stage: expected compile or all, got '" << opts.stage << "'\n";
    return 2;
  }
  if (!(opts.minutes >= 0) || !std::isfinite(opts.minutes)) {
    llvm::errs() << "tgc: error: --minutes: expected a number of minutes > 0, got "
                 << llvm::formatv("{0}", opts.minutes).str() << "\n";
    return 2;
  }
  Matrix m;
  try {
    m = readMatrix(opts.matrixFile);
  } catch (const MatrixError &e) {
    bool syntax = !e.path.empty() && std::isdigit((unsigned char)e.path[0]);
    llvm::errs() << "tgc: error: " << opts.matrixFile
                 << (e.path.empty() ? "" : (syntax ? ":" : ": ") + e.path) << ": " << e.message
                 << "\n";
    return 2;
  }

  // --only / --skip.
  std::vector<std::string> names;
  for (const Config &c : m.configs)
    names.push_back(c.name);
  std::set<std::string> only, skip;
  for (auto [list, flag, dest] : {std::make_tuple(&opts.only, "--only", &only),
                                  std::make_tuple(&opts.skip, "--skip", &skip)})
    for (const std::string &v : *list)
      for (const std::string &n : splitNames(v, names)) {
        if (std::find(names.begin(), names.end(), n) == names.end()) {
          llvm::errs() << "tgc: error: " << flag << ": unknown configuration '" << n
                       << "'; the matrix " << opts.matrixFile << " has: "
                       << joinList(names, " | ") << "\n";
          return 2;
        }
        dest->insert(n);
      }
  std::vector<const Config *> selected;
  for (const Config &c : m.configs)
    if ((only.empty() || only.count(c.name)) && !skip.count(c.name))
      selected.push_back(&c);

  // Target.
  std::string target = opts.target.empty() ? m.target : opts.target;
  if (target != "auto" && target != "cpu" && target != "cuda") {
    llvm::errs() << "tgc: error: --target: expected auto, cpu or cuda, got '" << target << "'\n";
    return 2;
  }
  bool gpu = haveGpu();
  if (target == "auto")
    target = (TGC_CUDA_ENABLED && gpu) ? "cuda" : "cpu";

  // Memory.
  std::string memText = opts.memory.empty() ? m.memory : opts.memory;
  bool needMax = std::any_of(selected.begin(), selected.end(), [](const Config *c) {
    return c->batchRequest.is_string();
  });
  // The device memory outside the plan (CUDA context, library handles), counted against
  // "memory": plan + contextBytes <= memory.
  const long long contextBytes = contextBytesOption(target, opts.contextBytes, opts.calibration);
  if (contextBytes < 0)
    return 2;
  long long memory = -1;
  if (memText == "auto") {
    // nvidia-smi's free memory on an idle GPU: no context of ours exists yet, so the
    // reserve for it is still to come out of it (in the fit, not here).
    long long free = gpu ? gpuFreeBytes() : -1;
    if (free > 0) {
      memory = free;
      llvm::errs() << "tgc: experiment: memory: " << memory << " bytes (" << gib(memory)
                   << ": GPU 0 free memory from nvidia-smi; a plan gets it minus the "
                   << (target == "cuda" ? "CUDA context " : "") << "reserve of "
                   << contextBytes << " bytes (" << gib(contextBytes) << ", --context-bytes))\n";
    } else if (needMax) {
      llvm::errs() << "tgc: error: " << opts.matrixFile
                   << ": memory: \"auto\" reads the free GPU memory from nvidia-smi, which is "
                      "absent or failed here, and a configuration asks for \"batch\": \"max\"; "
                      "set \"memory\" in the matrix (e.g. \"24GiB\") or pass --memory BYTES\n";
      return 2;
    }
  } else {
    memory = parseBytes(memText);
    if (memory <= 0) {
      llvm::errs() << "tgc: error: --memory: expected auto or a size such as 24GiB, got '"
                   << memText << "'\n";
      return 2;
    }
  }

  if (needMax && memory > 0 && contextBytes >= memory) {
    llvm::errs() << "tgc: error: --context-bytes: the reserve of " << contextBytes
                 << " bytes outside the plan"
                 << (opts.contextBytes.empty() ? " (the default for target " + target + ")"
                                               : std::string())
                 << " is not below the memory of " << memory << " bytes (" << memText
                 << "): nothing is left for the plans of \"batch\": \"max\" (memory is the "
                    "device's whole memory)\n";
    return 2;
  }

  // Data directory (relative to the current directory).
  std::string data = opts.data.empty() ? m.data : opts.data;
  ojson dataJson = nullptr;
  if (!data.empty()) {
    llvm::SmallString<256> abs(data);
    llvm::sys::fs::make_absolute(abs);
    llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
    dataJson = abs.str().str();
    if (!llvm::sys::fs::is_directory(abs))
      llvm::errs() << "tgc: warning: data directory " << abs
                   << " does not exist (prepare it with `tgc data prepare --out " << data
                   << "`)\n";
  }

  // The output directory and experiment.json.
  llvm::SmallString<256> outAbs(opts.out);
  llvm::sys::fs::make_absolute(outAbs);
  if (std::error_code ec = llvm::sys::fs::create_directories(outAbs + "/configs")) {
    llvm::errs() << "tgc: error: " << opts.out << ": cannot create: " << ec.message() << "\n";
    return 1;
  }
  auto absPath = [](const std::string &p) {
    llvm::SmallString<256> a(p);
    llvm::sys::fs::make_absolute(a);
    llvm::sys::path::remove_dots(a, true);
    return a.str().str();
  };
  std::set<const Config *> sel(selected.begin(), selected.end());
  ojson listed = ojson::array();
  for (const Config &c : m.configs)
    if (sel.count(&c) ||
        llvm::sys::fs::exists(outAbs + "/configs/" + c.safe + "/config.json"))
      listed.push_back(c.name);
  ojson exp{{"name", m.name},
            {"description", m.description},
            {"matrix_file", absPath(m.file)},
            {"spec_file", absPath(m.specFile)},
            {"data", dataJson},
            {"target", target},
            {"memory_bytes", memory > 0 ? ojson(memory) : ojson()},
            {"context_bytes", contextBytes},
            {"budget", m.budget},
            {"pytorch", m.pytorch},
            {"configs", listed}};
  if (!writeAtomically((outAbs + "/experiment.json").str(), exp.dump(2) + "\n"))
    return 1;

  std::string self =
      llvm::sys::fs::getMainExecutable("tgc", (void *)(intptr_t)&runExperiment);
  Context ctx{m, outAbs.str().str(), target, self};
  ctx.memory = memory;
  ctx.contextBytes = contextBytes;
  ctx.haveTable = loadCalibration(opts.calibration, target, ctx.table, ctx.tableOrigin);
  ctx.force = opts.force;
  ctx.total = selected.size();
  llvm::errs() << "tgc: experiment '" << m.name << "': " << selected.size() << " of "
               << m.configs.size() << " configurations, target " << target << ", into "
               << outAbs << "\n";
  for (const Config *c : selected) {
    ++ctx.index;
    processConfig(ctx, *c);
  }
  llvm::errs() << "tgc: experiment: " << ctx.compiled + ctx.upToDate << " compiled ("
               << ctx.upToDate << " up to date), " << ctx.refused << " refused, " << ctx.errors
               << " failed\n";
  int compileRc = ctx.errors ? 1 : 0;
  if (opts.stage == "compile")
    return compileRc;

  // Run stage: hand the directory to the Python runner.
  std::string runner = getenv("TGC_EXPERIMENT_RUNNER")
                           ? getenv("TGC_EXPERIMENT_RUNNER")
                           : std::string(TGC_SOURCE_DIR) + "/tools/experiment/run.py";
  if (!llvm::sys::fs::exists(runner)) {
    llvm::errs() << "tgc: error: the experiment runner " << runner
                 << " is missing (set TGC_EXPERIMENT_RUNNER, or stop after compiling with "
                    "--stage compile)\n";
    return 1;
  }
  // TGC_PYTHON, else Debian's /usr/bin/python3 (the one with python3-torch, numpy and
  // matplotlib, as the tests use), else python3 from PATH.
  llvm::ErrorOr<std::string> python = std::string("/usr/bin/python3");
  if (const char *env = getenv("TGC_PYTHON"))
    python = std::string(env);
  else if (!llvm::sys::fs::can_execute(*python))
    python = llvm::sys::findProgramByName("python3");
  if (!python) {
    llvm::errs() << "tgc: error: python3 not found (set TGC_PYTHON; needed to run " << runner
                 << ")\n";
    return 1;
  }
  std::vector<std::string> args = {*python, runner, outAbs.str().str()};
  for (auto [list, flag] : {std::make_pair(&opts.only, "--only"),
                            std::make_pair(&opts.skip, "--skip")})
    if (!list->empty()) {
      args.push_back(flag);
      args.push_back(joinList(*list, ","));
    }
  if (opts.noPytorch)
    args.push_back("--no-pytorch");
  if (opts.minutes > 0) {
    args.push_back("--minutes");
    args.push_back(llvm::formatv("{0}", opts.minutes).str());
  }
  llvm::errs() << "tgc: experiment: running";
  for (const std::string &a : args)
    llvm::errs() << " " << a;
  llvm::errs() << "\n";
  // The runner ends with this process too (it stays in this process group, so a
  // Ctrl-C reaches it and what it runs directly).
  std::string errMsg;
  bool failedToRun = false;
  int rc = runTiedToParent(args, nullptr, /*ownGroup=*/false, errMsg, failedToRun);
  if (rc < 0) {
    llvm::errs() << "tgc: error: the experiment runner failed: " << errMsg << "\n";
    return 1;
  }
  return rc ? rc : compileRc;
}

} // namespace tgc
