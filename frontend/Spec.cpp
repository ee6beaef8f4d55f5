//===- Spec.cpp - Parse and validate the tgc JSON spec ------------------------===//
//
// The schema is described once, by `describeSpec`, as a walk over the fields of a
// `Spec` with a visitor. Four visitors use it: one builds the schema tree (known keys,
// for "unknown field" errors and `--set` paths), one reads JSON into the struct with
// type checks, one writes the struct back as JSON (defaults filled in), and the
// semantic rules (`checkSemantics`) run on the filled struct.
//
// Internally errors are thrown as `SpecError` and caught at the public entry points.
//
//===----------------------------------------------------------------------------===//

#include "frontend/Spec.h"
#include "dialect/TgEnums.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <sstream>
#include <unordered_set>

namespace tgc {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr int64_t kMaxDim = 2147483647;  // 2^31-1
// Sizes beyond which a spec is refused before any IR is built (docs/spec.md, "Limits"):
// tgc builds ~200 ops per layer over three step functions and plans them, in time and
// memory that grow faster than linearly with the layer count (1000 layers: ~4 s, ~2.4 GB).
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxRanks = 64;  ///< training.distributed.ranks
constexpr long double kMaxParams = 1e12;        // 16 TB of fp32 values, grads and moments
constexpr long double kMaxTensorElems = 1099511627776.0L; // 2^40 elements in one tensor

//===----------------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------------===//

[[noreturn]] void fail(const std::string &path, const std::string &message) {
  throw SpecError{path, message};
}

/// Joins a parent path and a key: ("training", "seed") -> "training.seed". An empty key
/// (legal JSON, never a field) is shown as "" so that the path is never empty.
std::string join(const std::string &parent, const std::string &key) {
  const std::string k = key.empty() ? "\"\"" : key;
  return parent.empty() ? k : parent + "." + k;
}

/// A JSON value as it appears in messages, shortened if long.
std::string show(const json &v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

/// A double printed the short way (0.001, 1e-08, 770).
std::string showNum(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// A double printed with as many digits as it takes to read back the same value
/// (0.99999999, 1e-50): messages about float32 rounding must not round it themselves.
std::string showExact(double v) {
  char buf[40];
  for (int p = 6; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

/// Levenshtein distance between two short strings.
size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

/// The closest candidate within edit distance 2 (1 for words of up to 4 characters,
/// so that "fp8" does not suggest "fp32"); "" if none; ties go to the first.
std::string closest(const std::string &word, const std::vector<std::string> &candidates) {
  std::string best;
  size_t bestDist = word.size() <= 4 ? 2 : 3;
  for (const auto &c : candidates) {
    size_t d = editDistance(word, c);
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  return best;
}

/// " (did you mean 'X'?)", or "" when there is no suggestion.
std::string didYouMean(const std::string &suggestion) {
  return suggestion.empty() ? "" : " (did you mean '" + suggestion + "'?)";
}

/// "a, b, c".
std::string joinList(const std::vector<std::string> &items) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s;
}

//===----------------------------------------------------------------------------===//
// The schema, described once
//===----------------------------------------------------------------------------===//

/// How a leaf field is typed in JSON.
enum class Kind { PosInt, NonNegInt, Int, Number, Bool, String, Pair };

/// Visits the fields of a Spec in schema (and output) order.
struct SpecVisitor {
  virtual ~SpecVisitor() = default;
  virtual void object(const char *key, const std::function<void()> &body) = 0;
  virtual void integer(const char *key, int64_t &v, Kind k) = 0;
  virtual void number(const char *key, double &v) = 0;
  virtual void boolean(const char *key, bool &v) = 0;
  virtual void string(const char *key, std::string &v) = 0;
  virtual void pair(const char *key, double &a, double &b) = 0;
};

/// The schema: every field of the spec, its JSON type and its place in the tree.
void describeSpec(Spec &s, SpecVisitor &v) {
  v.string("name", s.name);
  v.object("model", [&] {
    ModelSpec &m = s.model;
    v.integer("vocab_size", m.vocab_size, Kind::PosInt);
    v.integer("context", m.context, Kind::PosInt);
    v.integer("d_model", m.d_model, Kind::PosInt);
    v.integer("n_layers", m.n_layers, Kind::PosInt);
    v.integer("n_heads", m.n_heads, Kind::PosInt);
    v.integer("d_ff", m.d_ff, Kind::PosInt);
    v.boolean("tie_embeddings", m.tie_embeddings);
    v.boolean("attention_bias", m.attention_bias);
    v.boolean("mlp_bias", m.mlp_bias);
    v.number("dropout", m.dropout);
    v.string("positional", m.positional);
    v.string("activation", m.activation);
    v.number("layer_norm_eps", m.layer_norm_eps);
    v.string("norm", m.norm);
    v.boolean("mlp_gated", m.mlp_gated);
    v.integer("n_kv_heads", m.n_kv_heads, Kind::NonNegInt);
    v.integer("head_dim", m.head_dim, Kind::NonNegInt);
    v.number("rope_theta", m.rope_theta);
    v.object("rope_scaling", [&] {
      v.number("factor", m.rope_scaling.factor);
      v.number("low_freq_factor", m.rope_scaling.low_freq_factor);
      v.number("high_freq_factor", m.rope_scaling.high_freq_factor);
      v.integer("original_context", m.rope_scaling.original_context, Kind::PosInt);
    });
  });
  v.object("training", [&] {
    TrainingSpec &t = s.training;
    v.integer("batch_size", t.batch_size, Kind::PosInt);
    v.integer("grad_accum", t.grad_accum, Kind::PosInt);
    v.string("precision", t.precision);
    v.object("attention", [&] {
      v.string("kernel", t.attention.kernel);
      v.integer("window", t.attention.window, Kind::NonNegInt);
      v.string("impl", t.attention.impl);
    });
    v.string("checkpointing", t.checkpointing);
    v.integer("loss_chunk_bytes", t.loss_chunk_bytes, Kind::NonNegInt);
    v.string("bias_rows", t.bias_rows);
    v.string("gradients", t.gradients);
    v.string("gradient_dtype", t.gradient_dtype);
    v.string("master_values", t.master_values);
    v.object("loss_scaling", [&] {
      v.number("init", t.loss_scale_init);
      v.integer("growth_interval", t.loss_scale_growth_interval, Kind::PosInt);
    });
    v.object("optimizer", [&] {
      OptimizerSpec &o = t.optimizer;
      v.string("name", o.name);
      v.number("lr", o.lr);
      v.number("min_lr", o.min_lr);
      v.pair("betas", o.beta1, o.beta2);
      v.number("eps", o.eps);
      v.number("weight_decay", o.weight_decay);
      v.number("grad_clip", o.grad_clip);
      v.integer("warmup_steps", o.warmup_steps, Kind::NonNegInt);
      v.string("decay", o.decay);
      v.boolean("decay_embeddings", o.decay_embeddings);
      v.string("offload", o.offload);
    });
    v.integer("seed", t.seed, Kind::NonNegInt);
    v.integer("ignore_index", t.ignore_index, Kind::Int);
    v.object("distributed", [&] {
      v.integer("ranks", t.distributed.ranks, Kind::PosInt);
      v.integer("zero", t.distributed.zero, Kind::NonNegInt);
    });
  });
}

/// A node of the schema tree: an object (with children) or a leaf of some Kind.
struct SchemaNode {
  std::string key;
  bool isObject = false;
  Kind kind = Kind::String;
  std::vector<SchemaNode> children;

  const SchemaNode *child(const std::string &k) const {
    for (const auto &c : children)
      if (c.key == k) return &c;
    return nullptr;
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> ks;
    for (const auto &c : children) ks.push_back(c.key);
    return ks;
  }
};

/// Builds the schema tree from describeSpec.
struct SchemaBuilder : SpecVisitor {
  std::vector<SchemaNode *> stack;
  void leaf(const char *key, Kind k) {
    SchemaNode n;
    n.key = key;
    n.kind = k;
    stack.back()->children.push_back(n);
  }
  void object(const char *key, const std::function<void()> &body) override {
    SchemaNode n;
    n.key = key;
    n.isObject = true;
    stack.back()->children.push_back(n);
    stack.push_back(&stack.back()->children.back());
    body();
    stack.pop_back();
  }
  void integer(const char *key, int64_t &, Kind k) override { leaf(key, k); }
  void number(const char *key, double &) override { leaf(key, Kind::Number); }
  void boolean(const char *key, bool &) override { leaf(key, Kind::Bool); }
  void string(const char *key, std::string &) override { leaf(key, Kind::String); }
  void pair(const char *key, double &, double &) override { leaf(key, Kind::Pair); }
};

/// The schema tree, built once.
const SchemaNode &schema() {
  static const SchemaNode root = [] {
    SchemaNode r;
    r.isObject = true;
    SchemaBuilder b;
    b.stack.push_back(&r);
    Spec dummy;
    describeSpec(dummy, b);
    return r;
  }();
  return root;
}

/// Every dotted path in the schema whose last segment is `key` (for hints such as
/// "model.batch_size: unknown field (did you mean 'training.batch_size'?)").
void findKeyElsewhere(const SchemaNode &n, const std::string &prefix, const std::string &key,
                      std::vector<std::string> &out) {
  for (const auto &c : n.children) {
    std::string p = join(prefix, c.key);
    if (c.key == key) out.push_back(p);
    if (c.isObject) findKeyElsewhere(c, p, key, out);
  }
}

/// The "unknown field" message for `key` under schema object `n`.
std::string unknownFieldMessage(const SchemaNode &n, const std::string &key) {
  std::string near = closest(key, n.keys());
  if (near.empty()) {
    std::vector<std::string> elsewhere;
    findKeyElsewhere(schema(), "", key, elsewhere);
    if (elsewhere.size() == 1) near = elsewhere[0];
  }
  return "unknown field" + didYouMean(near);
}

/// Rejects keys the schema does not know, recursively (values of known keys that are
/// not objects are left to the type checks).
void checkUnknownFields(const json &j, const SchemaNode &n, const std::string &path) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const SchemaNode *c = n.child(it.key());
    if (!c) fail(join(path, it.key()), unknownFieldMessage(n, it.key()));
    if (c->isObject && it.value().is_object())
      checkUnknownFields(it.value(), *c, join(path, it.key()));
  }
}

//===----------------------------------------------------------------------------===//
// Reading JSON into the struct (type checks), writing it back
//===----------------------------------------------------------------------------===//

/// Reads a JSON object into a Spec, checking each field's JSON type. Absent fields and
/// null keep their defaults.
struct Reader : SpecVisitor {
  std::vector<const json *> stack;
  std::vector<std::string> paths;

  /// The value of `key` in the current object, or null if absent or null.
  const json *get(const char *key) {
    const json &o = *stack.back();
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return nullptr;
    return &*it;
  }
  std::string at(const char *key) { return join(paths.back(), key); }

  void object(const char *key, const std::function<void()> &body) override {
    const json *j = get(key);
    if (!j) return;
    if (!j->is_object()) fail(at(key), "expected an object, got " + show(*j));
    stack.push_back(j);
    paths.push_back(at(key));
    body();
    stack.pop_back();
    paths.pop_back();
  }
  void integer(const char *key, int64_t &v, Kind k) override {
    const json *j = get(key);
    if (!j) return;
    const char *expected = k == Kind::PosInt      ? "a positive integer"
                           : k == Kind::NonNegInt ? "a non-negative integer"
                                                  : "an integer";
    std::string bad = "expected " + std::string(expected) + ", got " + show(*j);
    int64_t x = 0;
    if (j->is_number_unsigned()) {
      if (j->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        fail(at(key), show(*j) + " is too large");
      x = int64_t(j->get<uint64_t>());
    } else if (j->is_number_integer()) {
      x = j->get<int64_t>();
    } else if (j->is_number_float()) {
      // Integral floats (1e3, 64.0) are accepted; 2^53 is the exactness limit.
      double d = j->get<double>();
      if (!std::isfinite(d) || std::floor(d) != d) fail(at(key), bad);
      if (std::fabs(d) > 9007199254740992.0) fail(at(key), show(*j) + " is too large");
      x = int64_t(d);
    } else {
      fail(at(key), bad);
    }
    if ((k == Kind::PosInt && x <= 0) || (k == Kind::NonNegInt && x < 0)) fail(at(key), bad);
    v = x;
  }
  void number(const char *key, double &v) override {
    const json *j = get(key);
    if (!j) return;
    if (!j->is_number()) fail(at(key), "expected a number, got " + show(*j));
    v = j->get<double>();
  }
  void boolean(const char *key, bool &v) override {
    const json *j = get(key);
    if (!j) return;
    if (!j->is_boolean()) fail(at(key), "expected true or false, got " + show(*j));
    v = j->get<bool>();
  }
  void string(const char *key, std::string &v) override {
    const json *j = get(key);
    if (!j) return;
    if (!j->is_string()) fail(at(key), "expected a string, got " + show(*j));
    v = j->get<std::string>();
  }
  void pair(const char *key, double &a, double &b) override {
    const json *j = get(key);
    if (!j) return;
    if (!j->is_array() || j->size() != 2 || !(*j)[0].is_number() || !(*j)[1].is_number())
      fail(at(key), "expected an array of 2 numbers, got " + show(*j));
    a = (*j)[0].get<double>();
    b = (*j)[1].get<double>();
  }
};

/// Writes a Spec as ordered JSON, in schema order, every field present.
struct Writer : SpecVisitor {
  std::vector<ojson *> stack;
  void object(const char *key, const std::function<void()> &body) override {
    ojson &o = (*stack.back())[key] = ojson::object();
    stack.push_back(&o);
    body();
    stack.pop_back();
  }
  void integer(const char *key, int64_t &v, Kind) override { (*stack.back())[key] = v; }
  void number(const char *key, double &v) override { (*stack.back())[key] = v; }
  void boolean(const char *key, bool &v) override { (*stack.back())[key] = v; }
  void string(const char *key, std::string &v) override { (*stack.back())[key] = v; }
  void pair(const char *key, double &a, double &b) override {
    (*stack.back())[key] = ojson::array({a, b});
  }
};

//===----------------------------------------------------------------------------===//
// Semantic rules
//===----------------------------------------------------------------------------===//

/// Fails unless `value` is one of `allowed`, suggesting a close one.
void checkOneOf(const std::string &path, const std::string &value,
                const std::vector<std::string> &allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
  fail(path, json(value).dump() + " is not one of " + joinList(allowed) +
                 didYouMean(closest(value, allowed)));
}

/// Fails unless `value` is the string form of a case of the dialect's enum E (precision,
/// checkpointing, offload: dialect/TgEnums.td, read through its generated symbolize
/// function); the error lists the cases, as spelt by `spelling` (by default their string
/// forms), and suggests a close one.
template <typename E>
void checkEnum(const std::string &path, const std::string &value,
               std::string (*spelling)(E) = nullptr) {
  if (mlir::tg::symbolizeEnum<E>(value)) return;
  std::vector<std::string> allowed;
  for (E e : mlir::tg::enumCases<E>())
    allowed.push_back(spelling ? spelling(e) : mlir::tg::stringifyEnum(e).str());
  checkOneOf(path, value, allowed);
}

/// Fails unless `value` is the one supported choice `only`.
void checkSupported(const std::string &path, const std::string &value,
                    const std::string &only) {
  if (value != only)
    fail(path, "only \"" + only + "\" is supported, got " + json(value).dump());
}

/// Fails unless v > 0.
void checkPositive(const std::string &path, double v) {
  if (!(v > 0)) fail(path, "must be > 0, got " + showNum(v));
}

/// Fails unless v >= 0.
void checkNonNegative(const std::string &path, double v) {
  if (!(v >= 0)) fail(path, "must be >= 0, got " + showNum(v));
}

/// Fails unless v is in [0, 1).
void checkUnitInterval(const std::string &path, double v) {
  if (!(v >= 0 && v < 1)) fail(path, showNum(v) + " is not in [0, 1)");
}

/// Fails if a size exceeds 2^31-1, which keeps products of sizes inside int64.
void checkDimLimit(const std::string &path, int64_t v) {
  if (v > kMaxDim) fail(path, std::to_string(v) + " exceeds 2^31-1");
}

/// The compiler stores the spec's real numbers as float32 (IR attributes, the runtime's
/// tgrt_model): a value must survive that rounding. Fails when `v` overflows float32 or,
/// being nonzero, falls below float32's smallest normal number (it would become 0, as
/// lr=1e-50 did, or a subnormal that GPU kernels flush to 0).
void checkFloat32(const std::string &path, double v) {
  if (v == 0 || !std::isfinite(v)) return;  // the field's own rule refuses inf / NaN
  const double a = std::fabs(v);
  if (a > (double)std::numeric_limits<float>::max())
    fail(path, showExact(v) + " overflows float32 (largest 3.40282e+38); tgc stores this "
                            "field as a 32-bit float");
  if (a < (double)std::numeric_limits<float>::min())
    fail(path, showExact(v) + " is below float32's smallest normal number (1.17549e-38) and "
                            "would become 0; tgc stores this field as a 32-bit float");
}

/// Fails when `v`, rounded to float32, is no longer below `limit` (a beta of 0.99999999
/// is 1.0f).
void checkFloat32Below(const std::string &path, double v, double limit, const char *what) {
  if (v < limit && !((double)(float)v < limit))
    fail(path, showExact(v) + " rounds to " + showExact((double)(float)v) +
                   " in float32, which is not < " + what +
                   "; tgc stores this field as a 32-bit float");
}

/// Every real-valued field the compiler narrows to float32 (MLIRGen's attributes and
/// tgrt_model), after its own rule has passed.
void checkFloat32Fields(const Spec &s) {
  const ModelSpec &m = s.model;
  checkFloat32("model.dropout", m.dropout);
  checkFloat32Below("model.dropout", m.dropout, 1.0, "1");
  checkFloat32("model.layer_norm_eps", m.layer_norm_eps);
  if (m.rope()) {
    checkFloat32("model.rope_theta", m.rope_theta);
    if (!((float)m.rope_theta > 1.0f))
      fail("model.rope_theta", showExact(m.rope_theta) + " rounds to 1 in float32, which is "
                               "not > 1; tgc stores this field as a 32-bit float");
  }
  if (m.rope_scaling.factor > 0) {
    const ModelSpec::RopeScaling &r = m.rope_scaling;
    checkFloat32("model.rope_scaling.factor", r.factor);
    checkFloat32("model.rope_scaling.low_freq_factor", r.low_freq_factor);
    checkFloat32("model.rope_scaling.high_freq_factor", r.high_freq_factor);
    if (!((float)r.high_freq_factor > (float)r.low_freq_factor))
      fail("model.rope_scaling.high_freq_factor",
           showExact(r.high_freq_factor) + " and model.rope_scaling.low_freq_factor=" +
               showExact(r.low_freq_factor) + " are equal in float32; tgc stores them as "
               "32-bit floats");
  }
  const TrainingSpec &t = s.training;
  checkFloat32("training.loss_scaling.init", t.loss_scale_init);
  const OptimizerSpec &o = t.optimizer;
  checkFloat32("training.optimizer.lr", o.lr);
  checkFloat32("training.optimizer.min_lr", o.min_lr);
  checkFloat32("training.optimizer.betas[0]", o.beta1);
  checkFloat32Below("training.optimizer.betas[0]", o.beta1, 1.0, "1");
  checkFloat32("training.optimizer.betas[1]", o.beta2);
  checkFloat32Below("training.optimizer.betas[1]", o.beta2, 1.0, "1");
  checkFloat32("training.optimizer.eps", o.eps);
  checkFloat32("training.optimizer.weight_decay", o.weight_decay);
  checkFloat32("training.optimizer.grad_clip", o.grad_clip);
}

/// The rules of docs/spec.md that go beyond JSON types, in the order of the tables there.
void checkSemantics(const Spec &s) {
  if (s.name.empty() ||
      !std::all_of(s.name.begin(), s.name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      }))
    fail("name", "must be non-empty and use only letters, digits, '_', '-' and '.', got " +
                     json(s.name).dump());

  const ModelSpec &m = s.model;
  checkDimLimit("model.vocab_size", m.vocab_size);
  checkDimLimit("model.context", m.context);
  checkDimLimit("model.d_model", m.d_model);
  checkDimLimit("model.n_layers", m.n_layers);
  checkDimLimit("model.n_heads", m.n_heads);
  checkDimLimit("model.d_ff", m.d_ff);
  checkDimLimit("model.n_kv_heads", m.n_kv_heads);
  checkDimLimit("model.head_dim", m.head_dim);
  if (m.head_dim == 0 && m.d_model % m.n_heads != 0)
    fail("model.d_model", std::to_string(m.d_model) + " is not divisible by model.n_heads=" +
                              std::to_string(m.n_heads));
  if (m.n_kv_heads > 0 && m.n_heads % m.n_kv_heads != 0)
    fail("model.n_kv_heads", std::to_string(m.n_kv_heads) +
                                 " does not divide model.n_heads=" + std::to_string(m.n_heads) +
                                 " (each key/value head serves n_heads / n_kv_heads query heads)");
  checkUnitInterval("model.dropout", m.dropout);
  checkOneOf("model.positional", m.positional, {"learned", "rope"});
  checkOneOf("model.activation", m.activation, {"gelu_tanh", "silu"});
  checkOneOf("model.norm", m.norm, {"layernorm", "rmsnorm"});
  if (m.activation == "silu" && !m.mlp_gated)
    fail("model.activation", "\"silu\" is supported in the gated MLP only (SwiGLU): set "
                             "model.mlp_gated to true");
  if (m.mlp_gated && m.activation != "silu")
    fail("model.mlp_gated", "the gated MLP supports model.activation \"silu\" (SwiGLU) "
                            "only, got " + json(m.activation).dump());
  checkPositive("model.layer_norm_eps", m.layer_norm_eps);
  if (m.rope()) {
    if (m.headDim() % 2 != 0)
      fail(m.head_dim ? "model.head_dim" : "model.d_model",
           "rotary position embeddings need an even head dim, got " +
               std::to_string(m.headDim()));
    checkPositive("model.rope_theta", m.rope_theta);
    if (!(m.rope_theta > 1.0))
      fail("model.rope_theta", "must be > 1, got " + showNum(m.rope_theta));
  }
  {
    const ModelSpec::RopeScaling &r = m.rope_scaling;
    checkNonNegative("model.rope_scaling.factor", r.factor);
    if (r.factor > 0) {
      if (!m.rope())
        fail("model.rope_scaling.factor", "applies to model.positional \"rope\" only");
      checkPositive("model.rope_scaling.low_freq_factor", r.low_freq_factor);
      if (!(r.high_freq_factor > r.low_freq_factor))
        fail("model.rope_scaling.high_freq_factor",
             showNum(r.high_freq_factor) + " must exceed model.rope_scaling.low_freq_factor=" +
                 showNum(r.low_freq_factor));
      checkDimLimit("model.rope_scaling.original_context", r.original_context);
    }
  }
  // The parameter count must fit in int64 (it is summed in int64 everywhere); computed
  // in closed form so that a huge n_layers does not materialize the parameter list.
  {
    long double V = m.vocab_size, C = m.context, D = m.d_model, F = m.d_ff;
    long double W = (long double)(m.n_heads + 2 * m.kvHeads()) * m.headDim();
    long double Q = (long double)m.n_heads * m.headDim();
    long double Fin = m.mlp_gated ? 2 * F : F, normP = m.rmsNorm() ? D : 2 * D;
    long double layer = 2 * normP + D * W + Q * D + D * Fin + F * D +
                        (m.attention_bias ? W + D : 0) + (m.mlp_bias ? Fin + D : 0);
    long double total = V * D + (m.rope() ? 0 : C * D) + m.n_layers * layer + normP +
                        (m.tie_embeddings ? 0 : D * V);
    if (total > (long double)std::numeric_limits<int64_t>::max())
      fail("model", "the parameter count overflows a 64-bit integer");
    if (m.n_layers > kMaxLayers)
      fail("model.n_layers", std::to_string(m.n_layers) + " exceeds the limit of " +
                                 std::to_string(kMaxLayers) +
                                 " layers (the IR and the memory plan grow with every layer; "
                                 "see docs/spec.md, Limits)");
    if (total > kMaxParams) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3Lg", total);
      fail("model", std::string(buf) + " parameters exceed the limit of 1e12 (each needs 16 "
                                       "bytes of values, gradients and AdamW state)");
    }
  }

  const TrainingSpec &t = s.training;
  checkDimLimit("training.batch_size", t.batch_size);
  {
    // The largest tensor of a step: the logits [B, T, V], or naive attention's scores
    // [B, H, T, T] (flash never stores them).
    long double tokens = (long double)t.batch_size * m.context;
    long double largest = tokens * std::max<int64_t>({m.vocab_size, m.mlp_gated ? 2 * m.d_ff : m.d_ff,
                                                      m.qkvWidth()});
    if (t.attention.kernel != "flash")
      largest = std::max(largest, tokens * m.n_heads * m.context);
    if (largest > kMaxTensorElems) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3Lg", largest);
      fail("training.batch_size",
           std::to_string(t.batch_size) + " sequences of " + std::to_string(m.context) +
               " tokens make a tensor of " + buf +
               " elements (logits or attention scores), over the limit of 2^40; lower the "
               "micro-batch and raise training.grad_accum");
    }
  }
  checkDimLimit("training.grad_accum", t.grad_accum);
  checkEnum<mlir::tg::Precision>("training.precision", t.precision);
  if (!(t.loss_scale_init >= 1.0 && t.loss_scale_init <= 1e38))
    fail("training.loss_scaling.init",
         "must be in [1, 1e38] (a float32 power of two is usual), got " +
             json(t.loss_scale_init).dump());
  checkDimLimit("training.loss_scaling.growth_interval", t.loss_scale_growth_interval);
  checkOneOf("training.attention.kernel", t.attention.kernel, {"naive", "flash"});
  int64_t headDim = m.headDim();
  if (t.attention.kernel == "flash" && headDim != 32 && headDim != 64 && headDim != 128)
    fail("training.attention.kernel",
         "flash attention supports head dims 32, 64, 128; model has " + std::to_string(headDim));
  checkOneOf("training.attention.impl", t.attention.impl, {"auto", "own", "cudnn"});
  if (t.attention.impl == "cudnn" && (t.attention.kernel != "flash" ||
                                       *mlir::tg::symbolizePrecision(t.precision) ==
                                           mlir::tg::Precision::fp32))
    fail("training.attention.impl",
         "\"cudnn\" runs bf16 / f16 flash attention; this spec has kernel \"" +
             t.attention.kernel + "\" and precision \"" + t.precision +
             "\" (use kernel \"flash\" with a bf16 or f16 precision, or impl \"auto\")");
  if (t.attention.window > m.context)
    fail("training.attention.window", std::to_string(t.attention.window) +
                                          " exceeds model.context=" + std::to_string(m.context));
  // The policies that carry a size: budget:<arena bytes>, auto:<the device's memory>.
  struct Sized {
    const char *word;
    bool (*parse)(const std::string &, int64_t &);
    const char *expected;
  };
  static const Sized sized[] = {
      {"budget", parseCheckpointBudget,
       " is not a valid budget: expected budget:<positive integer bytes>, with an optional "
       "suffix KiB, MiB or GiB (budget:512MiB)"},
      {"auto", parseCheckpointAuto,
       " is not a valid auto policy: expected auto (the memory tgc knows) or auto:<the "
       "device's whole memory in bytes>, with an optional suffix KiB, MiB or GiB (auto:80GiB)"}};
  const Sized *form = nullptr;
  for (const Sized &f : sized)
    if (t.checkpointing.rfind(f.word, 0) == 0)
      form = &f;
  if (t.checkpointing == "auto") {
    // The default: auto:<the device's memory> with the memory tgc knows (--memory, the
    // calibration table's memory_bytes), else none (tools/tgc Driver.cpp).
  } else if (form) {
    int64_t bytes = 0;
    if (!form->parse(t.checkpointing, bytes))
      fail("training.checkpointing", json(t.checkpointing).dump() + form->expected);
  } else {
    // The spec spells the budget case with its bytes.
    checkEnum<mlir::tg::Checkpointing>(
        "training.checkpointing", t.checkpointing, [](mlir::tg::Checkpointing c) {
          // auto:<memory> is no enum case (tgc resolves it to one); listed with budget.
          return c == mlir::tg::Checkpointing::budget ? std::string("budget:<bytes>, auto, auto:<memory>")
                                                      : mlir::tg::stringifyEnum(c).str();
        });
  }

  const OptimizerSpec &o = t.optimizer;
  checkSupported("training.optimizer.name", o.name, "adamw");
  checkPositive("training.optimizer.lr", o.lr);
  if (!(o.min_lr >= 0 && o.min_lr <= o.lr))
    fail("training.optimizer.min_lr", showNum(o.min_lr) +
                                          " is not in [0, training.optimizer.lr=" +
                                          showNum(o.lr) + "]");
  checkUnitInterval("training.optimizer.betas[0]", o.beta1);
  checkUnitInterval("training.optimizer.betas[1]", o.beta2);
  checkPositive("training.optimizer.eps", o.eps);
  checkNonNegative("training.optimizer.weight_decay", o.weight_decay);
  checkNonNegative("training.optimizer.grad_clip", o.grad_clip);
  checkOneOf("training.optimizer.decay", o.decay, {"cosine", "linear", "none"});
  checkEnum<mlir::tg::Offload>("training.optimizer.offload", o.offload);
  checkOneOf("training.gradients", t.gradients, {"auto", "persistent", "arena"});
  checkOneOf("training.gradient_dtype", t.gradient_dtype, {"auto", "f32"});
  checkOneOf("training.master_values", t.master_values, {"auto", "all", "f32"});
  checkOneOf("training.bias_rows", t.bias_rows, {"auto", "on", "off"});
  if (t.gradients == "arena" && (t.grad_accum > 1 || t.distributed.ranks > 1))
    fail("training.gradients",
         "\"arena\" needs one micro-step per optimizer step and one rank (grad_accum is " +
             std::to_string(t.grad_accum) + ", distributed.ranks " +
             std::to_string(t.distributed.ranks) +
             "): the slots carry gradients across micro-steps and ranks; use \"auto\" or "
             "\"persistent\"");
  if (t.gradients == "arena" && t.checkpointing.rfind("budget", 0) == 0)
    fail("training.gradients", "\"arena\" cannot be combined with training.checkpointing "
                               "budget (its search plans the micro-step without the "
                               "gradients); use \"auto\" or \"persistent\"");

  if (t.distributed.ranks > kMaxRanks)
    fail("training.distributed.ranks", std::to_string(t.distributed.ranks) +
                                           " exceeds the limit of " +
                                           std::to_string(kMaxRanks) + " ranks");
  if (t.distributed.zero < 0 || t.distributed.zero > 3)
    fail("training.distributed.zero",
         std::to_string(t.distributed.zero) +
             " is not a ZeRO stage; use 0 (replicated), 1 (AdamW state sharded), 2 (+ "
             "gradients sharded) or 3 (+ parameters sharded)");

  if (t.ignore_index != -1 && (t.ignore_index < 0 || t.ignore_index >= m.vocab_size))
    fail("training.ignore_index", std::to_string(t.ignore_index) +
                                      " must be -1 or in [0, model.vocab_size=" +
                                      std::to_string(m.vocab_size) + ")");

  checkFloat32Fields(s);
}

//===----------------------------------------------------------------------------===//
// Syntax errors and overrides
//===----------------------------------------------------------------------------===//

/// Converts nlohmann's parse_error into a located SpecError. `byte` is the count of
/// characters read, so the offending character is text[byte-1].
/// A syntax error at byte `idx` of `text`: path "SOURCE:L:C" (or "line L, column C").
SpecError syntaxErrorAt(const std::string &text, size_t idx, const std::string &explanation,
                        const std::string &source) {
  idx = std::min(idx, text.size());
  size_t line = 1, lineStart = 0;
  for (size_t i = 0; i < idx; ++i)
    if (text[i] == '\n') {
      ++line;
      lineStart = i + 1;
    }
  size_t column = idx - lineStart + 1;
  std::string where = source.empty()
                          ? "line " + std::to_string(line) + ", column " + std::to_string(column)
                          : source + ":" + std::to_string(line) + ":" + std::to_string(column);
  return SpecError{where, explanation};
}

SpecError syntaxError(const std::string &text, const json::parse_error &e,
                      const std::string &source) {
  // what(): "[json.exception.parse_error.101] parse error at line 1, column 5: <explanation>"
  std::string what = e.what();
  std::string explanation = what;
  size_t col = what.find("column ");
  size_t colon = what.find(": ", col == std::string::npos ? 0 : col);
  if (colon != std::string::npos) explanation = what.substr(colon + 2);
  return syntaxErrorAt(text, e.byte == 0 ? 0 : e.byte - 1, explanation, source);
}

/// A number literal too large for a double (nlohmann throws out_of_range.406 "number
/// overflow parsing '<literal>'", without a position): located at the literal's first
/// occurrence in `text`.
SpecError numberOverflowError(const std::string &text, const json::out_of_range &e,
                              const std::string &source) {
  const std::string what = e.what();
  const size_t b = what.find('\'');
  const size_t end = b == std::string::npos ? b : what.find('\'', b + 1);
  std::string literal = end == std::string::npos ? "" : what.substr(b + 1, end - b - 1);
  const size_t idx = literal.empty() ? 0 : text.find(literal);
  if (literal.size() > 40) literal = literal.substr(0, 37) + "...";
  return syntaxErrorAt(text, idx == std::string::npos ? 0 : idx,
                       "number " + literal + " is out of range (expected a number that fits "
                       "a double)", source);
}

/// Finds the first key that appears twice in one object (JSON allows it; nlohmann keeps
/// the last silently, which hides mistakes). Driven by nlohmann's parser callback. Each
/// frame keeps only its own key (or index) and a hash set of its keys, so the work is
/// linear in the input; the path is assembled only for the one duplicate reported.
struct DuplicateFinder {
  struct Frame {
    bool isObject;
    std::unordered_set<std::string> keys;
    size_t index = 0;  // next element index, arrays only
    std::string lastKey;
  };
  std::vector<Frame> stack;
  std::string duplicate;  // path of the first duplicate, "" if none

  /// The path of the value being parsed in frame `depth` (0 = the root container).
  std::string pathTo(size_t depth) const {
    std::string p;
    for (size_t i = 0; i <= depth && i < stack.size(); ++i) {
      const Frame &f = stack[i];
      p = f.isObject ? join(p, f.lastKey) : p + "[" + std::to_string(f.index) + "]";
    }
    return p;
  }
  void valueDone() {
    if (!stack.empty() && !stack.back().isObject) ++stack.back().index;
  }
  bool operator()(int /*depth*/, json::parse_event_t event, json &parsed) {
    switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      stack.push_back(Frame{event == json::parse_event_t::object_start, {}, 0, ""});
      break;
    case json::parse_event_t::object_end:
    case json::parse_event_t::array_end:
      if (!stack.empty()) stack.pop_back();
      valueDone();
      break;
    case json::parse_event_t::key: {
      Frame &f = stack.back();
      f.lastKey = parsed.get<std::string>();
      if (!f.keys.insert(f.lastKey).second && duplicate.empty())
        duplicate = pathTo(stack.size() - 1);
      break;
    }
    case json::parse_event_t::value:
      valueDone();
      break;
    }
    return true;
  }
};

/// The error for JSON nested deeper than kMaxJsonDepth, at the bracket that goes over.
SpecError tooDeepError(const std::string &text, size_t offset, const std::string &source) {
  return syntaxErrorAt(text, offset,
                       "arrays and objects nested deeper than " +
                           std::to_string(kMaxJsonDepth) + " levels (byte offset " +
                           std::to_string(offset) + "; a spec needs 4)",
                       source);
}

/// Applies one "--set path=value" to `root`; returns the dotted path it set.
std::string applyOverride(json &root, const std::string &override) {
  size_t eq = override.find('=');
  if (eq == std::string::npos)
    fail("--set " + override, "expected PATH=VALUE (e.g. training.batch_size=16)");
  std::string path = override.substr(0, eq), text = override.substr(eq + 1);
  if (path.empty()) fail("--set " + override, "empty path");

  // An element of an array field: "training.optimizer.betas[1]" (the paths tgc's own
  // messages print). Only the last segment may carry an index.
  std::string fieldPath = path;
  long index = -1;
  if (path.back() == ']') {
    const size_t open = path.rfind('[');
    const std::string digits =
        open == std::string::npos ? "" : path.substr(open + 1, path.size() - open - 2);
    if (open == std::string::npos || open == 0 || digits.empty() || digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      fail("--set " + path, "expected an array index in [] (e.g. training.optimizer.betas[1])");
    fieldPath = path.substr(0, open);
    index = std::stol(digits);
  }

  std::vector<std::string> segs;
  std::stringstream ss(fieldPath);
  for (std::string seg; std::getline(ss, seg, '.');) segs.push_back(seg);
  if (fieldPath.back() == '.') segs.push_back("");

  // Walk the schema: every segment must be a known field, all but the last objects.
  const SchemaNode *node = &schema();
  std::string prefix;
  for (size_t i = 0; i < segs.size(); ++i) {
    if (!node->isObject)
      fail("--set " + path, prefix + " is not an object (it has no field '" + segs[i] + "')");
    if (segs[i].find('[') != std::string::npos && node->child(segs[i]) == nullptr)
      fail("--set " + path, "only the last field of a path can be indexed (" +
                                join(prefix, segs[i]) + " is not an array)");
    const SchemaNode *c = node->child(segs[i]);
    prefix = join(prefix, segs[i]);
    if (!c) fail("--set " + prefix, unknownFieldMessage(*node, segs[i]));
    node = c;
  }
  if (index >= 0) {
    if (node->isObject || node->kind != Kind::Pair)
      fail("--set " + path, fieldPath + " is not an array (only an array field takes an index)");
    if (index > 1)
      fail("--set " + path, "index " + std::to_string(index) + " is out of range: " +
                                fieldPath + " has 2 elements ([0] and [1])");
  }

  json value;
  if (jsonNestingTooDeep(text) != std::string::npos)
    fail("--set " + path, "the value nests arrays and objects deeper than " +
                              std::to_string(kMaxJsonDepth) + " levels");
  try {
    value = json::parse(text);
  } catch (const json::exception &) {  // syntax error or a number out of range
    value = text;
  }
  // A string field takes the raw text even if it happens to parse as JSON (name=123).
  if (!node->isObject && node->kind == Kind::String && !value.is_string() && !value.is_null())
    value = text;
  // Raw text is not checked by the JSON parser: it must be UTF-8 like the rest of the spec.
  if (value.is_string()) {
    try {
      (void)value.dump();
    } catch (const json::type_error &e) {
      fail("--set " + path, std::string("expected UTF-8 text in the value (") + e.what() + ")");
    }
  }

  json *cur = &root;
  std::string at;
  for (size_t i = 0; i + 1 < segs.size(); ++i) {
    at = join(at, segs[i]);
    json &next = (*cur)[segs[i]];
    if (next.is_null()) next = json::object();
    if (!next.is_object()) fail(at, "expected an object, got " + show(next));
    cur = &next;
  }
  if (index >= 0) {
    // One element: the rest of the array is the spec's (or, when absent, the default).
    if (value.is_null())
      fail("--set " + path, "an element cannot be reset alone; use --set " + fieldPath +
                                "=null to reset the whole array");
    json &arr = (*cur)[segs.back()];
    if (arr.is_null()) {
      Spec defaults;
      ojson filled = ojson::object();
      Writer w;
      w.stack.push_back(&filled);
      describeSpec(defaults, w);
      const ojson *d = &filled;
      for (const std::string &seg : segs) d = &(*d)[seg];
      arr = json::parse(d->dump());
    }
    if (!arr.is_array() || arr.size() != 2)
      fail(join(at, segs.back()), "expected an array of 2 numbers, got " + show(arr));
    arr[index] = value;
    return path;
  }
  if (value.is_null())
    cur->erase(segs.back());  // null resets the field to its default
  else
    (*cur)[segs.back()] = value;
  return path;
}

/// True if `path` is `prefix` or lies under it ("a.b" under "a", "a.b[0]" under "a.b").
bool under(const std::string &path, const std::string &prefix) {
  if (path.compare(0, prefix.size(), prefix) != 0) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '.' ||
         path[prefix.size()] == '[';
}

} // namespace

//===----------------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------------===//

bool parseSpec(const std::string &text, const std::vector<std::string> &overrides, Spec &out,
               SpecError &err, const std::string &source) {
  if (size_t deep = jsonNestingTooDeep(text); deep != std::string::npos) {
    err = tooDeepError(text, deep, source);
    return false;
  }
  json root;
  DuplicateFinder dups;
  try {
    root = json::parse(text, std::ref(dups));
  } catch (const json::parse_error &e) {
    err = syntaxError(text, e, source);
    return false;
  } catch (const json::out_of_range &e) {
    err = numberOverflowError(text, e, source);
    return false;
  }
  if (!dups.duplicate.empty()) {
    err = SpecError{dups.duplicate, "duplicate field (it appears more than once)"};
    return false;
  }

  std::vector<std::string> overridden;
  try {
    if (!root.is_object()) fail("(root)", "expected a JSON object, got " + show(root));
    for (const auto &o : overrides) overridden.push_back(applyOverride(root, o));
  } catch (const SpecError &e) {
    err = e;
    return false;
  }

  try {
    checkUnknownFields(root, schema(), "");
    Spec s;
    Reader r;
    r.stack.push_back(&root);
    r.paths.push_back("");
    describeSpec(s, r);
    checkSemantics(s);

    ojson filled = ojson::object();
    Writer w;
    w.stack.push_back(&filled);
    describeSpec(s, w);
    s.json = filled.dump(2) + "\n";
    out = std::move(s);
    return true;
  } catch (const SpecError &e) {
    err = e;
    // An error in a field that an override set is the override's fault: say so.
    for (auto it = overridden.rbegin(); it != overridden.rend(); ++it)
      if (under(e.path, *it) ||
          (it->back() == ']' && e.path == it->substr(0, it->rfind('[')))) {
        err.path = "--set " + e.path;
        break;
      }
    return false;
  } catch (const std::exception &e) {  // not expected; never let one escape
    err = SpecError{"", std::string("internal error: ") + e.what()};
    return false;
  }
}

bool loadSpecFile(const std::string &file, const std::vector<std::string> &overrides, Spec &out,
                  SpecError &err) {
  // stdio rather than ifstream: reading a directory must fail (EISDIR), not give "".
  std::string text;
  bool ok = false;
  if (FILE *f = std::fopen(file.c_str(), "rb")) {
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    ok = !std::ferror(f);
    std::fclose(f);
  }
  if (!ok) {
    err = SpecError{file, "cannot read file"};
    return false;
  }
  return parseSpec(text, overrides, out, err, file);
}

std::string formatSpecError(const std::string &source, const SpecError &err) {
  if (err.path.rfind("--set ", 0) == 0) return err.str();
  if (!source.empty() && (err.path == source || err.path.rfind(source + ":", 0) == 0))
    return err.str();
  if (source.empty()) return err.str();
  return source + ": " + err.str();
}

const char *defaultSpecJson() {
  return R"({
  "name": "tiny",
  "model": {
    "vocab_size": 2048,
    "context": 64,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "d_ff": 256,
    "tie_embeddings": true
  },
  "training": {
    "batch_size": 8,
    "optimizer": {
      "lr": 1e-3,
      "min_lr": 1e-4,
      "warmup_steps": 20
    }
  }
}
)";
}

size_t jsonNestingTooDeep(const std::string &text, size_t maxDepth) {
  size_t depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string::npos;
}

/// "<prefix><n>[KiB|MiB|GiB]" with n > 0 -> bytes (parseCheckpointBudget, parseCheckpointAuto).
static bool parsePrefixedBytes(const std::string &policy, const std::string &prefix,
                               int64_t &bytes) {
  if (policy.rfind(prefix, 0) != 0) return false;
  std::string s = policy.substr(prefix.size());
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  if (digits == 0 || digits > 18) return false;
  int64_t n = std::stoll(s.substr(0, digits));
  std::string suffix = s.substr(digits);
  int shift = suffix.empty() ? 0 : suffix == "KiB" ? 10 : suffix == "MiB" ? 20 : suffix == "GiB" ? 30 : -1;
  if (shift < 0 || n <= 0) return false;
  if (n > (std::numeric_limits<int64_t>::max() >> shift)) return false;
  bytes = n << shift;
  return true;
}

bool parseCheckpointBudget(const std::string &policy, int64_t &bytes) {
  return parsePrefixedBytes(policy, "budget:", bytes);
}

bool parseCheckpointAuto(const std::string &policy, int64_t &bytes) {
  return parsePrefixedBytes(policy, "auto:", bytes);
}

std::string hfArchitecture(const ModelSpec &m, std::string *why) {
  auto no = [&](const std::string &reason) {
    if (why) *why = reason;
    return std::string();
  };
  if (!m.rmsNorm() && !m.rope() && m.activation == "gelu_tanh" && !m.mlp_gated) {
    if (m.kvHeads() != m.n_heads)
      return no("GPT-2 has no grouped-query attention (model.n_kv_heads " +
                std::to_string(m.kvHeads()) + " != model.n_heads " +
                std::to_string(m.n_heads) + ")");
    if (m.headDim() * m.n_heads != m.d_model)
      return no("GPT-2's head dim is d_model / n_heads (model.head_dim " +
                std::to_string(m.headDim()) + ")");
    return "GPT2LMHeadModel";
  }
  if (m.rmsNorm() && m.rope() && m.activation == "silu" && m.mlp_gated)
    return "LlamaForCausalLM"; // config attention_bias (q, k, v, o) and mlp_bias map 1:1
  return no("no Hugging Face class has this combination of model.norm \"" + m.norm +
            "\", model.positional \"" + m.positional + "\" and model.activation \"" +
            m.activation + "\"" + (m.mlp_gated ? " (gated)" : "") +
            "; supported: GPT-2 (layernorm, learned, gelu_tanh) and Llama (rmsnorm, rope, "
            "silu gated)");
}

std::vector<ParamInfo> modelParameters(const ModelSpec &m, bool decay_embeddings) {
  const int64_t V = m.vocab_size, C = m.context, D = m.d_model, F = m.d_ff;
  const int64_t H = m.n_heads, Hkv = m.kvHeads(), hd = m.headDim();
  const int64_t Q = H * hd, W = m.qkvWidth(), Fin = m.mlp_gated ? 2 * F : F;
  const std::string arch = hfArchitecture(m);
  const bool gpt2 = arch == "GPT2LMHeadModel", llama = arch == "LlamaForCausalLM";
  std::vector<ParamInfo> ps;
  using Init = ParamInfo::Init;
  // Matrices decay (embeddings only when asked), vectors never (GPT-2 / nanoGPT).
  auto add = [&](std::string name, std::vector<int64_t> shape, Init init = Init::Normal,
                 double std = 0.02, bool embedding = false) -> ParamInfo & {
    bool decay = shape.size() >= 2 && (!embedding || decay_embeddings);
    ps.push_back(ParamInfo{std::move(name), std::move(shape), init, std, decay, {}});
    return ps.back();
  };
  // The HF pieces of the last parameter added: whole (GPT-2's Conv1D [in, out] layout is
  // tgc's) or column ranges transposed to nn.Linear's [out, in] (Llama).
  auto whole = [&](ParamInfo &p, const std::string &name) { p.hf.push_back({name, 0, 0, false}); };
  auto cols = [&](ParamInfo &p, const std::string &name, int64_t b, int64_t e) {
    p.hf.push_back({name, b, e, true});
  };
  // Residual projections: std 0.02 / sqrt(2 n_layers) (GPT-2, Radford et al. 2019).
  const double residualStd = (double)(0.02f / std::sqrt(2.0f * (float)m.n_layers));
  // A normalisation: weight (ones) and, for layer norm, bias (zeros).
  auto norm = [&](const std::string &n, const std::string &hfGpt2, const std::string &hfLlama) {
    ParamInfo &w = add(n + ".weight", {D}, Init::Ones);
    if (gpt2) whole(w, hfGpt2 + ".weight");
    if (llama) whole(w, hfLlama + ".weight");
    if (!m.rmsNorm()) {
      ParamInfo &b = add(n + ".bias", {D}, Init::Zeros);
      if (gpt2) whole(b, hfGpt2 + ".bias");
    }
  };
  {
    ParamInfo &p = add("wte", {V, D}, Init::Normal, 0.02, true);
    if (gpt2) whole(p, "transformer.wte.weight");
    if (llama) whole(p, "model.embed_tokens.weight");
  }
  if (!m.rope()) {
    ParamInfo &p = add("wpe", {C, D}, Init::Normal, 0.02, true);
    if (gpt2) whole(p, "transformer.wpe.weight");
  }
  for (int64_t i = 0; i < m.n_layers; ++i) {
    const std::string l = "layers." + std::to_string(i) + ".";
    const std::string g = "transformer.h." + std::to_string(i) + ".";
    const std::string h = "model.layers." + std::to_string(i) + ".";
    norm(l + "ln1", g + "ln_1", h + "input_layernorm");
    // q | k | v columns of the fused projection: [0, Q), [Q, Q + Hkv hd), [.., W).
    auto qkv = [&](ParamInfo &p, const std::string &suffix) {
      if (gpt2) whole(p, g + "attn.c_attn." + suffix);
      if (llama) {
        cols(p, h + "self_attn.q_proj." + suffix, 0, Q);
        cols(p, h + "self_attn.k_proj." + suffix, Q, Q + Hkv * hd);
        cols(p, h + "self_attn.v_proj." + suffix, Q + Hkv * hd, W);
      }
    };
    qkv(add(l + "attn.qkv.weight", {D, W}), "weight");
    if (m.attention_bias) qkv(add(l + "attn.qkv.bias", {W}, Init::Zeros), "bias");
    {
      ParamInfo &p = add(l + "attn.proj.weight", {Q, D}, Init::Normal, residualStd);
      if (gpt2) whole(p, g + "attn.c_proj.weight");
      if (llama) cols(p, h + "self_attn.o_proj.weight", 0, D);
    }
    if (m.attention_bias) {
      ParamInfo &p = add(l + "attn.proj.bias", {D}, Init::Zeros);
      if (gpt2) whole(p, g + "attn.c_proj.bias");
      if (llama) cols(p, h + "self_attn.o_proj.bias", 0, D);
    }
    norm(l + "ln2", g + "ln_2", h + "post_attention_layernorm");
    // Gated: gate | up columns.
    auto fc = [&](ParamInfo &p, const std::string &suffix) {
      if (gpt2) whole(p, g + "mlp.c_fc." + suffix);
      if (llama) {
        cols(p, h + "mlp.gate_proj." + suffix, 0, F);
        cols(p, h + "mlp.up_proj." + suffix, F, 2 * F);
      }
    };
    fc(add(l + "mlp.fc.weight", {D, Fin}), "weight");
    if (m.mlp_bias) fc(add(l + "mlp.fc.bias", {Fin}, Init::Zeros), "bias");
    {
      ParamInfo &p = add(l + "mlp.proj.weight", {F, D}, Init::Normal, residualStd);
      if (gpt2) whole(p, g + "mlp.c_proj.weight");
      if (llama) cols(p, h + "mlp.down_proj.weight", 0, D);
    }
    if (m.mlp_bias) {
      ParamInfo &p = add(l + "mlp.proj.bias", {D}, Init::Zeros);
      if (gpt2) whole(p, g + "mlp.c_proj.bias");
      if (llama) cols(p, h + "mlp.down_proj.bias", 0, D);
    }
  }
  norm("ln_f", "transformer.ln_f", "model.norm");
  if (!m.tie_embeddings) {
    // [V, D], wte's (and nn.Linear's) layout, not the [in, out] of the other projections:
    // the logits are x lm_head^T as for a tied head, so tg-fuse-loss fuses both alike.
    ParamInfo& p = add("lm_head.weight", {V, D});
    if (gpt2 || llama) whole(p, "lm_head.weight");
  }
  return ps;
}

int64_t parameterCount(const ModelSpec &m) {
  int64_t n = 0;
  for (const auto &p : modelParameters(m)) n += p.numel();
  return n;
}

} // namespace tgc
