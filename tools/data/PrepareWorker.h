// PrepareWorker.h — the Python helper process of `tgc data prepare`.
//
// Hugging Face `tokenizers` (encoding with a pretrained tokenizer.json) and `pyarrow`
// (reading .parquet inputs) are Python packages; no C++ build of either is available here.
// prepare therefore starts one Python process running the script embedded in this library
// (PrepareWorker.cpp, kPrepareWorkerPy) and talks to it over two pipes. Each message, in
// both directions, is
//     uint64 LE json_bytes | uint64 LE payload_bytes | JSON object | raw payload
// A reply with an "error" key is a failure whose text names the file and place.
// The worker's stdout is the protocol channel only (anything the libraries print goes to
// stderr, which is inherited).
#ifndef TGC_TOOLS_DATA_PREPAREWORKER_H
#define TGC_TOOLS_DATA_PREPAREWORKER_H

#include <nlohmann/json.hpp>

#include <string>
#include <sys/types.h>

namespace tgc {

/// The Python worker script (see PrepareWorker.cpp).
extern const char* const kPrepareWorkerPy;

/// Which interpreter runs the worker: `explicit_python` if not empty (it must exist), else
/// $TGC_PYTHON if set (it must exist), else the first existing of
/// <dir of this executable>/../../.venv-hf/bin/python (bin/tgc of a build tree inside the
/// repository), <source tree>/.venv-hf/bin/python (the checkout this was built from), then
/// "python3" from PATH. Returns "" and sets *err when an explicit choice does not exist.
std::string findWorkerPython(const std::string& explicit_python, std::string* err);

/// One running worker. Not copyable; the destructor closes its stdin and reaps it.
class PrepareWorker {
public:
  PrepareWorker() = default;
  ~PrepareWorker();
  PrepareWorker(const PrepareWorker&) = delete;
  PrepareWorker& operator=(const PrepareWorker&) = delete;

  /// Starts `python -c kPrepareWorkerPy` with RAYON_NUM_THREADS=`threads` (the thread pool
  /// of `tokenizers`' encode_batch) and checks that it can import each module of `need`
  /// (e.g. {"tokenizers"}, {"pyarrow"}). False with *err naming the interpreter, the
  /// missing module and how to install it (scripts/setup.sh or TGC_PYTHON).
  bool start(const std::string& python, int threads, const std::vector<std::string>& need,
             std::string* err);
  bool running() const { return pid_ > 0; }
  const std::string& python() const { return python_; }

  /// Sends one request (a JSON object and a payload of raw bytes).
  bool send(const nlohmann::json& request, const std::string& payload, std::string* err);
  /// Sends a request's JSON and announces `payload_bytes` bytes of payload, which the
  /// caller then sends in pieces with sendPayload() (exactly that many, before anything
  /// else is sent): a payload is never held whole.
  bool sendHeader(const nlohmann::json& request, uint64_t payload_bytes, std::string* err);
  bool sendPayload(const void* p, size_t n, std::string* err);
  /// Receives one reply. A reply holding "error" is returned as false with *err = its text.
  bool receive(nlohmann::json* reply, std::string* payload, std::string* err);
  /// Receives a reply's JSON and *payload_bytes, the size of its payload, which the caller
  /// then reads in pieces with receivePayload() (exactly that many, before the next reply).
  /// A reply holding "error" (it has no payload) is returned as false with *err = its text.
  bool receiveHeader(nlohmann::json* reply, uint64_t* payload_bytes, std::string* err);
  bool receivePayload(void* p, size_t n, std::string* err) { return readAll(p, n, err); }
  /// send() then receive().
  bool call(const nlohmann::json& request, const std::string& payload, nlohmann::json* reply,
            std::string* reply_payload, std::string* err);

private:
  bool writeAll(const void* p, size_t n, std::string* err);
  bool readAll(void* p, size_t n, std::string* err);
  std::string exitStatus();

  pid_t pid_ = -1;
  int to_ = -1, from_ = -1; ///< the worker's stdin (we write) and protocol stdout (we read)
  std::string python_;
};

} // namespace tgc

#endif // TGC_TOOLS_DATA_PREPAREWORKER_H
