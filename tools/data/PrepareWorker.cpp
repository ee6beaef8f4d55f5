// PrepareWorker.cpp — see PrepareWorker.h.
#include "tools/data/PrepareWorker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#ifndef TGC_DATA_SOURCE_DIR
#define TGC_DATA_SOURCE_DIR ""
#endif

namespace fs = std::filesystem;

namespace tgc {

// The worker. Commands (the request's "cmd"):
//   hello   {"need": [modules]}             -> {"ok", "versions"} | {"error", "missing"}
//   load    {"file", "eos_token"}           -> {"vocab_size", "eos_id", "eos_token",
//                                               "bos_token", "bos_id", "model"}
//   encode  {"n"} + payload: n uint32 byte lengths, then the n UTF-8 texts concatenated
//           -> {"n", "tokens"} + payload: n uint32 token counts, then the ids (uint32)
//   parquet {"file", "column", "batch_rows"} -> any number of
//           {"rows", "row_group", "first_row"} + payload: rows uint32 lengths
//           (0xFFFFFFFF: null), then the bytes; then {"done", "rows", "row_groups"}
// encode uses encode_batch_fast (no offsets) where this `tokenizers` has it, else
// encode_batch, without special tokens (no BOS; prepare appends the EOS itself); both run
// on tokenizers' Rust thread pool (RAYON_NUM_THREADS). The ids of a text do not depend on
// the batch it is in or on the thread count.
// Requests are read on a thread of their own into a queue of 2 and replies written from
// another (a queue of 4), in order: the worker takes a request while prepare is still
// reading its previous reply, and encodes a batch while the previous one's ids are being
// sent (encode_batch and the pipe I/O release the GIL). So prepare may send the next
// encode request before reading the previous reply without a deadlock (it keeps at most 2
// outstanding).
const char* const kPrepareWorkerPy = R"PY(
import itertools, json, os, queue, struct, sys, threading
from array import array

_out = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
sys.stdout = sys.stderr
_in = sys.stdin.buffer
_requests = queue.Queue(maxsize=2)
_replies = queue.Queue(maxsize=4)


def recv():
    h = _in.read(16)
    if len(h) < 16:
        raise EOFError
    jl, pl = struct.unpack("<QQ", h)
    j = _in.read(jl)
    p = _in.read(pl) if pl else b""
    if len(j) < jl or len(p) < pl:
        raise EOFError
    return json.loads(j), p


def _reader():
    while True:
        try:
            item = recv()
        except Exception:
            item = None
        _requests.put(item)
        if item is None:
            return


def _writer():
    while True:
        parts = _replies.get()
        if parts is None:
            return
        try:
            for p in parts:
                _out.write(p)
            _out.flush()
        except OSError:
            os._exit(1)  # prepare is gone (or failed): nobody reads the replies


def send(obj, *payload):
    """Queues one reply: obj as JSON, then the payload parts (bytes-like) back to back."""
    j = json.dumps(obj).encode()
    n = sum(memoryview(p).nbytes for p in payload)
    _replies.put((struct.pack("<QQ", len(j), n), j) + payload)


def cmd_hello(req, _):
    versions = {"python": sys.version.split()[0], "executable": sys.executable}
    for mod in req.get("need", []):
        try:
            m = __import__(mod)
        except Exception as e:
            send({"error": "cannot import %s (%s: %s)" % (mod, type(e).__name__, e),
                  "missing": mod})
            return
        versions[mod] = getattr(m, "__version__", "?")
    send({"ok": True, "versions": versions})


TOK = None
ENCODE = None


def _tokstr(v):
    if isinstance(v, dict):
        v = v.get("content")
    return v if isinstance(v, str) and v else None


def cmd_load(req, _):
    global TOK, ENCODE
    from tokenizers import Tokenizer
    path = req["file"]
    try:
        TOK = Tokenizer.from_file(path)
    except Exception as e:
        send({"error": "%s: cannot load as a Hugging Face tokenizers file (tokenizer.json): "
                       "%s: %s" % (path, type(e).__name__, e)})
        return
    ENCODE = getattr(TOK, "encode_batch_fast", None) or TOK.encode_batch
    cfg = {}
    cfg_path = os.path.join(os.path.dirname(os.path.abspath(path)), "tokenizer_config.json")
    if os.path.isfile(cfg_path):
        try:
            with open(cfg_path) as f:
                cfg = json.load(f)
        except Exception:
            cfg = {}
        if not isinstance(cfg, dict):
            cfg = {}
    eos = req.get("eos_token") or None
    if eos is not None:
        eid = TOK.token_to_id(eos)
        if eid is None:
            send({"error": "%s: --eos-token %r is not a token of this tokenizer" % (path, eos)})
            return
    else:
        cands = []
        if _tokstr(cfg.get("eos_token")):
            cands.append(_tokstr(cfg.get("eos_token")))
        cands += ["<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "<|eos|>"]
        eid = None
        for c in cands:
            eid = TOK.token_to_id(c)
            if eid is not None:
                eos = c
                break
        if eid is None:
            send({"error": "%s: no end-of-document token found (none of %s is in its "
                           "vocabulary); name one with --eos-token TOKEN" %
                           (path, ", ".join(repr(c) for c in cands))})
            return
    bos = _tokstr(cfg.get("bos_token"))
    if bos is not None and TOK.token_to_id(bos) is None:
        bos = None
    if bos is None:
        for c in ("<|begin_of_text|>", "<s>"):
            if TOK.token_to_id(c) is not None:
                bos = c
                break
    send({"ok": True, "vocab_size": TOK.get_vocab_size(with_added_tokens=True),
          "eos_id": eid, "eos_token": eos, "bos_token": bos,
          "bos_id": None if bos is None else TOK.token_to_id(bos),
          "model": type(TOK.model).__name__,
          "fast": ENCODE is not TOK.encode_batch})


def cmd_encode(req, payload):
    n = req["n"]
    lens = memoryview(payload)[:4 * n].cast("I")
    texts = []
    pos = 4 * n
    for ln in lens:
        texts.append(payload[pos:pos + ln].decode("utf-8"))
        pos += ln
    del lens
    ids = [e.ids for e in ENCODE(texts, add_special_tokens=False)]
    counts = array("I", map(len, ids))
    flat = array("I", itertools.chain.from_iterable(ids))
    send({"ok": True, "n": n, "tokens": len(flat)}, counts, flat)


def cmd_parquet(req, _):
    path = req["file"]
    col = req["column"]
    batch_rows = int(req.get("batch_rows", 8192))
    import pyarrow as pa
    import pyarrow.parquet as pq
    size = os.path.getsize(path)
    try:
        pf = pq.ParquetFile(path)
        md = pf.metadata
        schema = pf.schema_arrow
    except Exception as e:
        send({"error": "%s: not a readable Parquet file (%d bytes; the footer is read from "
                       "its end, byte offset %d): %s: %s" %
                       (path, size, max(0, size - 8), type(e).__name__, e)})
        return
    if col not in schema.names:
        send({"error": "%s: no column %r (columns: %s); name the text column with "
                       "--text-field NAME" % (path, col, ", ".join(schema.names))})
        return
    t = schema.field(col).type
    if pa.types.is_large_string(t):
        as_bytes = pa.large_binary()
    elif pa.types.is_string(t):
        as_bytes = pa.binary()
    else:
        send({"error": "%s: column %r has type %s, not a string" % (path, col, t)})
        return
    row = 0
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        off = None
        for i in range(rg.num_columns):
            c = rg.column(i)
            if c.path_in_schema == col:
                off = c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
        first = row
        try:
            for b in pf.iter_batches(batch_size=batch_rows, row_groups=[g], columns=[col],
                                     use_threads=False):
                vals = b.column(0).cast(as_bytes).to_pylist()
                lens = array("I", (0xFFFFFFFF if v is None else len(v) for v in vals))
                send({"rows": len(vals), "row_group": g, "first_row": row},
                     lens, b"".join(v for v in vals if v is not None))
                row += len(vals)
        except Exception as e:
            send({"error": "%s: row group %d of %d (rows %d..%d; failed after row %d; column "
                           "%r starts at byte offset %s): %s: %s" %
                           (path, g, md.num_row_groups, first, first + rg.num_rows - 1, row,
                            col, off, type(e).__name__, e)})
            return
    send({"done": True, "rows": row, "row_groups": md.num_row_groups})


HANDLERS = {"hello": cmd_hello, "load": cmd_load, "encode": cmd_encode,
            "parquet": cmd_parquet}

threading.Thread(target=_reader, daemon=True).start()
_writing = threading.Thread(target=_writer, daemon=True)
_writing.start()
while True:
    item = _requests.get()
    if item is None:
        break
    req, payload = item
    item = None
    try:
        HANDLERS[req["cmd"]](req, payload)
    except Exception as e:
        send({"error": "worker: %s: %s: %s" % (req.get("cmd"), type(e).__name__, e)})
    del req, payload
_replies.put(None)
_writing.join()
)PY";

std::string findWorkerPython(const std::string& explicit_python, std::string* err) {
  std::error_code ec;
  if (!explicit_python.empty()) {
    if (explicit_python.find('/') != std::string::npos && !fs::exists(explicit_python, ec)) {
      *err = "--python " + explicit_python + ": no such file";
      return "";
    }
    return explicit_python;
  }
  if (const char* env = std::getenv("TGC_PYTHON"); env && *env) {
    const std::string p = env;
    if (p.find('/') != std::string::npos && !fs::exists(p, ec)) {
      *err = "TGC_PYTHON=" + p + ": no such file";
      return "";
    }
    return p;
  }
  std::vector<fs::path> candidates;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path() / ".." / ".." / ".venv-hf" / "bin" / "python");
  if (*TGC_DATA_SOURCE_DIR)
    candidates.push_back(fs::path(TGC_DATA_SOURCE_DIR) / ".venv-hf" / "bin" / "python");
  for (const fs::path& c : candidates)
    if (fs::exists(c, ec)) return c.lexically_normal().string();
  return "python3";
}

PrepareWorker::~PrepareWorker() {
  if (to_ >= 0) ::close(to_);
  if (from_ >= 0) ::close(from_);
  if (pid_ > 0) {
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
}

std::string PrepareWorker::exitStatus() {
  if (pid_ <= 0) return "not running";
  int st = 0;
  pid_t r;
  while ((r = waitpid(pid_, &st, 0)) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (r < 0) return "unknown status";
  if (WIFEXITED(st)) return "exit status " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return std::string("killed by signal ") + strsignal(WTERMSIG(st));
  return "unknown status";
}

bool PrepareWorker::start(const std::string& python, int threads,
                          const std::vector<std::string>& need, std::string* err) {
  python_ = python;
  // A worker that dies must not kill us through SIGPIPE: the write reports EPIPE instead.
  ::signal(SIGPIPE, SIG_IGN);
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) {
    *err = std::string("cannot create pipes for the Python worker: ") + std::strerror(errno);
    return false;
  }
  const std::string rayon = std::to_string(threads > 0 ? threads : 1);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    *err = std::string("cannot fork the Python worker: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    // The worker ends with us (a killed prepare must not leave it encoding).
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    setenv("RAYON_NUM_THREADS", rayon.c_str(), 1);
    setenv("TOKENIZERS_PARALLELISM", "true", 1);
    setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
    execlp(python.c_str(), python.c_str(), "-c", kPrepareWorkerPy, (char*)nullptr);
    std::fprintf(stderr, "tgc: cannot run %s: %s\n", python.c_str(), std::strerror(errno));
    _exit(127);
  }
  pid_ = pid;
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  to_ = in_pipe[1];
  from_ = out_pipe[0];
  // 1 MiB pipes (the unprivileged maximum by default) instead of 64 KiB: fewer switches
  // between the processes per 8 MB batch. Best effort: the default size works too.
  fcntl(to_, F_SETPIPE_SZ, 1 << 20);
  fcntl(from_, F_SETPIPE_SZ, 1 << 20);
  nlohmann::json reply;
  std::string payload, why;
  nlohmann::json hello = {{"cmd", "hello"}, {"need", need}};
  const std::string how =
      "; scripts/setup.sh installs them into the repository's .venv-hf/ (Debian's python3 "
      "with transformers, tokenizers and pyarrow from PyPI), or point TGC_PYTHON (or "
      "--python) at an interpreter that has them (pip install tokenizers pyarrow)";
  if (!send(hello, "", &why) || !receive(&reply, &payload, &why)) {
    if (reply.is_object() && reply.contains("missing"))
      *err = python + ": " + why + how;
    else
      *err = "the Python worker (" + python + ") did not start: " + why + how;
    return false;
  }
  return true;
}

bool PrepareWorker::writeAll(const void* p, size_t n, std::string* err) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(to_, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      const std::string e = std::strerror(errno);
      *err = "the Python worker (" + python_ + ") stopped reading (" + e + "; " +
             exitStatus() + "); its messages are above";
      return false;
    }
    c += w;
    n -= (size_t)w;
  }
  return true;
}

bool PrepareWorker::readAll(void* p, size_t n, std::string* err) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::read(from_, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      *err = "the Python worker (" + python_ + ") ended unexpectedly (" + exitStatus() +
             "); its messages are above";
      return false;
    }
    c += r;
    n -= (size_t)r;
  }
  return true;
}

bool PrepareWorker::sendHeader(const nlohmann::json& request, uint64_t payload_bytes,
                               std::string* err) {
  if (pid_ <= 0) {
    *err = "the Python worker is not running";
    return false;
  }
  const std::string j = request.dump();
  uint64_t h[2] = {(uint64_t)j.size(), payload_bytes};
  return writeAll(h, sizeof h, err) && writeAll(j.data(), j.size(), err);
}

bool PrepareWorker::sendPayload(const void* p, size_t n, std::string* err) {
  return writeAll(p, n, err);
}

bool PrepareWorker::send(const nlohmann::json& request, const std::string& payload,
                         std::string* err) {
  return sendHeader(request, payload.size(), err) &&
         writeAll(payload.data(), payload.size(), err);
}

bool PrepareWorker::receiveHeader(nlohmann::json* reply, uint64_t* payload_bytes,
                                  std::string* err) {
  uint64_t h[2];
  if (!readAll(h, sizeof h, err)) return false;
  if (h[0] > (1ull << 30) || h[1] > (1ull << 40)) {
    *err = "the Python worker sent a malformed reply (header " + std::to_string(h[0]) + ", " +
           std::to_string(h[1]) + ")";
    return false;
  }
  std::string j(h[0], '\0');
  if (!readAll(j.data(), j.size(), err)) return false;
  *payload_bytes = h[1];
  try {
    *reply = nlohmann::json::parse(j);
  } catch (const std::exception& e) {
    *err = std::string("the Python worker sent malformed JSON: ") + e.what();
    return false;
  }
  if (reply->contains("error")) {
    *err = (*reply)["error"].is_string() ? (*reply)["error"].get<std::string>()
                                         : reply->dump();
    return false;
  }
  return true;
}

bool PrepareWorker::receive(nlohmann::json* reply, std::string* payload, std::string* err) {
  uint64_t n = 0;
  if (!receiveHeader(reply, &n, err)) return false;
  payload->clear(); // (a larger buffer is not filled with a copy of the old content)
  payload->resize(n);
  return readAll(payload->data(), payload->size(), err);
}

bool PrepareWorker::call(const nlohmann::json& request, const std::string& payload,
                         nlohmann::json* reply, std::string* reply_payload, std::string* err) {
  return send(request, payload, err) && receive(reply, reply_payload, err);
}

} // namespace tgc
