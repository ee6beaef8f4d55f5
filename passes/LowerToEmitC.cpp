//===- LowerToEmitC.cpp - planned tg module -> EmitC -> C++ -----------------===//
//
// See LowerToEmitC.h. One tg op lowers to one `emitc.call_opaque` of a runtime kernel
// (runtime/tgrt.h); its tensor operands become `(T*)(region base + planned offset)`
// pointers built once per function by `emitc.expression`s, its scalars become call
// attributes. mlir::emitc::translateToCpp then prints the module. Each call that writes a
// tensor is followed by a non-finite check guarded by one flag per step function (checkSite,
// emitCheck; runtime/tgrt.h "non-finite checks").
//
//===----------------------------------------------------------------------------===//
#include "passes/LowerToEmitC.h"
#include "passes/Passes.h"
#include "dialect/TgDialect.h"
#include "dialect/ElementBytes.h"
#include "passes/MemoryPlan.h"
#include "runtime/tgrt.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Target/Cpp/CppEmitter.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/ErrorHandling.h"

#include <cmath>
#include <map>
#include <optional>
#include <tuple>

namespace mlir::tg {
// The bias-rows layout the plan and the lowering assume is the runtime's.
static_assert(mlir::tg::kOnesColumns == TGRT_ONES_COLUMNS && mlir::tg::kBiasRows == TGRT_BIAS_ROWS,
              "passes/MemoryPlan.h's bias-rows constants must be runtime/tgrt.h's");

namespace {

int64_t numel(Value v) { return rt(v).getNumElements(); }
int64_t dim(Value v, int64_t i) {
  auto t = rt(v);
  return t.getDimSize(i < 0 ? t.getRank() + i : i);
}
int64_t prod(ArrayRef<int64_t> s) {
  int64_t p = 1;
  for (int64_t d : s)
    p *= d;
  return p;
}

/// C++ text of an fp32 constant that reads back bit-exactly (for the model table).
std::string fltText(float v) {
  if (std::isnan(v))
    return "NAN";
  if (std::isinf(v))
    return v < 0 ? "-INFINITY" : "INFINITY";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.9g", v);
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s + "f";
}

/// C++ string literal of `s`.
std::string cstr(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string locName(Location loc) {
  if (auto n = dyn_cast<NameLoc>(loc))
    return n.getName().str();
  // A fused op (tg-fuse) carries its chain's locations: its call takes the first name.
  if (auto f = dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations())
      if (auto n = dyn_cast<NameLoc>(l))
        return n.getName().str();
  return "?";
}

/// The last name of a fused op's chain (the op whose result a second call finishes, e.g.
/// the bias gradient of tg.matmul_dgelu_bgrad); locName for any other location.
std::string lastLocName(Location loc) {
  if (auto f = dyn_cast<FusedLoc>(loc))
    for (Location l : llvm::reverse(f.getLocations()))
      if (auto n = dyn_cast<NameLoc>(l))
        return n.getName().str();
  return locName(loc);
}

/// C element type of a pointer.
enum class Elem { F32 = 0, U16 = 1, I32 = 2 };

/// A pointer into a region: `(T*)(base + byteOffset)`, T = float, uint16_t or int32_t.
struct PtrRef {
  /// 0: A (the arena), 1: P (the persistent region), 2: H (the host region: offloaded AdamW
  /// moments). Brace-initialised with a bool in most places: true = persistent.
  int region = 0;
  int64_t byteOffset = 0;
  Elem elem = Elem::F32;
  auto key() const { return std::make_tuple(region, byteOffset, (int)elem); }
};
inline constexpr int kHostRegion = 2;
/// The tgrt_region enumerator of a PtrRef region.
inline const char *regionName(int region) {
  return region == 1 ? "TGRT_PERSISTENT" : region == kHostRegion ? "TGRT_HOST" : "TGRT_ARENA";
}

/// The TGRT_* dtype enumerator of a float element type, or "" for another type.
std::string tgrtDtype(Type e) {
  if (e.isF32())
    return "TGRT_F32";
  if (e.isBF16())
    return "TGRT_BF16";
  if (e.isF16())
    return "TGRT_F16";
  return "";
}
std::string tgrtDtype(StringRef name) {
  return name == "f32" ? "TGRT_F32" : name == "bf16" ? "TGRT_BF16" : name == "f16" ? "TGRT_F16" : "";
}
/// Element kinds of the types run() admits (f32, bf16, f16, i32): it refuses any other.
Elem elemOf(Type e) { return e.isInteger(32) ? Elem::I32 : e.isF32() ? Elem::F32 : Elem::U16; }
Elem elemOf(StringRef dtype) { return dtype == "f32" ? Elem::F32 : Elem::U16; }
/// Bytes of one element of `v` (dialect/ElementBytes.h); run() refused every type without
/// a runtime dtype before any call is lowered.
int64_t elemBytes(Value v) {
  std::optional<int64_t> n = elementBytes(rt(v).getElementType());
  if (!n)
    llvm::report_fatal_error("tg-lower-to-emitc: sized a value whose element type has no "
                             "runtime dtype (run() refuses those first)");
  return *n;
}

/// "[8, 64, 128]": a shape as text (the non-finite checks' reports).
std::string shapeText(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// How a runtime call uses its arguments after (ctx, loc), by position: 'R' a tensor it
/// reads, 'W' one it writes, 'M' one it reads and then overwrites (in place), '-' anything
/// else (a dtype, a size, a scalar, a NULL). The non-finite checks look at the W and M tensors
/// after the call and report the R and M ones as its inputs (runtime/tgrt.h,
/// tgrt_check_site). "" for calls without a check. The strings are the kernel list's
/// (runtime/tgrt_kernels.def, beside each kernel's signature; runtime/KernelList.cpp checks
/// them against the parameters at compile time); call() refuses a call whose argument count
/// differs.
StringRef kernelAccess(StringRef fn) {
  return llvm::StringSwitch<StringRef>(fn)
#define TGRT_KERNEL(ret, name, access, params) .Case(#name, access)
#include "runtime/tgrt_kernels.def"
#undef TGRT_KERNEL
      .Default("");
}

class Lowering {
public:
  Lowering(ModuleOp module, std::vector<RuntimeCall> *trace = nullptr,
           llvm::function_ref<void(Operation *, unsigned)> onOffsetRead = nullptr)
      : module(module), b(module.getContext()), ctx(module.getContext()), trace(trace),
        onOffsetRead(onOffsetRead) {}

  LogicalResult run() {
    if (failed(readPlanReport(module, report)))
      return failure();
    for (const ParamSlot &p : report.params)
      if (tgrtDtype(p.dtype).empty() || tgrtDtype(p.stateDtype).empty() ||
          tgrtDtype(p.gradDtype).empty())
        return module.emitError() << "lower-to-emitc: parameter \"" << p.name
                                  << "\" has dtypes " << p.dtype << "/" << p.stateDtype
                                  << (p.gradDtype == p.dtype ? "" : " (gradient " + p.gradDtype + ")")
                                  << " the runtime does not have";
    // Element sizes come from the type: a tensor of a type the runtime has no tgrt_dtype
    // for (e.g. an fp8 type) is refused here, never sized as some other type.
    WalkResult typed = module.walk([&](Operation *op) {
      auto known = [](Type t) {
        auto r = dyn_cast<RankedTensorType>(t);
        if (!r)
          return true;
        return elementBytes(r.getElementType()).has_value();
      };
      for (Type t : op->getOperandTypes())
        if (!known(t)) {
          op->emitOpError() << "lower-to-emitc: operand type " << t
                            << " has no runtime element type (tgrt_dtype has f32, bf16, f16; "
                               "token ids are i32)";
          return WalkResult::interrupt();
        }
      for (Type t : op->getResultTypes())
        if (!known(t)) {
          op->emitOpError() << "lower-to-emitc: result type " << t
                            << " has no runtime element type (tgrt_dtype has f32, bf16, f16; "
                               "token ids are i32)";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (typed.wasInterrupted())
      return failure();
    if (failed(emitHeader()))
      return failure();
    for (const ParamSlot &p : report.params)
      slots[p.name] = &p;
    // In this order, so that diagnostics come in the order of the C++.
    SmallVector<func::FuncOp, 3> steps;
    for (StringRef name : {"micro_step", "optimizer_step", "eval_step"}) {
      auto fn = module.lookupSymbol<func::FuncOp>(name);
      if (!fn)
        return module.emitError() << "lower-to-emitc: missing @" << name;
      if (failed(lowerFunction(fn)))
        return failure();
      steps.push_back(fn);
    }
    emitCheckTables();
    for (func::FuncOp fn : steps)
      fn.erase();
    // tg.plan, tg.spec, tg.name, ...: what the C++ needs of them is now in kModel.
    SmallVector<StringAttr> tgAttrs;
    for (NamedAttribute a : module->getAttrs())
      if (a.getName().strref().starts_with("tg."))
        tgAttrs.push_back(a.getName());
    for (StringAttr name : tgAttrs)
      module->removeAttr(name);
    return success();
  }

private:
  Type opaque(StringRef s) { return emitc::OpaqueType::get(ctx, s); }
  Type ptrTo(Type t) { return emitc::PointerType::get(t); }
  Attribute opaqueAttr(StringRef s) { return emitc::OpaqueAttr::get(ctx, s); }

  /// A module attribute the frontend writes, or a located error naming it.
  template <typename A> FailureOr<A> moduleAttr(StringRef name) {
    auto a = module->getAttrOfType<A>(name);
    if (!a)
      return module.emitError() << "lower-to-emitc: module attribute " << name
                                << " is missing or has the wrong kind (build the module with tgc)",
             failure();
    return a;
  }

  /// The includes, the parameter and model tables, and tg_model_info(), from the IR.
  LogicalResult emitHeader() {
    // Each check returns at the first missing attribute, so one error names it.
    auto name = moduleAttr<StringAttr>("tg.name");
    if (failed(name))
      return failure();
    auto json = moduleAttr<StringAttr>("tg.spec");
    if (failed(json))
      return failure();
    int64_t sizes[4];
    const char *sizeNames[4] = {"tg.batch_size", "tg.context", "tg.vocab_size", "tg.grad_accum"};
    for (int k = 0; k < 4; ++k) {
      auto a = moduleAttr<IntegerAttr>(sizeNames[k]);
      if (failed(a))
        return failure();
      sizes[k] = a->getInt();
    }
    auto opt = moduleAttr<DictionaryAttr>(kOptimizerAttr);
    if (failed(opt))
      return failure();
    float fv[7];
    const char *fNames[7] = {"lr", "min_lr", "beta1", "beta2", "eps", "weight_decay", "grad_clip"};
    for (int k = 0; k < 7; ++k) {
      auto a = opt->getAs<FloatAttr>(fNames[k]);
      if (!a)
        return module.emitError() << "lower-to-emitc: tg.optimizer has no float '" << fNames[k]
                                  << "'";
      fv[k] = (float)a.getValueAsDouble();
    }
    int64_t iv[3];
    const char *iNames[3] = {"warmup_steps", "decay", "seed"};
    for (int k = 0; k < 3; ++k) {
      auto a = opt->getAs<IntegerAttr>(iNames[k]);
      if (!a)
        return module.emitError() << "lower-to-emitc: tg.optimizer has no integer '"
                                  << iNames[k] << "'";
      iv[k] = a.getInt();
    }
    // TGRT_PRECISION_*: the enum's values (runtime/driver/Driver.cpp checks they agree).
    int precision = static_cast<int>(report.precision);
    float lossScaleInit = 0.0f;
    int64_t growth = 0;
    ranks = 1; // tg-distribute's tg.ranks (absent: one rank)
    if (auto r = module->getAttrOfType<IntegerAttr>(kRanksAttr))
      ranks = r.getInt();
    gradAccum = sizes[3];
    if (auto ls = module->getAttrOfType<DictionaryAttr>(kLossScaleAttr)) {
      auto init = ls.getAs<FloatAttr>("init");
      auto interval = ls.getAs<IntegerAttr>("growth_interval");
      if (!init || !interval)
        return module.emitError() << "lower-to-emitc: tg.loss_scale needs init and growth_interval",
               failure();
      lossScaleInit = (float)init.getValueAsDouble();
      growth = interval.getInt();
    }

    Location loc = module.getLoc();
    b.setInsertionPointToEnd(module.getBody());
    b.create<emitc::VerbatimOp>(loc, "// Generated by tgc from spec '" + name->str() +
                                         "' (tg-lower-to-emitc). Do not edit.");
    b.create<emitc::IncludeOp>(loc, "runtime/tgrt.h", false);
    b.create<emitc::IncludeOp>(loc, "cmath", true);
    b.create<emitc::IncludeOp>(loc, "cstdint", true);

    std::string params;
    llvm::raw_string_ostream ps(params);
    ps << "{\n";
    for (const ParamSlot &p : report.params) {
      int init = p.init == "zeros" ? 1 : p.init == "ones" ? 2 : 0;
      ps << "  {" << cstr(p.name) << ", " << p.shape.size() << ", {";
      for (int k = 0; k < 4; ++k)
        ps << (k ? ", " : "") << (k < (int)p.shape.size() ? p.shape[k] : 1);
      ps << "}, " << p.numel << ", " << p.offset << ", " << p.gradOffset << ", " << p.mOffset
         << ", " << p.vOffset << ", " << init << ", " << fltText(p.initStd) << ", "
         << (p.decay ? 1 : 0) << ", " << tgrtDtype(p.dtype) << ", " << tgrtDtype(p.stateDtype)
         << ", " << p.owner << ", " << p.shard << ", " << tgrtDtype(p.gradDtype) << ", "
         << p.workOffset << ", " << (p.split ? 1 : 0) << "},\n";
    }
    ps << "}";
    auto paramsType =
        emitc::ArrayType::get({std::max<int64_t>((int64_t)report.params.size(), 1)},
                              opaque("tgrt_param"));
    b.create<emitc::GlobalOp>(loc, "kParams", paramsType, opaqueAttr(params),
                              /*extern=*/false, /*static=*/true, /*const=*/true);

    std::string model;
    llvm::raw_string_ostream ms(model);
    ms << "{\n"
       << "  " << cstr(name->getValue()) << ",\n  " << cstr(json->getValue()) << ",\n"
       << "  " << report.params.size() << ", kParams,\n"
       << "  " << report.persistentBytes << "LL, " << report.arenaBytes << "LL, "
       << report.workspaceBytes << "LL,\n"
       << "  " << report.tokensOffset << "LL, " << report.targetsOffset << "LL,\n"
       << "  " << sizes[0] << ", " << sizes[1] << ", " << sizes[2] << ", " << sizes[3] << ",\n"
       << "  " << fltText(fv[0]) << ", " << fltText(fv[1]) << ", " << fltText(fv[2]) << ", "
       << fltText(fv[3]) << ", " << fltText(fv[4]) << ", " << fltText(fv[5]) << ", "
       << fltText(fv[6]) << ",\n"
       << "  " << iv[0] << ", " << iv[1] << ", " << iv[2] << ",\n"
       << "  " << precision << ", " << fltText(lossScaleInit) << ", " << growth << ",\n"
       << "  " << ranks << ", " << report.zero << ", " << report.hostBytes << "LL";
    // The trailing fields only when set (older emitted code, and programs that need neither,
    // stay byte-identical; the omitted fields are 0).
    if (report.cudnnAttention)
      ms << ",\n  " << (report.gradsInArena ? 1 : 0) << ", 1";
    else if (report.gradsInArena)
      ms << ",\n  1";
    ms << "\n}";
    b.create<emitc::GlobalOp>(loc, "kModel", opaque("tgrt_model"), opaqueAttr(model),
                              /*extern=*/false, /*static=*/true, /*const=*/true);

    Type modelPtr = ptrTo(opaque("const tgrt_model"));
    auto info = b.create<emitc::FuncOp>(loc, "tg_model_info", b.getFunctionType({}, {modelPtr}));
    info.setSpecifiersAttr(b.getStrArrayAttr({"extern \"C\""}));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(info.addEntryBlock());
    Value addr = b.create<emitc::LiteralOp>(loc, modelPtr, "&kModel");
    b.create<emitc::ReturnOp>(loc, addr);
    return success();
  }

  /// Where `v` lies, for a check that compares places (in place? disjoint?) and passes no
  /// pointer: ptrOf without its errors and without telling traceReadResults of a use.
  /// Empty for a value without a planned place (e.g. tg.unplanned: it has no bytes).
  std::optional<PtrRef> placeOf(Value v) {
    ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
    FailureOr<PtrRef> p = ptrOf(v, /*use=*/false);
    return succeeded(p) ? std::optional<PtrRef>(*p) : std::nullopt;
  }

  /// The pointer of `v`: a parameter's or input's persistent slot, or the planned arena
  /// offset of a result (a reshape is a view of its source). `use`: an emitted call takes
  /// it (onOffsetRead is told; placeOf passes false).
  FailureOr<PtrRef> ptrOf(Value v, bool use = true) {
    Elem e = elemOf(rt(v).getElementType());
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr)) {
        const ParamSlot *s = slotOf(v);
        if (!s)
          return fn.emitError() << "lower-to-emitc: parameter " << name
                                << " has no planned slot", failure();
        // A split value (tgrt_param.split) has no f32 slot: tg-plan-memory splits only
        // values the step reads through their working copy (valuesReadOnlyThroughCopies).
        if (s->split)
          return fn.emitError() << "lower-to-emitc: parameter " << name
                                << " is split (its slot holds low halves), but an op reads "
                                   "its f32 value",
                 failure();
        return PtrRef{true, s->offset, e};
      }
      if (auto in = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kInputAttr)) {
        if (in.getValue() != "tokens" && in.getValue() != "targets")
          return fn.emitError() << "lower-to-emitc: unknown input " << in
                                << " (expected tokens or targets)", failure();
        return PtrRef{true,
                      in.getValue() == "tokens" ? report.tokensOffset : report.targetsOffset,
                      e};
      }
      return fn.emitError() << "lower-to-emitc: argument #" << arg.getArgNumber()
                            << " is neither a parameter nor an input", failure();
    }
    Operation *def = v.getDefiningOp();
    if (auto reshape = dyn_cast<ReshapeOp>(def))
      return ptrOf(reshape.getX(), use);
    if (auto c = dyn_cast<CastOp>(def); c && c->hasAttr(kWorkingCopyAttr)) {
      const ParamSlot *s = slotOf(c.getX());
      if (!s || s->workOffset < 0)
        return c.emitOpError() << "lower-to-emitc: marked as a working copy, but its "
                                  "parameter has no planned copy", failure();
      return PtrRef{true, s->workOffset, e};
    }
    auto offsets = def->getAttrOfType<DenseI64ArrayAttr>("tg.offsets");
    unsigned idx = cast<OpResult>(v).getResultNumber();
    if (!offsets || idx >= offsets.size() || offsets[idx] < 0)
      return def->emitOpError() << "has no planned offset (run -tg-plan-memory)", failure();
    if (use && onOffsetRead) onOffsetRead(def, idx);
    return PtrRef{false, offsets[idx], e};
  }

  /// `(T*)(P + offset)`: a pointer of element type `dtype` into the persistent region.
  static PtrRef persistent(int64_t offset, StringRef dtype) {
    return PtrRef{true, offset, elemOf(dtype)};
  }

  /// Parameter slot of a block argument (for gradient / moment pointers).
  const ParamSlot *slotOf(Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg)
      return nullptr;
    auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr);
    if (!name)
      return nullptr;
    auto it = slots.find(name.getValue());
    return it == slots.end() ? nullptr : it->second;
  }

  /// The EmitC value of a region pointer: one `emitc.expression` `(T*)(base + offset)` per
  /// distinct pointer and function, created at its first use.
  Value materialize(const PtrRef &r, Location loc) {
    auto it = ptrCache.find(r.key());
    if (it != ptrCache.end())
      return it->second;
    Type charPtr = ptrTo(opaque("char"));
    Type elem = r.elem == Elem::I32   ? Type(b.getIntegerType(32))
                : r.elem == Elem::U16 ? Type(b.getIntegerType(16, /*isSigned=*/false))
                                      : Type(b.getF32Type());
    Type elemPtr = ptrTo(elem);
    Value offset = b.create<emitc::LiteralOp>(loc, b.getI64Type(), std::to_string(r.byteOffset));
    auto expr = b.create<emitc::ExpressionOp>(loc, elemPtr, /*do_not_inline=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(b.createBlock(&expr.getRegion()));
      if (r.region == kHostRegion && !H) {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointAfter(A.getDefiningOp());
        H = b.create<emitc::CallOpaqueOp>(
                 loc, TypeRange{charPtr}, "tgrt_region", ValueRange{ctxValue},
                 b.getArrayAttr({b.getIndexAttr(0), opaqueAttr("TGRT_HOST")}))
                .getResult(0);
      }
      Value base = r.region == 1 ? P : r.region == kHostRegion ? H : A;
      Value sum = b.create<emitc::AddOp>(loc, charPtr, base, offset);
      Value cast = b.create<emitc::CastOp>(loc, elemPtr, sum);
      b.create<emitc::YieldOp>(loc, cast);
    }
    ptrCache[r.key()] = expr;
    return expr;
  }

  LogicalResult lowerFunction(func::FuncOp fn) {
    Location loc = fn.getLoc();
    Type ctxPtr = ptrTo(opaque("tgrt_ctx"));
    auto out = b.create<emitc::FuncOp>(loc, ("tg_" + fn.getSymName()).str(),
                                       b.getFunctionType({ctxPtr}, {}));
    out.setSpecifiersAttr(b.getStrArrayAttr({"extern \"C\""}));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(out.addEntryBlock());
    ctxValue = out.getArgument(0);
    ptrCache.clear();
    auto region = [&](StringRef which) -> Value {
      return b
          .create<emitc::CallOpaqueOp>(loc, TypeRange{ptrTo(opaque("char"))}, "tgrt_region",
                                       ValueRange{ctxValue},
                                       b.getArrayAttr({b.getIndexAttr(0), opaqueAttr(which)}))
          .getResult(0);
    };
    P = region("TGRT_PERSISTENT");
    A = region("TGRT_ARENA");
    H = Value(); // the host region's base: made on first use (offloaded moments)
    if (!firstStepFn)
      firstStepFn = out;
    // The non-finite checks' switch, read once per step (runtime/tgrt.h): every call that
    // writes a tensor is then followed by `if (dbg) tgrt_check_op(...)`.
    dbg = b.create<emitc::CallOpaqueOp>(loc, TypeRange{b.getI1Type()}, "tgrt_check_enabled",
                                        ValueRange{ctxValue})
              .getResult(0);
    // Phase of each op for the reports: @micro_step's ops after its loss are the backward
    // (they carry their forward op's location).
    currentFunction = fn.getSymName();
    functionPhase = fn.getSymName() == "optimizer_step" ? "optimizer"
                    : fn.getSymName() == "eval_step"    ? "eval"
                                                        : "forward";
    backwardOps.clear();
    if (fn.getSymName() == "micro_step") {
      bool afterLoss = false;
      for (Operation &op : fn.getBody().front()) {
        if (afterLoss)
          backwardOps.insert(&op);
        afterLoss |= isa<CrossEntropyOp>(op);
      }
    }
    // The working copies (tg-plan-memory): refreshed from the values, in one cast over the
    // whole mirrored region, when the host wrote parameter values since the last step
    // (initialisation, a checkpoint, a test); AdamW keeps them current otherwise.
    if (!report.workDtype.empty() && fn.getSymName() != "optimizer_step") {
      Value stale = b.create<emitc::CallOpaqueOp>(loc, TypeRange{b.getI1Type()},
                                                  "tgrt_take_weights_stale",
                                                  ValueRange{ctxValue})
                        .getResult(0);
      Value src = materialize(PtrRef{true, 0, Elem::F32}, loc);
      Value dst = materialize(PtrRef{true, report.workOffset, Elem::U16}, loc);
      // Split master values (tgrt_param.split) sit after the f32 values: their copies are
      // their truth, so the cast covers the f32 values before the first of them only.
      int64_t n = report.workBytes / 2;
      for (const ParamSlot &p : report.params)
        if (p.split)
          n = std::min(n, p.offset / 4);
      std::string wdt = tgrtDtype(report.workDtype);
      b.create<emitc::IfOp>(loc, stale, [&](OpBuilder &ob, Location l) {
        ob.create<emitc::CallOpaqueOp>(
            l, TypeRange{}, "tgrt_cast", ValueRange{ctxValue, src, dst},
            ob.getArrayAttr({ob.getIndexAttr(0), opaqueAttr(cstr("weights.working_copies")),
                             opaqueAttr("TGRT_F32"), ob.getIndexAttr(1), opaqueAttr(wdt),
                             ob.getIndexAttr(2), ob.getI64IntegerAttr(n)}));
        ob.create<emitc::YieldOp>(l);
      });
    }
    if (fn.getSymName() == "micro_step")
      planGradientBuckets(fn);
    // Gradients in the arena: each slot is zeroed right before the first op that may write
    // it (MemoryPlan.h gradientFirstWrites; the plan reserves it from that op on), so the
    // accumulating writes that follow start from zero, as persistent slots do.
    std::map<int64_t, SmallVector<const ParamSlot *>> zeroAt;
    wgradWrites.clear();
    wgradBias.clear();
    biasInWgrad.clear();
    lnSlotWrites.clear();
    embSlotWrites.clear();
    lossSlotWrites.clear();
    lnBias.clear();
    slotWritten.clear();
    accBiasRows.clear();
    if (report.gradsInArena && fn.getSymName() == "micro_step") {
      llvm::StringMap<int64_t> firstWrites = gradientFirstWrites(fn);
      planWeightGradWrites(fn, firstWrites);
      for (const auto &[name, at] : firstWrites) {
        auto it = slots.find(name);
        if (it == slots.end())
          return fn.emitError() << "lower-to-emitc: parameter " << name
                                << " has no planned slot", failure();
        if (!writtenWhole.contains(it->second))
          zeroAt[at].push_back(it->second);
      }
    }
    if (fn.getSymName() == "micro_step") planBiasRowsAccumulations(fn);
    int64_t opIndex = 0;
    for (Operation &op : fn.getBody().front()) {
      if (auto z = zeroAt.find(opIndex++); z != zeroAt.end()) {
        llvm::sort(z->second, [](const ParamSlot *a, const ParamSlot *c) {
          return a->gradOffset < c->gradOffset;
        });
        // The whole 256-byte aligned slot: the optimizer's calls run over runs of slots,
        // padding included, which must read as zeros (the plan reserves it with the slot).
        for (const ParamSlot *s : z->second)
          if (failed(call(&op, "tgrt_zero",
                          {gradSlot(s), (dtypeBytes(s->gradDtype) * s->numel * (1 + s->padRows) +
                                         kBufferAlignment - 1) /
                                            kBufferAlignment * kBufferAlignment},
                          "zero_grad." + s->name)))
            return failure();
      }
      // Element types need no check here: the plan (readPlanReport) already refused any
      // tensor that is not f32, bf16, f16 or i32.
      size_t fusedBefore = fusedAway.size();
      size_t callsBefore = trace ? trace->size() : 0;
      bool alreadyFused = fusedAway.contains(&op);
      if (failed(lowerOp(&op)))
        return failure();
      if (trace)
        attributeFlops(&op, alreadyFused, fusedBefore, callsBefore);
      // A slot only becomes final where an accumulate of it is passed or fused, or where an
      // add finishing a fused sum is lowered: look for finished buckets there only.
      if (!buckets.empty() &&
          (isa<AccumulateGradOp>(op) || slotAdds.count(&op) || fusedAway.size() != fusedBefore) &&
          failed(startFinishedBuckets(&op)))
        return failure();
    }
    // An op planned to write its slots but lowered otherwise would add into slots that
    // nobody zeroed.
    for (const auto *planned : {&lnSlotWrites, &embSlotWrites, &lossSlotWrites})
      for (Operation *w : *planned)
        if (!slotWritten.contains(w))
          return w->emitError() << "lower-to-emitc: internal error: a gradient slot was "
                                   "planned as written (not zeroed) by this op, which was "
                                   "lowered otherwise",
                 failure();
    b.create<emitc::ReturnOp>(loc, Value());
    return success();
  }

  /// A tensor a runtime call reads or writes, as runtime/tgrt.h's tgrt_check_tensor.
  struct CheckTensor {
    std::string name, shape;
    std::string dtype; ///< TGRT_F32, TGRT_BF16, TGRT_F16 or TGRT_CHECK_I32
    int role = 0;      ///< enum tgrt_check_role: 0 in, 1 in (overwritten), 2 out
    int flags = 0;     ///< TGRT_CHECK_NEG_INF_OK = 1
    PtrRef ptr;
    int64_t rows = 1, cols = 0, ld = 0;
    int64_t bytes() const {
      int64_t e = dtype == "TGRT_BF16" || dtype == "TGRT_F16" ? 2 : 4;
      return e * ((rows > 0 ? (rows - 1) * ld : 0) + cols);
    }
    bool overlaps(const CheckTensor &o) const {
      return ptr.region == o.ptr.region && ptr.byteOffset < o.ptr.byteOffset + o.bytes() &&
             o.ptr.byteOffset < ptr.byteOffset + bytes();
    }
    auto key() const {
      return std::make_tuple(role, ptr.region, ptr.byteOffset, rows, cols, ld, dtype);
    }
  };

  /// One argument of a runtime call after (ctx, "location"): an integer (a size in
  /// elements, a flag), an fp32 constant, verbatim C++ text, a planned value (turned into
  /// its pointer), or an explicit region pointer.
  struct Arg {
    enum Kind { Int, Float, Text, Val, Ptr } kind;
    Arg(int64_t i) : kind(Int), i(i) {}
    Arg(std::string t) : kind(Text), text(std::move(t)) {}
    Arg(Value v) : kind(Val), value(v) {}
    Arg(PtrRef p) : kind(Ptr), ptr(p) {}
    static Arg fp32(float v) {
      Arg a(int64_t(0));
      a.kind = Float;
      a.f = v;
      return a;
    }
    /// A Ptr argument's tensor for the non-finite checks: rows x cols elements of dtype
    /// (TGRT_*), rows ld apart; rows < 0 when the checks should not look at it (a strided
    /// view whose whole tensor the call site describes instead).
    Arg view(std::string name, std::string shape, std::string dtype, int64_t rows,
             int64_t cols, int64_t ld) && {
      viewName = std::move(name);
      viewShape = std::move(shape);
      viewDtype = std::move(dtype);
      viewRows = rows;
      viewCols = cols;
      viewLd = ld;
      return std::move(*this);
    }
    int64_t i = 0;
    float f = 0;
    std::string text;
    Value value;
    PtrRef ptr;
    std::string viewName, viewShape, viewDtype;
    int64_t viewRows = -1, viewCols = 0, viewLd = 0;
    /// The view counts in the trace's bytes but the non-finite checks skip it (bits that
    /// are not a float: a split value's low halves).
    bool noCheck = false;
    Arg unchecked() && {
      noCheck = true;
      return std::move(*this);
    }
  };
  static Arg flt(float v) { return Arg::fp32(v); }
  /// A parameter's gradient slot as an argument, described for the checks: persistent, or
  /// in the arena when the plan put the gradients there (PlanReport::gradsInArena).
  Arg gradSlot(const ParamSlot *s) const {
    return Arg(gradPtr(s->gradOffset, s->gradDtype))
        .view(s->name + " (gradient)", shapeText(s->shape), tgrtDtype(s->gradDtype), 1, s->numel,
              s->numel);
  }
  /// A pointer into the gradient slots' region (persistent, or the arena).
  PtrRef gradPtr(int64_t offset, StringRef dtype) const {
    PtrRef p = persistent(offset, dtype);
    if (report.gradsInArena)
      p.region = 0;
    return p;
  }
  /// slotRun of gradient slots (gradPtr's region).
  Arg gradRun(int64_t offset, StringRef dtype, int64_t n, std::string what) const {
    Arg a = slotRun(offset, dtype, n, std::move(what));
    a.ptr = gradPtr(offset, dtype);
    return a;
  }
  /// n elements of dtype at a persistent offset (a run of parameter slots, see Run).
  static Arg slotRun(int64_t offset, StringRef dtype, int64_t n, std::string what) {
    return Arg(persistent(offset, dtype))
        .view(std::move(what), "[" + std::to_string(n) + "]", tgrtDtype(dtype), 1, n, n);
  }
  /// slotRun of an AdamW moment: in the host region under CPU offload (the plan's
  /// host_bytes > 0), else in the persistent region.
  Arg momentRun(int64_t offset, StringRef dtype, int64_t n, std::string what) const {
    Arg a = slotRun(offset, dtype, n, std::move(what));
    if (report.hostBytes > 0)
      a.ptr.region = kHostRegion;
    return a;
  }
  /// The TGRT_* element type of a value, as a call argument.
  static Arg dt(Value v) { return Arg(tgrtDtype(rt(v).getElementType())); }
  static Arg dt(StringRef dtype) { return Arg(tgrtDtype(dtype)); }

  /// Emits `emitc.call_opaque "fnName"(ctx, "loc", args...)`, guarded non-finite checks
  /// around it (checkSite). `where` replaces the op's location name in the call
  /// (multi-tensor calls); `extra` adds tensors for the checks that no argument describes
  /// (the whole of a strided view's tensor).
  LogicalResult call(Operation *op, StringRef fnName, ArrayRef<Arg> args,
                     StringRef where = "", ArrayRef<CheckTensor> extra = {}) {
    Location loc = op->getLoc();
    std::string locText = where.empty() ? locName(loc) : where.str();
    // ZeRO-3 prefetch: a call reading an arena buffer a gather is still filling waits first
    // (whichever op the call comes from, fused or not).
    if (!pendingGathers.empty() && fnName != "tgrt_all_gather_start" &&
        fnName != "tgrt_all_reduce_wait") {
      bool reads = false;
      for (const Arg &a : args) {
        if (a.kind != Arg::Val && a.kind != Arg::Ptr)
          continue;
        PtrRef r = a.ptr;
        if (a.kind == Arg::Val) {
          FailureOr<PtrRef> p = ptrOf(a.value);
          if (failed(p))
            continue; // call() reports it below
          r = *p;
        }
        for (auto [lo, hi] : pendingGathers)
          reads |= r.region == 0 && r.byteOffset >= lo && r.byteOffset < hi;
      }
      if (reads && failed(waitCollectives(op)))
        return failure();
    }
    int64_t site = -1;
    bool before = false;
    if (failed(checkSite(op, fnName, args, extra, locText, site, before)))
      return failure();
    if (before)
      emitCheck("tgrt_check_inputs", site, loc);
    SmallVector<Value> operands{ctxValue};
    SmallVector<Attribute> attrs{b.getIndexAttr(0), opaqueAttr(cstr(locText))};
    for (const Arg &a : args) {
      switch (a.kind) {
      case Arg::Int:
        attrs.push_back(b.getI64IntegerAttr(a.i));
        continue;
      case Arg::Float:
        attrs.push_back(b.getF32FloatAttr(a.f));
        continue;
      case Arg::Text:
        attrs.push_back(opaqueAttr(a.text));
        continue;
      case Arg::Val:
      case Arg::Ptr:
        break;
      }
      PtrRef r = a.ptr;
      if (a.kind == Arg::Val) {
        auto p = ptrOf(a.value);
        if (failed(p))
          return failure();
        r = *p;
      }
      attrs.push_back(b.getIndexAttr(operands.size()));
      operands.push_back(materialize(r, loc));
    }
    b.create<emitc::CallOpaqueOp>(loc, TypeRange{}, fnName, operands, b.getArrayAttr(attrs));
    if (trace && failed(traceCall(op, fnName, args, locText)))
      return failure();
    if (site >= 0)
      emitCheck("tgrt_check_op", site, loc);
    return success();
  }

  // ------------------------------------------------------------ non-finite checks --

  /// Where a value comes from, for the reports: "layers.1.mlp.fc.weight (parameter)",
  /// "tokens (input)", "layers.1.ln2 (tg.layer_norm result 0)", "... , backward)".
  std::string valueName(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (auto n = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamNameAttr))
        return n.str() + " (parameter)";
      if (auto n = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kInputAttr))
        return n.str() + " (input)";
      return "argument #" + std::to_string(arg.getArgNumber());
    }
    Operation *def = v.getDefiningOp();
    if (auto reshape = dyn_cast<ReshapeOp>(def))
      return valueName(reshape.getX()); // a view of its source's buffer
    std::string s = locName(def->getLoc()) + " (" + def->getName().getStringRef().str();
    if (def->getNumResults() > 1)
      s += " result " + std::to_string(cast<OpResult>(v).getResultNumber());
    if (backwardOps.contains(def))
      s += ", backward";
    return s + ")";
  }

  /// The whole tensor of a planned value, with `role`.
  FailureOr<CheckTensor> checkTensorOf(Value v, int role) {
    FailureOr<PtrRef> p = ptrOf(v);
    if (failed(p))
      return failure();
    Type e = rt(v).getElementType();
    CheckTensor t;
    t.name = valueName(v);
    t.shape = shapeText(rt(v).getShape());
    t.dtype = e.isInteger(32) ? "TGRT_CHECK_I32" : tgrtDtype(e);
    t.role = role;
    t.ptr = *p;
    t.cols = t.ld = numel(v);
    return t;
  }

  /// Fills the check site of a call (one entry of kCheckSites) from kernelAccess and the
  /// arguments: `site` its index, or -1 when the call writes no tensor to check; `before`
  /// when an input is overwritten by an output (then tgrt_check_inputs precedes the call).
  LogicalResult checkSite(Operation *op, StringRef fnName, ArrayRef<Arg> args,
                          ArrayRef<CheckTensor> extra, StringRef locText, int64_t &site,
                          bool &before) {
    site = -1;
    before = false;
    StringRef access = kernelAccess(fnName);
    if (access.empty())
      return success();
    if (access.size() != args.size())
      return op->emitOpError() << "lower-to-emitc: internal: " << fnName << " takes "
                               << access.size() << " arguments after (ctx, loc) in the "
                               << "non-finite check table, the call has " << args.size();
    SmallVector<CheckTensor> ts;
    for (size_t i = 0; i < args.size(); ++i) {
      const Arg &a = args[i];
      char c = access[i];
      if (c == '-' || (a.kind != Arg::Val && a.kind != Arg::Ptr))
        continue;
      CheckTensor t;
      if (a.kind == Arg::Val) {
        FailureOr<CheckTensor> vt = checkTensorOf(a.value, 0);
        if (failed(vt))
          return failure();
        t = *vt;
      } else {
        if (a.viewRows < 0 || a.noCheck)
          continue; // described by `extra`, or not floats
        t.name = a.viewName;
        t.shape = a.viewShape;
        t.dtype = a.viewDtype;
        t.ptr = a.ptr;
        t.rows = a.viewRows;
        t.cols = a.viewCols;
        t.ld = a.viewLd;
      }
      if (c == 'R' || c == 'M') {
        t.role = c == 'M' ? 1 : 0;
        ts.push_back(t);
      }
      if (c == 'W' || c == 'M') {
        t.role = 2;
        ts.push_back(t);
      }
    }
    ts.append(extra.begin(), extra.end());
    // A causal mask's masked scores are -inf by design (the softmax reads them).
    if (auto mask = dyn_cast<CausalMaskOp>(op);
        mask && std::isinf(mask.getMaskedValue().convertToFloat()) &&
        mask.getMaskedValue().convertToFloat() < 0)
      for (CheckTensor &t : ts)
        if (t.role == 2)
          t.flags |= 1;
    // Inputs that share bytes with an output are overwritten by the call.
    for (CheckTensor &t : ts)
      if (t.role == 0)
        for (const CheckTensor &o : ts)
          if (o.role == 2 && t.overlaps(o))
            t.role = 1;
    // One entry per tensor (q, k, v of one packed buffer, an input passed twice).
    SmallVector<CheckTensor> unique;
    for (const CheckTensor &t : ts)
      if (llvm::none_of(unique, [&](const CheckTensor &u) { return u.key() == t.key(); }))
        unique.push_back(t);
    if (llvm::none_of(unique, [](const CheckTensor &t) { return t.role == 2; }))
      return success();
    // Outputs first, then inputs: the order of the report.
    llvm::stable_sort(unique, [](const CheckTensor &x, const CheckTensor &y) {
      return (x.role == 2) > (y.role == 2);
    });
    static const char *const kRoles[3] = {"TGRT_CHECK_IN", "TGRT_CHECK_IN_OVERWRITTEN",
                                          "TGRT_CHECK_OUT"};
    const int64_t first = checkTensorCount;
    for (const CheckTensor &t : unique) {
      before |= t.role == 1;
      std::string line;
      llvm::raw_string_ostream os(line);
      os << "  {" << cstr(t.name) << ", " << cstr(t.shape) << ", " << kRoles[t.role] << ", "
         << t.dtype << ", " << regionName(t.ptr.region) << ", "
         << t.flags << ", " << t.ptr.byteOffset << "LL, " << t.rows << "LL, " << t.cols
         << "LL, " << t.ld << "LL},\n";
      checkTensorText += line;
      ++checkTensorCount;
    }
    StringRef phase = backwardOps.contains(op) ? "backward" : functionPhase;
    std::string line;
    llvm::raw_string_ostream os(line);
    os << "  {" << cstr(locText) << ", " << cstr(op->getName().getStringRef()) << ", "
       << cstr(fnName) << ", " << cstr(phase) << ", " << (checkTensorCount - first)
       << ", kCheckTensors + " << first << "},\n";
    checkSiteText += line;
    site = checkSiteCount++;
    return success();
  }

  /// `if (dbg) { fn(ctx, &kCheckSites[site]); }`
  void emitCheck(StringRef fn, int64_t site, Location loc) {
    b.create<emitc::IfOp>(loc, dbg, [&](OpBuilder &ob, Location l) {
      ob.create<emitc::CallOpaqueOp>(
          l, TypeRange{}, fn, ValueRange{ctxValue},
          ob.getArrayAttr({ob.getIndexAttr(0),
                           opaqueAttr("&kCheckSites[" + std::to_string(site) + "]")}));
      ob.create<emitc::YieldOp>(l);
    });
  }

  /// kCheckTensors and kCheckSites (static const tables of the checks), before the first
  /// step function that refers to them.
  void emitCheckTables() {
    Location loc = module.getLoc();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(firstStepFn);
    auto table = [&](StringRef name, StringRef type, int64_t n, const std::string &rows) {
      auto t = emitc::ArrayType::get({std::max<int64_t>(n, 1)}, opaque(type));
      b.create<emitc::GlobalOp>(loc, name, t, opaqueAttr("{\n" + rows + "}"),
                                /*extern=*/false, /*static=*/true, /*const=*/true);
    };
    table("kCheckTensors", "tgrt_check_tensor", checkTensorCount, checkTensorText);
    table("kCheckSites", "tgrt_check_site", checkSiteCount, checkSiteText);
  }

  LogicalResult lowerOp(Operation *op) {
    if (fusedAway.contains(op))
      return success(); // done by an earlier call (e.g. an accumulation into its slot)
    return llvm::TypeSwitch<Operation*, LogicalResult>(op)
        .Case([&](EmbeddingOp o) {
          // A table with split master values (tg-plan-memory split-master: a tied embedding
          // under bf16-mixed): its f32 rows joined from the working copy and the low halves.
          if (const ParamSlot *s = slotOf(o.getTable()); s && s->split) {
            if (s->workOffset < 0 || report.workDtype != "bf16")
              return LogicalResult(op->emitOpError() << "lower-to-emitc: '" << s->name
                                                     << "' is split, which needs bf16 working copies");
            return call(op, "tgrt_embedding_fwd_split",
                        {slotRun(s->workOffset, "bf16", s->numel,
                                 s->name + " (working copy, high halves)"),
                         Arg(persistent(s->offset, "bf16"))
                             .view(s->name + " (low halves)", shapeText(s->shape), "TGRT_BF16",
                                   1, s->numel, s->numel)
                             .unchecked(),
                         Arg(o.getIds()), Arg(o.getResult()), numel(o.getIds()),
                         dim(o.getTable(), 1), dim(o.getTable(), 0)});
          }
          return call(op, "tgrt_embedding_fwd",
                      {dt(o.getTable()), Arg(o.getTable()), Arg(o.getIds()), Arg(o.getResult()),
                       numel(o.getIds()), dim(o.getTable(), 1), dim(o.getTable(), 0)});
        })
        .Case([&](PositionalEmbeddingOp o) {
          return call(op, "tgrt_positional_fwd",
                      {dt(o.getX()), Arg(o.getX()), Arg(o.getWpe()), Arg(o.getResult()), dim(o.getX(), 0),
                       dim(o.getX(), 1), dim(o.getX(), 2)});
        })
        .Case([&](AddOp o) {
          // The other half of a gradient whose GEMM half went into the slot (gradientSink).
          if (auto it = slotAdds.find(o); it != slotAdds.end()) {
            const ParamSlot *s = it->second.first;
            return call(op, "tgrt_accumulate",
                        {dt(s->gradDtype), gradSlot(s), Arg(it->second.second), s->numel});
          }
          return emitAdd(o);
        })
        .Case([&](LayerNormOp o) {
          int64_t d = dim(o.getX(), -1);
          // tg-bias-rows: y [rows, d + kOnesColumns], its last columns 1, 0, ...
          return call(op, o->hasAttr("tg.ones_column") ? "tgrt_layer_norm_fwd_ones"
                                                       : "tgrt_layer_norm_fwd",
                      {dt(o.getX()), Arg(o.getX()), dt(o.getGamma()), Arg(o.getGamma()),
                       Arg(o.getBeta()), dt(o.getY()), Arg(o.getY()),
                       Arg(o.getMean()), Arg(o.getRstd()), numel(o.getX()) / d, d,
                       flt(o.getEps().convertToFloat())});
        })
        .Case([&](AddLayerNormOp o) {
          // tg-fuse's add + layer norm: the planner kept every result apart from a and b.
          // tg-bias-rows (a recomputed one under selective checkpointing): y [rows,
          // d + kOnesColumns], its last columns 1, 0, ...
          int64_t d = dim(o.getA(), -1);
          return call(op,
                      o->hasAttr("tg.ones_column") ? "tgrt_add_layer_norm_fwd_ones"
                                                   : "tgrt_add_layer_norm_fwd",
                      {dt(o.getSum()), Arg(o.getA()), dt(o.getB()), Arg(o.getB()), Arg(o.getSum()),
                       dt(o.getGamma()), Arg(o.getGamma()), Arg(o.getBeta()), dt(o.getY()),
                       Arg(o.getY()), Arg(o.getMean()), Arg(o.getRstd()), numel(o.getA()) / d, d,
                       flt(o.getEps().convertToFloat())});
        })
        .Case([&](RmsNormOp o) {
          int64_t d = dim(o.getX(), -1);
          return call(op, "tgrt_rms_norm_fwd",
                      {dt(o.getX()), Arg(o.getX()), dt(o.getGamma()), Arg(o.getGamma()),
                       dt(o.getY()), Arg(o.getY()), Arg(o.getRstd()), numel(o.getX()) / d, d,
                       flt(o.getEps().convertToFloat())});
        })
        .Case([&](RopeOp o) {
          int64_t H = o.getHeads(), Hkv = o.getKvHeads();
          int64_t hd = dim(o.getX(), 2) / (H + 2 * Hkv);
          ArrayRef<float> sc = o.getScaling();
          return call(op, "tgrt_rope_scaled",
                      {dt(o.getX()), Arg(o.getX()), Arg(o.getResult()), dim(o.getX(), 0),
                       dim(o.getX(), 1), H, Hkv, hd, flt(o.getTheta().convertToFloat()),
                       flt(sc[0]), flt(sc[1]), flt(sc[2]), flt(sc[3]),
                       int64_t(o.getInverse() ? -1 : 1)});
        })
        .Case([&](SwigluOp o) {
          int64_t f = dim(o.getResult(), -1);
          return call(op, "tgrt_swiglu_fwd",
                      {dt(o.getX()), Arg(o.getX()), Arg(o.getResult()), numel(o.getResult()) / f, f});
        })
        .Case([&](RmsNormGradOp o) {
          int64_t d = dim(o.getX(), -1);
          // dgamma straight into its gradient slot when that is the slot's only write
          // (planWeightGradWrites: the slot is not zeroed, its accumulation emits nothing).
          const ParamSlot *slot = nullptr;
          if (takePlannedWrite(lnSlotWrites, op)) {
            SlotSink sg = slotSink(o.getDgamma(), /*allowAdd=*/false);
            slot = slotOf(sg.acc.getParam());
            fusedAway.insert(sg.acc);
          }
          Arg dgamma = slot ? gradSlot(slot) : Arg(o.getDgamma());
          // The residual stream's gradient: dx added in place (and its low copy for the next
          // GEMM) by the same pass, as the layer norm's tgrt_layer_norm_bwd_acc.
          if (auto [add, low] = residualGradSink(o, o.getDx(), o.getDy()); add) {
            fusedAway.insert(add);
            if (low)
              fusedAway.insert(low);
            Value dres = add.getLhs() == o.getDx() ? add.getRhs() : add.getLhs();
            return call(op, "tgrt_rms_norm_bwd_acc",
                        {dt(o.getDy()), Arg(o.getDy()), dt(o.getX()), Arg(o.getX()),
                         dt(o.getGamma()), Arg(o.getGamma()), Arg(o.getRstd()), Arg(dres),
                         low ? dt(low.getResult()) : Arg(std::string("TGRT_F32")),
                         low ? Arg(low.getResult()) : Arg(std::string("NULL")), dgamma,
                         numel(o.getX()) / d, d});
          }
          return call(op, "tgrt_rms_norm_bwd",
                      {dt(o.getDy()), Arg(o.getDy()), dt(o.getX()), Arg(o.getX()),
                       dt(o.getGamma()), Arg(o.getGamma()), Arg(o.getRstd()), Arg(o.getDx()),
                       dgamma, numel(o.getX()) / d, d});
        })
        .Case([&](SwigluGradOp o) {
          int64_t f = dim(o.getDy(), -1);
          return call(op, "tgrt_swiglu_bwd",
                      {dt(o.getX()), Arg(o.getX()), Arg(o.getDy()), Arg(o.getResult()),
                       numel(o.getDy()) / f, f});
        })
        .Case([&](MatmulOp o) { return emitMatmul(o); })
        .Case([&](MatmulResidualOp o) {
          int64_t n = dim(o.getOut(), -1), k = dim(o.getA(), -1);
          return call(op, "tgrt_matmul_bias_residual",
                      {dt(o.getA()), Arg(o.getA()), Arg(o.getB()), dt(o.getRes()),
                       o.getBias() ? Arg(o.getBias()) : Arg(std::string("NULL")),
                       Arg(o.getRes()), Arg(o.getOut()), numel(o.getOut()) / n, n, k,
                       int64_t(0), int64_t(o.getTransposeB() ? 1 : 0),
                       flt(o.getAlpha().convertToFloat())});
        })
        .Case([&](MatmulBiasOp o) {
          int64_t n = dim(o.getOut(), -1), k = dim(o.getA(), -1);
          if (o->hasAttr("tg.bias_rows")) { // A: the layer norm's [rows, k + kOnesColumns]
            FailureOr<Arg> a = onesColumnOperand(o);
            if (failed(a))
              return failure();
            return call(op, "tgrt_matmul_bias_lda",
                        {dt(o.getA()), *a, Arg(o.getB()), Arg(o.getBias()), Arg(o.getOut()),
                         numel(o.getOut()) / n, n, k, k + kOnesColumns,
                         int64_t(o.getTransposeB() ? 1 : 0), flt(o.getAlpha().convertToFloat())});
          }
          return call(op, "tgrt_matmul_bias",
                      {dt(o.getA()), Arg(o.getA()), Arg(o.getB()), Arg(o.getBias()),
                       Arg(o.getOut()), numel(o.getOut()) / n, n, k, int64_t(0),
                       int64_t(o.getTransposeB() ? 1 : 0), flt(o.getAlpha().convertToFloat())});
        })
        .Case([&](MatmulDgeluBgradOp o) { return emitDgeluBgrad(o); })
        .Case([&](MatmulBiasGeluOp o) {
          int64_t n = dim(o.getOut(), -1), k = dim(o.getA(), -1);
          if (o->hasAttr("tg.bias_rows")) { // A: the layer norm's [rows, k + kOnesColumns]
            FailureOr<Arg> a = onesColumnOperand(o);
            if (failed(a))
              return failure();
            return call(op, "tgrt_matmul_bias_gelu_lda",
                        {dt(o.getA()), *a, Arg(o.getB()), Arg(o.getBias()), Arg(o.getPre()),
                         Arg(o.getOut()), numel(o.getOut()) / n, n, k, k + kOnesColumns,
                         int64_t(o.getTransposeB() ? 1 : 0), flt(o.getAlpha().convertToFloat())});
          }
          return call(op, "tgrt_matmul_bias_gelu",
                      {dt(o.getA()), Arg(o.getA()), Arg(o.getB()), Arg(o.getBias()),
                       Arg(o.getPre()), Arg(o.getOut()), numel(o.getOut()) / n, n, k,
                       int64_t(0), int64_t(o.getTransposeB() ? 1 : 0),
                       flt(o.getAlpha().convertToFloat())});
        })
        .Case([&](BiasAddOp o) {
          int64_t n = dim(o.getX(), -1);
          return call(op, "tgrt_bias_add",
                      {dt(o.getX()), Arg(o.getX()), Arg(o.getBias()), Arg(o.getResult()), numel(o.getX()) / n, n});
        })
        .Case([&](GeluOp o) {
          return call(op, "tgrt_gelu_fwd", {dt(o.getX()), Arg(o.getX()), Arg(o.getResult()), numel(o.getX())});
        })
        .Case([&](DropoutOp o) {
          return call(op, "tgrt_dropout",
                      {dt(o.getX()), Arg(o.getX()), Arg(o.getResult()), numel(o.getX()),
                       flt(o.getRate().convertToFloat()),
                       std::to_string((uint64_t)o.getSeed()) + "ULL"});
        })
        .Case([&](ReshapeOp) { return success(); }) // a view: no code
        .Case([&](CastOp o) {
          if (o->hasAttr(kWorkingCopyAttr))
            return success(); // reads the parameter's working copy (written by AdamW)
          if (castIntoAdd(o))
            return success(); // read by the next op, tgrt_add_mixed
          return call(op, "tgrt_cast", {dt(o.getX()), Arg(o.getX()), dt(o.getResult()),
                                        Arg(o.getResult()), numel(o.getX())});
        })
        .Case([&](TransposeOp o) {
          auto shape = rt(o.getX()).getShape();
          int64_t pad = 4 - (int64_t)shape.size();
          SmallVector<int64_t> d(pad, 1), p;
          d.append(shape.begin(), shape.end());
          for (int64_t i = 0; i < pad; ++i)
            p.push_back(i);
          for (int64_t x : o.getPerm())
            p.push_back(x + pad);
          return call(op, "tgrt_transpose4",
                      {dt(o.getX()), Arg(o.getX()), Arg(o.getResult()), d[0], d[1], d[2], d[3],
                       p[0], p[1], p[2], p[3]});
        })
        .Case(
            [&](SplitOp o) { return emitPieces(op, o.getX(), o.getResults(), o.getAxis(), true); })
        .Case([&](ConcatOp o) {
          return emitPieces(op, o.getResult(), o.getInputs(), o.getAxis(), false);
        })
        .Case([&](CausalMaskOp o) {
          int64_t tq = dim(o.getX(), -2), tk = dim(o.getX(), -1);
          return call(op, "tgrt_causal_mask",
                      {dt(o.getX()), Arg(o.getX()), Arg(o.getResult()), numel(o.getX()) / (tq * tk), tq, tk,
                       (int64_t)o.getWindow(), flt(o.getMaskedValue().convertToFloat())});
        })
        .Case([&](SoftmaxOp o) {
          int64_t n = dim(o.getX(), -1);
          return call(op, "tgrt_softmax_fwd",
                      {dt(o.getX()), Arg(o.getX()), Arg(o.getResult()), numel(o.getX()) / n, n});
        })
        .Case([&](CrossEntropyOp o) {
          // A training step's loss: one tgrt_cross_entropy_fwd_bwd at the gradient instead.
          if (CrossEntropyGradOp g = fusableLossGrad(o)) {
            deferredLoss[g] = o;
            return success();
          }
          return call(op, "tgrt_cross_entropy_fwd",
                      {dt(o.getLogits()), Arg(o.getLogits()), Arg(o.getTargets()), Arg(o.getLoss()),
                       numel(o.getTargets()), dim(o.getLogits(), -1), (int64_t)o.getIgnoreIndex()});
        })
        .Case([&](AttentionOp o) {
          // [B, H, T, hd] contiguous: strides (H T hd, T hd, hd) in and out.
          int64_t B = dim(o.getQ(), 0), H = dim(o.getQ(), 1), T = dim(o.getQ(), 2),
                  hd = dim(o.getQ(), 3), Hkv = dim(o.getK(), 1);
          if (Hkv != H) // grouped-query: k, v [B, Hkv, T, hd] read in place
            return call(op, "tgrt_attention_gqa_fwd",
                        {dt(o.getQ()), Arg(o.getQ()), Arg(o.getK()), Arg(o.getV()),
                         Arg(o.getOut()), Arg(o.getLse()), B, H, Hkv, T, hd, H * T * hd,
                         T * hd, hd, Hkv * T * hd, T * hd, hd, H * T * hd, T * hd, hd,
                         int64_t(o.getCausal() ? 1 : 0), (int64_t)o.getWindow(),
                         flt(o.getScale().convertToFloat())});
          return call(op, "tgrt_attention_fwd",
                      {dt(o.getQ()), Arg(o.getQ()), Arg(o.getK()), Arg(o.getV()),
                       Arg(o.getOut()), Arg(o.getLse()), B, H, T, hd, H * T * hd, T * hd, hd,
                       H * T * hd, T * hd, hd, int64_t(o.getCausal() ? 1 : 0),
                       (int64_t)o.getWindow(), flt(o.getScale().convertToFloat())});
        })
        .Case([&](AttentionQKVOp o) {
          Packed p = packed(o.getQkv(), (int64_t)o.getHeads(), (int64_t)o.getKvHeads());
          auto qkv = ptrOf(o.getQkv());
          if (failed(qkv))
            return failure();
          // q, k, v are strided views: the checks see the packed qkv whole.
          FailureOr<CheckTensor> whole = checkTensorOf(o.getQkv(), 0);
          if (failed(whole))
            return failure();
          if (p.grouped())
            return call(op, "tgrt_attention_gqa_fwd",
                        {dt(o.getQkv()), p.at(*qkv, 0), p.at(*qkv, 1), p.at(*qkv, 2),
                         Arg(o.getOut()), Arg(o.getLse()), p.B, p.H, p.Hkv, p.T, p.hd,
                         p.T * p.W, p.hd, p.W, p.T * p.W, p.hd, p.W, p.T * p.Q, p.hd, p.Q,
                         int64_t(o.getCausal() ? 1 : 0), (int64_t)o.getWindow(),
                         flt(o.getScale().convertToFloat())},
                        "", {*whole});
          return call(op, "tgrt_attention_fwd",
                      {dt(o.getQkv()), p.at(*qkv, 0), p.at(*qkv, 1), p.at(*qkv, 2),
                       Arg(o.getOut()), Arg(o.getLse()), p.B, p.H, p.T, p.hd, p.T * 3 * p.D,
                       p.hd, 3 * p.D, p.T * p.D, p.hd, p.D, int64_t(o.getCausal() ? 1 : 0),
                       (int64_t)o.getWindow(), flt(o.getScale().convertToFloat())},
                      "", {*whole});
        })
        .Case([&](FillOp o) {
          return call(op, o.getLossScaled() ? "tgrt_fill_loss_scaled" : "tgrt_fill",
                      {dt(o.getResult()), Arg(o.getResult()), numel(o.getResult()),
                                        flt(o.getValue().convertToFloat())});
        })
        .Case([&](EmbeddingGradOp o) {
          // The table's gradient straight into the parameter's slot when its only reader is
          // that slot's accumulation (same type): added into (tgrt_embedding_bwd_acc: only
          // the rows of the batch's ids are touched; no vocab x d scratch), or written when
          // it is the slot's only write (planWeightGradWrites: no tgrt_zero before it).
          SlotSink sink = slotSink(o.getResult(), /*allowAdd=*/false);
          const bool slot = sink.acc && !sink.cast;
          if (slot)
            fusedAway.insert(sink.acc);
          const bool write = slot && takePlannedWrite(embSlotWrites, op);
          return call(op,
                      slot && !write ? "tgrt_embedding_bwd_acc" : "tgrt_embedding_bwd",
                      {dt(o.getDout()), Arg(o.getIds()), Arg(o.getDout()),
                       slot ? gradSlot(slotOf(sink.acc.getParam())) : Arg(o.getResult()),
                       numel(o.getIds()), dim(o.getResult(), 1), dim(o.getResult(), 0)});
        })
        .Case([&](PositionalEmbeddingGradOp o) {
          return call(op, "tgrt_positional_bwd",
                      {dt(o.getDout()), Arg(o.getDout()), Arg(o.getResult()), dim(o.getDout(), 0),
                       dim(o.getDout(), 1), dim(o.getDout(), 2), dim(o.getResult(), 0)});
        })
        .Case([&](LayerNormGradOp o) {
          int64_t d = dim(o.getX(), -1);
          if (auto [add, low] = residualGradSink(o, o.getDx(), o.getDy()); add) {
            fusedAway.insert(add);
            if (low)
              fusedAway.insert(low);
            Value dres = add.getLhs() == o.getDx() ? add.getRhs() : add.getLhs();
            // dgamma and dbeta straight into their gradient slots when each one's only
            // reader is its slot's accumulation (same type: no cast between).
            SlotSink sg = slotSink(o.getDgamma(), /*allowAdd=*/false);
            SlotSink sb = slotSink(o.getDbeta(), /*allowAdd=*/false);
            const bool slots = sg.acc && !sg.cast && sb.acc && !sb.cast;
            if (slots) {
              fusedAway.insert(sg.acc);
              fusedAway.insert(sb.acc);
            }
            // The slots' only writes (planWeightGradWrites): written, not added into; with
            // the projection's bias gradient (lnBias) summed by the same call.
            const bool write = slots && takePlannedWrite(lnSlotWrites, op);
            const ParamSlot *bias = write ? lnBias.lookup(op) : nullptr;
            SmallVector<Arg> args = {
                dt(o.getDy()), Arg(o.getDy()), dt(o.getX()), Arg(o.getX()),
                dt(o.getGamma()), Arg(o.getGamma()), Arg(o.getMean()), Arg(o.getRstd()),
                Arg(dres), low ? dt(low.getResult()) : Arg(std::string("TGRT_F32")),
                low ? Arg(low.getResult()) : Arg(std::string("NULL")),
                slots ? gradSlot(slotOf(sg.acc.getParam())) : Arg(o.getDgamma()),
                slots ? gradSlot(slotOf(sb.acc.getParam())) : Arg(o.getDbeta())};
            if (bias) {
              args.push_back(dt(bias->gradDtype));
              args.push_back(gradSlot(bias));
            }
            args.push_back(numel(o.getX()) / d);
            args.push_back(d);
            return call(op,
                        bias              ? "tgrt_layer_norm_bwd_acc_bgrad"
                        : slots && !write ? "tgrt_layer_norm_bwd_acc_slots"
                                          : "tgrt_layer_norm_bwd_acc",
                        args);
          }
          return call(op, "tgrt_layer_norm_bwd",
                      {dt(o.getDy()), Arg(o.getDy()), dt(o.getX()), Arg(o.getX()),
                       dt(o.getGamma()), Arg(o.getGamma()), Arg(o.getMean()),
                       Arg(o.getRstd()), Arg(o.getDx()), Arg(o.getDgamma()), Arg(o.getDbeta()),
                       numel(o.getX()) / d, d});
        })
        .Case([&](BiasGradOp o) {
          int64_t n = dim(o.getDy(), -1);
          if (biasSumInWgrad(o, o.getResult()))
            return success();
          if (succeeded(emitBiasGradIntoSlot(o, o.getResult(), o.getDy())))
            return success();
          return call(op, "tgrt_bias_grad",
                      {dt(o.getDy()), Arg(o.getDy()), Arg(o.getResult()), numel(o.getDy()) / n, n});
        })
        .Case([&](GeluGradOp o) {
          return call(op, "tgrt_gelu_bwd",
                      {dt(o.getX()), Arg(o.getX()), Arg(o.getDy()), Arg(o.getResult()), numel(o.getX())});
        })
        .Case([&](SoftmaxGradOp o) {
          int64_t n = dim(o.getY(), -1);
          return call(op, "tgrt_softmax_bwd",
                      {dt(o.getY()), Arg(o.getY()), Arg(o.getDy()), Arg(o.getResult()), numel(o.getY()) / n, n});
        })
        .Case([&](CrossEntropyGradOp o) {
          if (auto it = deferredLoss.find(o); it != deferredLoss.end()) {
            CrossEntropyOp f = it->second;
            return call(op, "tgrt_cross_entropy_fwd_bwd",
                        {dt(o.getLogits()), Arg(o.getLogits()), Arg(o.getTargets()),
                         Arg(f.getLoss()), Arg(o.getDloss()), Arg(o.getResult()),
                         numel(o.getTargets()), dim(o.getLogits(), -1),
                         (int64_t)o.getIgnoreIndex()});
          }
          return call(op, "tgrt_cross_entropy_bwd",
                      {dt(o.getLogits()), Arg(o.getLogits()), Arg(o.getTargets()), Arg(o.getDloss()),
                       Arg(o.getResult()), numel(o.getTargets()), dim(o.getLogits(), -1),
                       (int64_t)o.getIgnoreIndex()});
        })
        .Case([&](LinearCrossEntropyOp o) { return emitLinearCrossEntropy(o); })
        .Case([&](AttentionGradOp o) {
          int64_t B = dim(o.getQ(), 0), H = dim(o.getQ(), 1), T = dim(o.getQ(), 2),
                  hd = dim(o.getQ(), 3), Hkv = dim(o.getK(), 1);
          if (Hkv != H)
            return call(op, "tgrt_attention_gqa_bwd",
                        {dt(o.getQ()), Arg(o.getQ()), Arg(o.getK()), Arg(o.getV()),
                         Arg(o.getOut()), Arg(o.getLse()), Arg(o.getDout()), Arg(o.getDq()),
                         Arg(o.getDk()), Arg(o.getDv()), B, H, Hkv, T, hd, H * T * hd,
                         T * hd, hd, Hkv * T * hd, T * hd, hd, H * T * hd, T * hd, hd,
                         int64_t(o.getCausal() ? 1 : 0), (int64_t)o.getWindow(),
                         flt(o.getScale().convertToFloat())});
          return call(op, "tgrt_attention_bwd",
                      {dt(o.getQ()), Arg(o.getQ()), Arg(o.getK()), Arg(o.getV()),
                       Arg(o.getOut()), Arg(o.getLse()), Arg(o.getDout()), Arg(o.getDq()),
                       Arg(o.getDk()), Arg(o.getDv()), B, H, T, hd, H * T * hd, T * hd, hd,
                       H * T * hd, T * hd, hd, int64_t(o.getCausal() ? 1 : 0),
                       (int64_t)o.getWindow(), flt(o.getScale().convertToFloat())});
        })
        .Case([&](AttentionQKVGradOp o) {
          Packed p = packed(o.getQkv(), (int64_t)o.getHeads(), (int64_t)o.getKvHeads());
          auto qkv = ptrOf(o.getQkv()), dqkv = ptrOf(o.getDqkv());
          if (failed(qkv) || failed(dqkv))
            return failure();
          // q, k, v and dq, dk, dv are strided views: the checks see qkv and dqkv whole
          // (dq, dk, dv together write every element of dqkv).
          FailureOr<CheckTensor> in = checkTensorOf(o.getQkv(), 0),
                                 out = checkTensorOf(o.getDqkv(), 2);
          if (failed(in) || failed(out))
            return failure();
          if (p.grouped())
            return call(op, "tgrt_attention_gqa_bwd",
                        {dt(o.getQkv()), p.at(*qkv, 0), p.at(*qkv, 1), p.at(*qkv, 2),
                         Arg(o.getOut()), Arg(o.getLse()), Arg(o.getDout()), p.at(*dqkv, 0),
                         p.at(*dqkv, 1), p.at(*dqkv, 2), p.B, p.H, p.Hkv, p.T, p.hd,
                         p.T * p.W, p.hd, p.W, p.T * p.W, p.hd, p.W, p.T * p.Q, p.hd, p.Q,
                         int64_t(o.getCausal() ? 1 : 0), (int64_t)o.getWindow(),
                         flt(o.getScale().convertToFloat())},
                        "", {*in, *out});
          return call(op, "tgrt_attention_bwd",
                      {dt(o.getQkv()), p.at(*qkv, 0), p.at(*qkv, 1), p.at(*qkv, 2),
                       Arg(o.getOut()), Arg(o.getLse()), Arg(o.getDout()), p.at(*dqkv, 0),
                       p.at(*dqkv, 1), p.at(*dqkv, 2), p.B, p.H, p.T, p.hd, p.T * 3 * p.D,
                       p.hd, 3 * p.D, p.T * p.D, p.hd, p.D, int64_t(o.getCausal() ? 1 : 0),
                       (int64_t)o.getWindow(), flt(o.getScale().convertToFloat())},
                      "", {*in, *out});
        })
        .Case([&](AccumulateGradOp o) {
          const ParamSlot *s = slotOf(o.getParam());
          if (!s)
            return LogicalResult(op->emitOpError() << "lower-to-emitc: param has no planned slot");
          // A slot of the compute type (the plan's grad_dtype) takes only its GEMM's product,
          // which the matmul's lowering writes into it (gradientSink): never an f32 add.
          if (s->gradDtype != dtypeName(rt(o.getGrad()).getElementType()))
            return LogicalResult(op->emitOpError()
                                 << "lower-to-emitc: the gradient slot of '" << s->name
                                 << "' holds " << s->gradDtype << " (the plan's grad_dtype), but "
                                 << "this accumulation adds a "
                                 << dtypeName(rt(o.getGrad()).getElementType())
                                 << " gradient that no weight-gradient GEMM writes into it (plan "
                                    "with tg-plan-memory low-precision-grads=false)");
          return call(op, "tgrt_accumulate",
                      {dt(s->gradDtype), gradSlot(s), Arg(o.getGrad()), s->numel});
        })
        .Case([&](ClipGradNormOp o) {
          if (failed(call(op, "tgrt_zero", {Arg(o.getResult()), (int64_t)8})))
            return failure();
          // One sum of squares per run of contiguous gradient slots of one dtype (the
          // alignment padding between slots is zero and never written).
          if (failed(callPerGradRun(op, o.getParams(), "tgrt_grad_norm_sq",
                                    {Arg(o.getResult())}, "optimizer.clip")))
            return failure();
          // ZeRO-2/3: each rank summed the squares of its gradient chunks only.
          if (report.zero >= 2 && ranks > 1 &&
              failed(call(op, "tgrt_all_reduce_sum_f32", {Arg(o.getResult()), (int64_t)1})))
            return failure();
          return call(op, "tgrt_clip_scale",
                      {Arg(o.getResult()), flt(o.getMaxNorm().convertToFloat())});
        })
        .Case([&](AllReduceGradsOp o) {
          // The buckets the backward started (planGradientBuckets) are waited for; the
          // rest get one in-place mean over the ranks per run of contiguous gradient slots
          // of one dtype (the alignment padding between slots is zero on every rank, and
          // stays 0).
          SmallVector<const ParamSlot *> rest;
          for (Value p : o.getParams()) {
            const ParamSlot *s = slotOf(p);
            if (!s)
              return LogicalResult(op->emitOpError() << "lower-to-emitc: param has no planned slot");
            if (!overlapped.contains(s))
              rest.push_back(s);
          }
          if (!overlapped.empty() && failed(call(op, "tgrt_all_reduce_wait", {})))
            return failure();
          return callPerSlotRun(op, rest, "tgrt_all_reduce_mean", {}, "optimizer.all_reduce");
        })
        .Case([&](AdamWOp o) { return emitAdamW(o); })
        .Case([&](ReduceScatterGradOp o) {
          // ZeRO-2/3: the previous reduce-scatter's gradient buffer is reserved up to here
          // (analyzeLiveness): wait for it, then start this one on the communicator's stream.
          const ParamSlot *s = slotOf(o.getParam());
          if (!s || s->shard <= 0)
            return LogicalResult(op->emitOpError()
                                 << "lower-to-emitc: param has no sharded gradient slot "
                                    "(plan it with tg.zero >= 2)");
          if (scatterPending && failed(waitCollectives(op)))
            return failure();
          scatterPending = true;
          return call(op, "tgrt_reduce_scatter_mean_start",
                      {dt(s->gradDtype), Arg(o.getGrad()), gradSlot(s), s->numel, s->shard});
        })
        .Case([&](GatherParamOp o) {
          // ZeRO-3: this rank's chunk of the value (or working copy) -> the whole tensor.
          const ParamSlot *s = nullptr;
          Value src = o.getSource();
          if (auto c = src.getDefiningOp<CastOp>())
            s = slotOf(c.getX());
          else
            s = slotOf(src);
          if (!s || s->shard <= 0 || report.zero < 3)
            return LogicalResult(op->emitOpError()
                                 << "lower-to-emitc: param has no sharded value slot "
                                    "(plan it with tg.zero = 3)");
          if (failed(call(op, "tgrt_all_gather_start",
                          {dt(src), Arg(src), Arg(o.getResult()), s->numel, s->shard})))
            return failure();
          // Waited for by the first call that reads the buffer (call(), pendingGathers).
          FailureOr<PtrRef> r = ptrOf(o.getResult());
          if (failed(r))
            return failure();
          pendingGathers.push_back({r->byteOffset, r->byteOffset + elemBytes(o.getResult()) *
                                                                     numel(o.getResult())});
          return success();
        })
        .Case([&](func::ReturnOp o) {
          for (Value v : o.getOperands())
            if (failed(call(op, "tgrt_report_loss", {Arg(v)})))
              return failure();
          // The last reduce-scatter (and any gather) of the step: nothing of this function's
          // arena may still be in flight when the next function reuses it.
          if (scatterPending || !pendingGathers.empty())
            return waitCollectives(op);
          return success();
        })
        .Default([&](Operation*) {
          return LogicalResult(op->emitOpError() << "lower-to-emitc: no runtime kernel for this op");
        });
  }

  /// A run of parameters whose slots follow each other in the persistent region (each
  /// next slot starts at the aligned end of the previous one): one runtime call covers it.
  struct Run {
    const ParamSlot *first = nullptr;
    int64_t count = 0, bytes = 0; ///< parameters; bytes from the first slot to the last's end
    std::string firstName, lastName;
    /// "wte" or "wte..lm_head (12 tensors)".
    std::string names() const {
      return count == 1 ? firstName
                        : firstName + ".." + lastName + " (" + std::to_string(count) + " tensors)";
    }
    std::string where(StringRef prefix) const {
      return count == 1 ? (prefix + "." + firstName).str()
                        : (prefix + "." + firstName + ".." + lastName + " (" +
                           std::to_string(count) + " tensors)")
                              .str();
    }
  };
  /// Elements of a slot this rank holds: the ZeRO-2/3 chunk, else the whole tensor. (runs()
  /// groups gradient slots, and values only where they are chunks too: ZeRO-3, or unsharded.)
  /// A tg-bias-rows bias's zero rows belong to its run (zeros in every slot: AdamW and the
  /// gradient norm leave them zero), so the runs stay as long as without them.
  static int64_t held(const ParamSlot *s) {
    return s->shard > 0 ? s->shard : s->numel * (1 + s->padRows);
  }
  /// Groups `slots` into runs by `offsetOf` (sorted), contiguous and `compatible`.
  template <typename OffsetFn, typename CompatFn>
  std::vector<Run> runs(SmallVector<const ParamSlot *> slots, OffsetFn offsetOf,
                        CompatFn compatible, bool gradients = false) {
    // The element type of the slots offsetOf names: the gradients' or the values'.
    auto bytesOf = [&](const ParamSlot *s) {
      return (gradients ? dtypeBytes(s->gradDtype) : s->valueSlotBytes()) * held(s);
    };
    llvm::stable_sort(slots, [&](const ParamSlot *a, const ParamSlot *c) {
      return offsetOf(a) < offsetOf(c);
    });
    std::vector<Run> out;
    const ParamSlot *prev = nullptr;
    for (const ParamSlot *s : slots) {
      int64_t bytes = bytesOf(s);
      int64_t prevEnd =
          prev ? (offsetOf(prev) + bytesOf(prev) + kBufferAlignment - 1) /
                     kBufferAlignment * kBufferAlignment
               : -1;
      if (prev && offsetOf(s) == prevEnd && compatible(out.back().first, s)) {
        Run &r = out.back();
        r.bytes = offsetOf(s) + bytes - offsetOf(r.first);
        ++r.count;
        r.lastName = s->name;
      } else {
        out.push_back(Run{s, 1, bytes, s->name, s->name});
      }
      prev = s;
    }
    return out;
  }

  /// Data parallel (tg.ranks > 1): the gradient all-reduce overlapped with the backward
  /// (PyTorch DDP's gradient buckets; Li et al. 2020, "PyTorch Distributed"). Buckets: the
  /// parameters of one transformer layer ("layers.N.*"), or one other parameter each (wte,
  /// wpe, ln_f.*). A parameter's gradient slot is final once every tg.accumulate_grad of it
  /// in @micro_step has been emitted, either itself or fused into its producer (an earlier
  /// call writes the slot), and no add that finishes a fused sum (slotAdds) is still to
  /// come. Right after the op at which a bucket's last member becomes final,
  /// startFinishedBuckets emits tgrt_all_reduce_mean_start per run of its contiguous slots
  /// (on the last micro-batch of the step, on the communicator's stream). @optimizer_step
  /// waits for them (tgrt_all_reduce_wait) and all-reduces only what no bucket covered.
  void planGradientBuckets(func::FuncOp micro) {
    buckets.clear();
    accsOf.clear();
    slotAddsOf.clear();
    overlapped.clear();
    if (ranks <= 1)
      return;
    for (Operation &op : micro.getBody().front())
      if (auto acc = dyn_cast<AccumulateGradOp>(op))
        if (const ParamSlot *s = slotOf(acc.getParam()))
          accsOf[s].push_back(&op);
    std::map<std::string, SmallVector<const ParamSlot *>> groups;
    for (const ParamSlot &p : report.params) {
      if (!accsOf.count(&p))
        continue;
      StringRef name = p.name;
      std::string key = name.str();
      if (name.starts_with("layers."))
        key = name.substr(0, name.find('.', 7)).str();
      groups[key].push_back(&p);
      overlapped.insert(&p);
    }
    for (auto &[key, members] : groups)
      buckets.push_back(members);
  }

  /// Whether slot s is final after `at` was lowered (planGradientBuckets).
  bool slotFinal(const ParamSlot *s, Operation *at) {
    for (Operation *acc : accsOf.lookup(s))
      if (acc != at && !fusedAway.contains(acc) && at->isBeforeInBlock(acc))
        return false;
    for (Operation *add : slotAddsOf.lookup(s))
      if (add != at && at->isBeforeInBlock(add))
        return false;
    return true;
  }

  /// Starts every bucket whose members are all final after `at` (planGradientBuckets).
  LogicalResult startFinishedBuckets(Operation *at) {
    for (auto it = buckets.begin(); it != buckets.end();) {
      if (!llvm::all_of(*it, [&](const ParamSlot *s) { return slotFinal(s, at); })) {
        ++it;
        continue;
      }
      if (failed(callPerSlotRun(at, *it, "tgrt_all_reduce_mean_start", {Arg(gradAccum)},
                                "backward.all_reduce")))
        return failure();
      it = buckets.erase(it);
    }
    return success();
  }

  /// Emits `fnName(dtype, run, n, extra...)` once per run of contiguous gradient slots of
  /// one dtype among `params` (by gradient offset; the alignment padding between slots is
  /// zero), located at "<prefix>.<first>..<last>". Fails, with an error on `op`, when a
  /// parameter has no planned slot.
  LogicalResult callPerGradRun(Operation *op, ValueRange params, StringRef fnName,
                               ArrayRef<Arg> extra, StringRef prefix) {
    SmallVector<const ParamSlot *> slots;
    for (Value p : params) {
      const ParamSlot *s = slotOf(p);
      if (!s)
        return op->emitOpError() << "lower-to-emitc: param has no planned slot";
      slots.push_back(s);
    }
    return callPerSlotRun(op, slots, fnName, extra, prefix);
  }
  /// callPerGradRun over slots.
  LogicalResult callPerSlotRun(Operation *op, SmallVector<const ParamSlot *> slots,
                               StringRef fnName, ArrayRef<Arg> extra, StringRef prefix) {
    for (const Run &r :
         runs(
             slots, [](const ParamSlot *s) { return s->gradOffset; },
             [](const ParamSlot *a, const ParamSlot *c) { return a->gradDtype == c->gradDtype; },
             /*gradients=*/true)) {
      const ParamSlot *s = r.first;
      const int64_t n = r.bytes / dtypeBytes(s->gradDtype);
      SmallVector<Arg> args = {dt(s->gradDtype),
                               gradRun(s->gradOffset, s->gradDtype, n, "gradients " + r.names()),
                               n};
      args.append(extra.begin(), extra.end());
      if (failed(call(op, fnName, args, r.where(prefix))))
        return failure();
    }
    return success();
  }

  /// Every tg.adamw of the function at its first one: one tgrt_adamw (and one tgrt_zero of
  /// the gradients) per run of parameters with contiguous slots, the same hyperparameters
  /// and clip, and the same value and moment dtype (so that the value, gradient, m and v
  /// runs have one element layout, padding included; padding elements stay zero).
  LogicalResult emitAdamW(AdamWOp first) {
    SmallVector<AdamWOp> all;
    first->getBlock()->walk([&](AdamWOp o) { all.push_back(o); });
    llvm::DenseMap<const ParamSlot *, AdamWOp> opOf;
    SmallVector<const ParamSlot *> slotsOf;
    for (AdamWOp o : all) {
      const ParamSlot *s = slotOf(o.getParam());
      if (!s)
        return o->emitOpError() << "lower-to-emitc: param has no planned slot";
      opOf[s] = o;
      slotsOf.push_back(s);
      fusedAway.insert(o);
    }
    if (report.zero == 2 && ranks > 1)
      return emitAdamWChunks(all);
    // One call covers a run as one array per slot kind: c must sit as many elements after
    // the run's first a in its values, gradients, moments and working copies alike (the
    // slots' alignment padding differs where their element sizes do: a 2-byte low-half slot
    // of 192 values is padded, its 4-byte gradient slot is not).
    auto sameLayout = [&](const ParamSlot *a, const ParamSlot *c) {
      auto elems = [](int64_t from, int64_t to, int64_t bytes) {
        return (to - from) % bytes == 0 ? (to - from) / bytes : -1;
      };
      const int64_t e = elems(a->offset, c->offset, a->valueSlotBytes());
      const int64_t st = dtypeBytes(a->stateDtype);
      return e >= 0 && elems(a->gradOffset, c->gradOffset, dtypeBytes(a->gradDtype)) == e &&
             elems(a->mOffset, c->mOffset, st) == e && elems(a->vOffset, c->vOffset, st) == e &&
             (a->workOffset < 0 || c->workOffset < 0 ||
              elems(a->workOffset, c->workOffset, dtypeBytes(report.workDtype)) == e);
    };
    auto same = [&](const ParamSlot *a, const ParamSlot *c) {
      AdamWOp x = opOf[a], y = opOf[c];
      return sameLayout(a, c) && a->dtype == c->dtype && a->stateDtype == c->stateDtype &&
             a->gradDtype == c->gradDtype && a->dtype == a->stateDtype && a->owner == c->owner &&
             a->split == c->split && x.getClip() == y.getClip() &&
             x.getBeta1() == y.getBeta1() && x.getBeta2() == y.getBeta2() &&
             x.getEps() == y.getEps() && x.getWeightDecay() == y.getWeightDecay();
    };
    auto offsetOf = [](const ParamSlot *s) { return s->offset; };
    // tg-bias-rows puts each bias (not decayed) between decayed weights: such a run is one
    // tgrt_adamw_islands call when its undecayed slots repeat with one period (one or two
    // per period, as a layer's qkv and MLP biases do), else one call per stretch of equal
    // decay. Not with ZeRO owners or offloaded moments.
    const bool islandsOk = ranks == 1 && report.hostBytes == 0;
    auto sameButDecay = [&](const ParamSlot *a, const ParamSlot *c) {
      AdamWOp x = opOf[a], y = opOf[c];
      return sameLayout(a, c) && a->dtype == c->dtype && a->stateDtype == c->stateDtype &&
             a->gradDtype == c->gradDtype && a->dtype == a->stateDtype && a->owner == c->owner &&
             a->owner < 0 && a->split == c->split &&
             x.getClip() == y.getClip() && x.getBeta1() == y.getBeta1() &&
             x.getBeta2() == y.getBeta2() && x.getEps() == y.getEps();
    };
    std::vector<Run> plain;
    // Split runs (tgrt_adamw_split) have no islands form: they break where the decay does.
    auto merged = [&](const ParamSlot *a, const ParamSlot *c) {
      return islandsOk && !a->split ? sameButDecay(a, c) : same(a, c);
    };
    for (const Run &r : runs(slotsOf, offsetOf, merged)) {
      SmallVector<const ParamSlot *> members;
      for (const ParamSlot *s : slotsOf)
        if (s->offset >= r.first->offset && s->offset < r.first->offset + r.bytes)
          members.push_back(s);
      llvm::sort(members, [](const ParamSlot *a, const ParamSlot *c) { return a->offset < c->offset; });
      float decay = 0.0f;
      bool mixed = false, twoDecays = false;
      for (const ParamSlot *s : members) {
        float wd = opOf[s].getWeightDecay().convertToFloat();
        if (wd != 0.0f && decay != 0.0f && wd != decay)
          twoDecays = true;
        if (wd != 0.0f)
          decay = wd;
      }
      for (const ParamSlot *s : members)
        mixed |= opOf[s].getWeightDecay().convertToFloat() != decay;
      if (!mixed) {
        plain.push_back(r);
        continue;
      }
      // The undecayed slots before the first decayed one (the no-decay group) are a run of
      // their own; the islands are looked for in the rest.
      auto undecayed = [&](const ParamSlot *s) {
        return opOf[s].getWeightDecay().convertToFloat() == 0.0f;
      };
      size_t f = 0;
      while (f < members.size() && undecayed(members[f]))
        ++f;
      ArrayRef<const ParamSlot *> rest = ArrayRef<const ParamSlot *>(members).drop_front(f);
      std::optional<AdamwIslands> isl;
      Run tail;
      // tgrt_adamw_islands reads gradients of the values' type only.
      if (!twoDecays && !rest.empty() && rest.front()->gradDtype == rest.front()->dtype) {
        tail.first = rest.front();
        tail.count = (int64_t)rest.size();
        tail.bytes = rest.back()->offset + dtypeBytes(rest.back()->dtype) * held(rest.back()) -
                     rest.front()->offset;
        tail.firstName = rest.front()->name;
        tail.lastName = rest.back()->name;
        isl = islandsOf(rest, tail, undecayed);
      }
      if (!isl) {
        for (const Run &sub : runs(members, offsetOf, same))
          plain.push_back(sub);
        continue;
      }
      if (f > 0)
        for (const Run &sub : runs(SmallVector<const ParamSlot *>(members.begin(), members.begin() + f),
                                   offsetOf, same))
          plain.push_back(sub);
      if (failed(emitAdamWRun(tail, opOf[tail.first], decay, &*isl)))
        return failure();
    }
    for (const Run &r : plain)
      if (failed(emitAdamWRun(r, opOf[r.first],
                              opOf[r.first].getWeightDecay().convertToFloat(), nullptr)))
        return failure();
    return success();
  }

  /// Undecayed elements of a run (tgrt_adamw_islands): relative element offsets.
  struct AdamwIslands {
    int64_t base = 0, period = 0, reps = 0, s0 = 0, l0 = 0, s1 = 0, l1 = 0;
  };
  /// The islands of run r's slots `members` (by offset) for which `undecayed` holds, when
  /// they repeat with one period, one or two per period; nullopt otherwise.
  template <typename Pred>
  std::optional<AdamwIslands> islandsOf(ArrayRef<const ParamSlot *> members, const Run &r,
                                        Pred undecayed) {
    const int64_t es = dtypeBytes(r.first->dtype);
    SmallVector<std::pair<int64_t, int64_t>> isl; // (start, length) in elements
    for (const ParamSlot *s : members)
      if (undecayed(s))
        isl.push_back({(s->offset - r.first->offset) / es, held(s)});
    if (isl.empty())
      return std::nullopt;
    for (int64_t k : {1, 2}) {
      if ((int64_t)isl.size() % k != 0)
        continue;
      const int64_t reps = (int64_t)isl.size() / k;
      const int64_t period = reps > 1 ? isl[k].first - isl[0].first : r.bytes / es - isl[0].first;
      bool ok = period > 0;
      for (size_t i = 0; ok && i < isl.size(); ++i) {
        const auto &[start, len] = isl[i];
        const auto &[s0, l0] = isl[i % k];
        ok = start == s0 + (int64_t)(i / k) * period && len == l0 && start - isl[0].first -
             (int64_t)(i / k) * period < period;
      }
      if (!ok)
        continue;
      AdamwIslands out;
      out.base = isl[0].first;
      out.period = period;
      out.reps = reps;
      out.s0 = 0;
      out.l0 = isl[0].second;
      if (k == 2) {
        out.s1 = isl[1].first - isl[0].first;
        out.l1 = isl[1].second;
      }
      if (out.s1 + out.l1 > period || out.l0 > period ||
          out.base + (out.reps - 1) * out.period + std::max(out.l0, out.s1 + out.l1) >
              r.bytes / es)
        continue;
      return out;
    }
    return std::nullopt;
  }

  /// One AdamW call over run r (decay `decay`; with `isl`, tgrt_adamw_islands), its zero of
  /// persistent gradients and (ZeRO-1) its broadcasts.
  LogicalResult emitAdamWRun(const Run &r, AdamWOp o, float decay, const AdamwIslands *isl) {
    {
      const ParamSlot *s = r.first;
      int64_t n = r.bytes / s->valueSlotBytes();
      std::string where = r.where("optimizer");
      // Gradients of another type than the values (the plan's grad_dtype): tgrt_adamw_wc_g,
      // which takes their dtype after the values.
      const bool lowGrads = s->gradDtype != s->dtype;
      // (g, state_dt, m, v, n, beta1, beta2, eps, weight_decay, clip): every variant's tail.
      SmallVector<Arg, 24> args = {
          gradRun(s->gradOffset, s->gradDtype, n, "gradients " + r.names()), dt(s->stateDtype),
          momentRun(s->mOffset, s->stateDtype, n, "AdamW m " + r.names()),
          momentRun(s->vOffset, s->stateDtype, n, "AdamW v " + r.names()), n,
          flt(o.getBeta1().convertToFloat()), flt(o.getBeta2().convertToFloat()),
          flt(o.getEps().convertToFloat()), flt(decay), Arg(o.getClip())};
      if (s->split) {
        // Split master values (tgrt_param.split): the working copies are the high halves,
        // the value slots the low halves (tgrt_adamw_split(hi, lo, g_dt, g, ...); 26 bytes
        // an element).
        if (isl || s->owner >= 0 || s->workOffset < 0 || report.workDtype != "bf16")
          return o->emitOpError() << "lower-to-emitc: '" << s->name
                                  << "' is split, which needs bf16 working copies and no "
                                     "weight-decay islands or ZeRO owner";
        args.insert(args.begin(),
                    {slotRun(s->workOffset, "bf16", n, "working copies (high halves) " + r.names()),
                     Arg(persistent(s->offset, "bf16"))
                         .view("low halves " + r.names(), "[" + std::to_string(n) + "]",
                               "TGRT_BF16", 1, n, n)
                         .unchecked(),
                     dt(s->gradDtype)});
        if (failed(call(o, "tgrt_adamw_split", args, where)) ||
            (!report.gradsInArena &&
             failed(call(o, "tgrt_zero",
                         {persistent(s->gradOffset, s->gradDtype), n * dtypeBytes(s->gradDtype)},
                         where))))
          return failure();
        return success();
      }
      args.insert(args.begin(),
                  {dt(s->dtype), slotRun(s->offset, s->dtype, n, "parameters " + r.names())});
      if (isl) {
        if (s->workOffset >= 0) {
          args.push_back(dt(report.workDtype));
          args.push_back(
              slotRun(s->workOffset, report.workDtype, n, "working copies " + r.names()));
        } else {
          args.push_back(Arg(std::string("TGRT_BF16")));
          args.push_back(Arg(std::string("NULL")));
        }
        for (int64_t x : {isl->base, isl->period, isl->reps, isl->s0, isl->l0, isl->s1, isl->l1})
          args.push_back(Arg(x));
        if (failed(call(o, "tgrt_adamw_islands", args, where)) ||
            (!report.gradsInArena &&
             failed(call(o, "tgrt_zero", {persistent(s->gradOffset, s->dtype), r.bytes}, where))))
          return failure();
        return success();
      }
      // With working copies: the same kernel writes the run's copies (mirrored, contiguous).
      if (s->workOffset >= 0) {
        args.push_back(dt(report.workDtype));
        args.push_back(slotRun(s->workOffset, report.workDtype, n, "working copies " + r.names()));
      }
      // ZeRO-1: only the run's owner updates it (its moments live on that rank only), then
      // it broadcasts the new values (and their working copies) to the other ranks.
      std::string fn = s->workOffset >= 0 ? "tgrt_adamw_wc" : "tgrt_adamw";
      if (lowGrads) {
        // tgrt_adamw_wc_g: (p_dt, p, g_dt, g, ...), the working copy or (NULL) none. The
        // plan gives the compute type to gradients in the arena only (no owners, no shards).
        if (s->owner >= 0)
          return o->emitOpError() << "lower-to-emitc: '" << s->name << "' has a " << s->gradDtype
                                  << " gradient slot (grad_dtype) and a ZeRO-1 owner";
        args.insert(args.begin() + 2, dt(s->gradDtype));
        if (s->workOffset < 0) {
          args.push_back(dt(s->gradDtype));
          args.push_back(Arg(std::string("NULL")));
        }
        fn = "tgrt_adamw_wc_g";
      }
      if (s->owner >= 0) {
        args.push_back(Arg(s->owner));
        fn += "_owned";
      }
      // Persistent gradients are zeroed for the next step's accumulation; gradients in
      // the arena are zeroed where the next micro-step first writes them.
      const int64_t gradBytes = lowGrads ? n * dtypeBytes(s->gradDtype) : r.bytes;
      if (failed(call(o, fn, args, where)) ||
          (!report.gradsInArena &&
           failed(call(o, "tgrt_zero", {persistent(s->gradOffset, s->gradDtype), gradBytes},
                       where))))
        return failure();
      if (s->owner >= 0) {
        if (failed(call(o, "tgrt_broadcast",
                        {dt(s->dtype), slotRun(s->offset, s->dtype, n, "parameters " + r.names()),
                         n, Arg(s->owner)},
                        where)))
          return failure();
        if (s->workOffset >= 0 &&
            failed(call(o, "tgrt_broadcast",
                        {dt(report.workDtype),
                         slotRun(s->workOffset, report.workDtype, n, "working copies " + r.names()),
                         n, Arg(s->owner)},
                        where)))
          return failure();
      }
    }
    return success();
  }

  /// ZeRO-2: per parameter, AdamW over this rank's chunk of the whole value (and working
  /// copy) with the gradient and moment shards, the shard zeroed, then the updated chunks
  /// all-gathered in place (shard = NULL) on the communicator's stream and waited for once
  /// at the end.
  LogicalResult emitAdamWChunks(ArrayRef<AdamWOp> all) {
    for (AdamWOp o : all) {
      const ParamSlot *s = slotOf(o.getParam());
      if (!s || s->shard <= 0 || s->split)
        return o->emitOpError() << "lower-to-emitc: param has no sharded gradient slot (or "
                                   "is split, which ZeRO-2 does not shard)";
      std::string where = "optimizer." + s->name;
      SmallVector<Arg, 18> args = {
          dt(s->dtype), slotRun(s->offset, s->dtype, s->numel, "parameters " + s->name),
          gradRun(s->gradOffset, s->gradDtype, s->shard, "gradients " + s->name), dt(s->stateDtype),
          momentRun(s->mOffset, s->stateDtype, s->shard, "AdamW m " + s->name),
          momentRun(s->vOffset, s->stateDtype, s->shard, "AdamW v " + s->name), s->numel,
          s->shard, flt(o.getBeta1().convertToFloat()), flt(o.getBeta2().convertToFloat()),
          flt(o.getEps().convertToFloat()), flt(o.getWeightDecay().convertToFloat()),
          Arg(o.getClip())};
      if (s->workOffset >= 0) {
        args.push_back(dt(report.workDtype));
        args.push_back(
            slotRun(s->workOffset, report.workDtype, s->numel, "working copies " + s->name));
      }
      const int64_t gradBytes = s->shard * dtypeBytes(s->gradDtype);
      if (failed(call(o, s->workOffset >= 0 ? "tgrt_adamw_wc_chunk" : "tgrt_adamw_chunk", args,
                      where)) ||
          failed(call(o, "tgrt_zero", {persistent(s->gradOffset, s->gradDtype), gradBytes}, where)))
        return failure();
      if (failed(call(o, "tgrt_all_gather_start",
                      {dt(s->dtype), Arg(std::string("nullptr")),
                       slotRun(s->offset, s->dtype, s->numel, "parameters " + s->name), s->numel,
                       s->shard},
                      where)))
        return failure();
      if (s->workOffset >= 0 &&
          failed(call(o, "tgrt_all_gather_start",
                      {dt(report.workDtype), Arg(std::string("nullptr")),
                       slotRun(s->workOffset, report.workDtype, s->numel,
                               "working copies " + s->name),
                       s->numel, s->shard},
                      where)))
        return failure();
    }
    return call(all.back(), "tgrt_all_reduce_wait", {}, "optimizer.all_gather");
  }

  /// The packed [B, T, 3, H, hd] layout of a qkv value: q, k, v (part 0, 1, 2) start D
  /// elements apart; each row of T holds 3 D elements. Grouped-query (kvHeads > 0, not H):
  /// [B, T, H + 2 Hkv, hd]: q at 0, k at Q = H hd, v at Q + Hkv hd; rows of W elements.
  struct Packed {
    int64_t B, T, H, hd, D, elem, Hkv, Q, W;
    bool grouped() const { return Hkv != H; }
    PtrRef at(PtrRef base, int part) const {
      base.byteOffset += (grouped() ? (part == 0 ? 0 : Q + (part - 1) * Hkv * hd) : part * D) * elem;
      return base;
    }
  };
  static Packed packed(Value qkv, int64_t heads, int64_t kvHeads = 0) {
    if (kvHeads <= 0 || kvHeads == heads) {
      int64_t D = dim(qkv, 2) / 3;
      return Packed{dim(qkv, 0), dim(qkv, 1), heads, D / heads, D, elemBytes(qkv), heads, D, 3 * D};
    }
    int64_t W = dim(qkv, 2), hd = W / (heads + 2 * kvHeads);
    return Packed{dim(qkv, 0), dim(qkv, 1), heads, hd, heads * hd, elemBytes(qkv), kvHeads,
                  heads * hd, W};
  }

  /// Whether `cast` (widening a residual branch into the residual stream's type) is read only
  /// by the add right after it, which then reads the cast's input itself (tgrt_add_mixed):
  /// the add's result must not overlap the cast's input, whose buffer may already be reused
  /// at the add (it was the input's last use).
  bool castIntoAdd(CastOp cast) {
    auto add = dyn_cast_or_null<AddOp>(cast->getNextNode());
    // Only a widening cast to f32 (exact): reading its input instead changes nothing.
    if (!rt(cast.getResult()).getElementType().isF32() ||
        rt(cast.getX()).getElementType().isF32())
      return false;
    if (!add || !cast.getResult().hasOneUse() || add.getLhs() == add.getRhs() ||
        (add.getLhs() != cast.getResult() && add.getRhs() != cast.getResult()))
      return false;
    return disjoint(add.getResult(), {cast.getX()});
  }

  /// tg.add -> tgrt_add_mixed: out = a + b with b read in its own type when it is a widening
  /// cast fused away (castIntoAdd), and the next op's cast of the sum (the backward's
  /// residual gradient, narrowed for the next GEMM) written in the same pass when its
  /// buffer is free already (disjoint from everything the call reads). Otherwise tgrt_add.
  /// (An add with the layer norm of its sum is tg-fuse's tg.add_layer_norm by now.)
  LogicalResult emitAdd(AddOp o) {
    Value a = o.getLhs(), b = o.getRhs();
    auto fusedCast = [&](Value v) {
      auto c = v.getDefiningOp<CastOp>();
      return c && c->getNextNode() == o.getOperation() && castIntoAdd(c) ? c : CastOp();
    };
    if (fusedCast(a) && !fusedCast(b))
      std::swap(a, b);
    if (CastOp c = fusedCast(b))
      b = c.getX();
    CastOp low = dyn_cast_or_null<CastOp>(o->getNextNode());
    if (!low || low.getX() != o.getResult() ||
        !disjoint(low.getResult(), {a, b, o.getResult()}))
      low = CastOp();
    if (low)
      fusedAway.insert(low);
    if (b == o.getRhs() && a == o.getLhs() && !low)
      return call(o, "tgrt_add",
                  {dt(a), Arg(a), Arg(b), Arg(o.getResult()), numel(a)});
    return call(o, "tgrt_add_mixed",
                {dt(o.getResult()), Arg(a), dt(b), Arg(b), Arg(o.getResult()),
                 low ? dt(low.getResult()) : Arg(std::string("TGRT_F32")),
                 low ? Arg(low.getResult()) : Arg(std::string("NULL")), numel(a)});
  }

  /// The residual stream's gradient after a layer norm's backward: `ln` whose dx is read
  /// only by the add right after it, which adds it in place to the stream's gradient (the
  /// add's other operand, same buffer as its result) -> one tgrt_layer_norm_bwd_acc; the
  /// cast of the sum right after the add (the next GEMM's low-precision input) joins when
  /// its buffer is free from the layer norm on.
  /// Likewise an RMSNorm's backward (tgrt_rms_norm_bwd_acc): `ln` is the norm's gradient
  /// op and `dx` its input gradient. `inPlace` (the norm's dy) may hold the low copy when
  /// the two are the same buffer exactly (both calls read each element of dy before they
  /// write that element of low; tg-plan-memory puts the copy there when dy dies at the norm).
  std::pair<AddOp, CastOp> residualGradSink(Operation *ln, Value dx, Value inPlace = Value()) {
    auto [add, low] = residualGradSinkOf(ln, dx);
    if (!add)
      return {};
    Value dres = add.getLhs() == dx ? add.getRhs() : add.getLhs();
    std::optional<PtrRef> p = placeOf(dres), q = placeOf(add.getResult());
    if (!p || !q || p->region != q->region || p->byteOffset != q->byteOffset) return {};
    // The low copy is written at the layer norm, two ops early: free of everything the two
    // ops touch, except dx, which the fused call never writes (tg-plan-memory puts it in
    // dy's buffer when dy dies at the norm: aliasOk below).
    bool aliasOk = false;
    if (low && inPlace && rt(inPlace).getElementType() == rt(low.getResult()).getElementType() &&
        numel(inPlace) == numel(low.getResult())) {
      std::optional<PtrRef> a = placeOf(inPlace), c = placeOf(low.getResult());
      aliasOk = a && c && a->region == c->region && a->byteOffset == c->byteOffset;
    }
    SmallVector<Value> touched;
    for (Operation *op : {ln, add.getOperation()}) {
      for (Value v : op->getOperands())
        if (v != dx && !(aliasOk && v == inPlace))
          touched.push_back(v);
      for (Value v : op->getResults())
        if (v != dx)
          touched.push_back(v);
    }
    if (!low || !disjoint(low.getResult(), touched))
      low = CastOp();
    return {add, low};
  }

  /// Whether v's byte range overlaps none of `others`' (ranges in different regions never
  /// overlap: a persistent weight or working copy against arena values; v without a
  /// planned place counts as overlapping, one of `others` without one (tg.unplanned: no
  /// bytes) as apart).
  bool disjoint(Value v, ArrayRef<Value> others) {
    struct Range {
      int region; ///< PtrRef::region
      int64_t lo, hi;
    };
    auto range = [&](Value x) -> std::optional<Range> {
      std::optional<PtrRef> p = placeOf(x);
      if (!p) return std::nullopt;
      return Range{p->region, p->byteOffset, p->byteOffset + elemBytes(x) * numel(x)};
    };
    auto mine = range(v);
    if (!mine)
      return false;
    for (Value x : others)
      if (auto r = range(x); r && r->region == mine->region && r->lo < mine->hi &&
                             mine->lo < r->hi)
        return false;
    return true;
  }

  /// tg-fuse's GEMM + dGELU + bias gradient -> one tgrt_matmul_dgelu_bgrad (the planner
  /// kept dx and db apart from a, b and pre). When db's only reader is its slot's
  /// accumulation (biasGradSink) the call writes no db and the column sums of dx go straight
  /// into the slot (tgrt_bias_grad_acc, named as the bias gradient: the op's last location).
  LogicalResult emitDgeluBgrad(MatmulDgeluBgradOp o) {
    int64_t n = dim(o.getDx(), -1), k = dim(o.getA(), -1);
    CastOp cast;
    AccumulateGradOp acc = biasGradSink(o.getDb(), cast);
    if (failed(call(o, "tgrt_matmul_dgelu_bgrad",
                    {dt(o.getA()), Arg(o.getA()), Arg(o.getB()), Arg(o.getPre()),
                     Arg(o.getDx()), acc ? Arg(std::string("NULL")) : Arg(o.getDb()),
                     numel(o.getDx()) / n, n, k, int64_t(0),
                     int64_t(o.getTransposeB() ? 1 : 0), flt(o.getAlpha().convertToFloat())})))
      return failure();
    if (acc && biasSumInWgrad(o, o.getDb()))
      return success();
    return acc ? emitBiasGradIntoSlot(o, o.getDb(), o.getDx(), lastLocName(o.getLoc()))
               : success();
  }

  /// tg.linear_cross_entropy -> tgrt_linear_cross_entropy, which adds dw into its buffer:
  /// the weight's gradient slot when dw's only reader is the slot's accumulation (possibly
  /// through the add of a tied embedding's other gradient, which then becomes that
  /// gradient's accumulate), else its arena buffer, zeroed first.
  LogicalResult emitLinearCrossEntropy(LinearCrossEntropyOp o) {
    Value dw = o.getDw();
    int64_t rows = numel(o.getTargets());
    // Nothing reads dx or dw (tg-fuse-loss's evaluation loss): the loss only, dx and dw NULL.
    if (o.getDx().use_empty() && dw.use_empty()) {
      const Arg null(std::string("NULL"));
      return call(o, "tgrt_linear_cross_entropy",
                  {dt(o.getX()), Arg(o.getX()), Arg(o.getW()), Arg(o.getTargets()),
                   Arg(o.getDloss()), Arg(o.getLoss()), null, dt(dw), null,
                   Arg(o.getScratch()), rows, dim(o.getX(), -1), dim(o.getW(), 0),
                   (int64_t)o.getChunkRows(), (int64_t)o.getIgnoreIndex()});
    }
    const ParamSlot *slot = nullptr;
    // dw already has the slot's type (tg-fuse-loss widens it): no cast on the way.
    if (SlotSink sink = slotSink(dw, /*allowAdd=*/true); sink.acc && !sink.cast) {
      slot = slotOf(sink.acc.getParam());
      fusedAway.insert(sink.acc);
      if (AddOp add = sink.add)
        noteSlotAdd(add, slot, add.getLhs() == dw ? add.getRhs() : add.getLhs());
    }
    Arg dwArg = slot ? gradSlot(slot) : Arg(dw);
    if (!slot && failed(call(o, "tgrt_zero", {Arg(dw), elemBytes(dw) * numel(dw)})))
      return failure();
    // The slot's first write (planWeightGradWrites): the call writes it, not zeroed first.
    const bool store = slot && takePlannedWrite(lossSlotWrites, o);
    return call(o, store ? "tgrt_linear_cross_entropy_store" : "tgrt_linear_cross_entropy",
                {dt(o.getX()), Arg(o.getX()), Arg(o.getW()), Arg(o.getTargets()),
                 Arg(o.getDloss()), Arg(o.getLoss()), Arg(o.getDx()),
                 slot ? dt(slot->gradDtype) : dt(dw), dwArg, Arg(o.getScratch()), rows,
                 dim(o.getX(), -1), dim(o.getW(), 0), (int64_t)o.getChunkRows(),
                 (int64_t)o.getIgnoreIndex()});
  }

  /// A bias gradient whose only reader (possibly through one cast to the gradient's type)
  /// is the accumulation into the parameter's gradient slot: the column sums go straight
  /// into the slot (tgrt_bias_grad_acc), no arena buffer, no cast, no separate add.
  AccumulateGradOp biasGradSink(Value db, CastOp &cast) {
    SlotSink sink = slotSink(db, /*allowAdd=*/false);
    cast = sink.cast;
    return sink.acc;
  }

  /// tgrt_bias_grad_acc of `dy` into the slot of the sink of o's bias gradient `db`
  /// (biasGradSink), the call named `where` (else as o); failure (nothing
  /// emitted) when o has none.
  LogicalResult emitBiasGradIntoSlot(Operation *o, Value db, Value dy, StringRef where = "") {
    CastOp cast;
    AccumulateGradOp acc = biasGradSink(db, cast);
    if (!acc)
      return failure();
    const ParamSlot *s = slotOf(acc.getParam());
    fusedAway.insert(acc);
    if (cast)
      fusedAway.insert(cast);
    int64_t n = dim(dy, -1);
    if (failed(call(o, "tgrt_bias_grad_acc",
                    {dt(dy), Arg(dy), dt(s->gradDtype), gradSlot(s), numel(dy) / n, n}, where)))
      return LogicalResult(o->emitOpError() << "lower-to-emitc: could not emit its gradient slot's sum");
    return success();
  }

  /// A weight gradient: a GEMM whose only reader (possibly through one cast to the
  /// gradient's type) is the accumulation into a parameter's gradient slot -> one
  /// tgrt_matmul_acc onto the slot (beta 1), no arena round trip, no separate add.
  /// Also through one add whose result is the accumulation's only operand (a tied weight's
  /// two gradients, the embedding's and the head's): the GEMM then goes into the slot and
  /// the add becomes the other operand's tgrt_accumulate onto it (`add` set).
  AccumulateGradOp gradientSink(MatmulOp o, CastOp &cast) {
    AddOp add;
    return gradientSink(o, cast, add);
  }
  AccumulateGradOp gradientSink(MatmulOp o, CastOp &cast, AddOp &add) {
    SlotSink sink = slotSink(o.getResult(), /*allowAdd=*/true);
    cast = sink.cast;
    add = sink.add;
    return sink.acc;
  }

  /// Where a gradient value goes when its only reader, through at most one cast to the
  /// slot's type and (allowAdd) one add of another gradient, is the accumulation into a
  /// parameter's planned gradient slot: that accumulation and the cast and add on the way;
  /// all null otherwise. (The verifiers already make the add's operands, its result and
  /// the accumulation's gradient one type.)
  struct SlotSink {
    AccumulateGradOp acc;
    CastOp cast;
    AddOp add;
  };
  SlotSink slotSink(Value v, bool allowAdd) {
    auto onlyUser = [](Value x) -> Operation * {
      return x.hasOneUse() ? *x.getUsers().begin() : nullptr;
    };
    SlotSink sink;
    Operation *user = onlyUser(v);
    if (auto c = dyn_cast_or_null<CastOp>(user)) {
      sink.cast = c;
      user = onlyUser(c.getResult());
    }
    if (auto a = dyn_cast_or_null<AddOp>(user); a && allowAdd) {
      if (a.getLhs() == a.getRhs())
        return {};
      sink.add = a;
      user = onlyUser(a.getResult());
    }
    auto acc = dyn_cast_or_null<AccumulateGradOp>(user);
    if (!acc || !slotOf(acc.getParam()))
      return {};
    sink.acc = acc;
    return sink;
  }

  /// tg.matmul -> tgrt_matmul. A weight shared across the batch with a plain lhs becomes
  /// one GEMM over the flattened rows.
  LogicalResult emitMatmul(MatmulOp o) {
    auto a = rt(o.getA()), b = rt(o.getB());
    int64_t ar = a.getRank(), br = b.getRank();
    bool ta = o.getTransposeA(), tb = o.getTransposeB();
    int64_t m = ta ? a.getDimSize(ar - 1) : a.getDimSize(ar - 2);
    int64_t k = ta ? a.getDimSize(ar - 2) : a.getDimSize(ar - 1);
    int64_t n = tb ? b.getDimSize(br - 2) : b.getDimSize(br - 1);
    int64_t batch = prod(a.getShape().drop_back(2));
    int64_t sa = a.getDimSize(ar - 2) * a.getDimSize(ar - 1);
    int64_t sb = br == 2 ? 0 : b.getDimSize(br - 2) * b.getDimSize(br - 1);
    int64_t sc = m * n;
    if (br == 2 && !ta) { // fold the batch into the rows
      m *= batch;
      batch = 1;
      sa = sb = sc = 0;
    }
    CastOp cast;
    AddOp viaAdd;
    if (batch == 1)
      if (AccumulateGradOp acc = gradientSink(o, cast, viaAdd)) {
        const ParamSlot *s = slotOf(acc.getParam());
        fusedAway.insert(acc);
        if (cast)
          fusedAway.insert(cast);
        if (viaAdd) {
          Value mine = cast ? cast.getResult() : o.getResult();
          noteSlotAdd(viaAdd, s, viaAdd.getLhs() == mine ? viaAdd.getRhs() : viaAdd.getLhs());
        }
        if (wgradWrites.contains(o)) {
          const ParamSlot *bias = wgradBias.lookup(o);
          // tg-bias-rows: A = [y 1 0] [k, m + kBiasRows] (the first columns of the layer
          // norm's [k, m + kOnesColumns]), C = [dW; db; 0] over W's slot and b's (right after
          // it, kBiasRows rows): the GEMM's row m is the bias gradient.
          if (o->hasAttr("tg.bias_rows")) {
            if (!bias || bias->gradOffset != s->gradOffset + dtypeBytes(s->gradDtype) * s->numel ||
                bias->padRows != kBiasPadRows || bias->numel != n || !ta ||
                !isOnesColumnOutput(throughReshape(o.getA())))
              return o->emitOpError()
                     << "lower-to-emitc: tg.bias_rows, but the weight gradient does not write "
                        "its bias's slot, or that slot does not follow the weight's with "
                     << kBiasPadRows << " zero rows (run tg-bias-rows before tg-plan-memory)";
            FailureOr<Arg> ya = biasRowsWgradA(o, k, m);
            if (failed(ya)) return failure();
            return call(
                o, "tgrt_matmul_wgrad_lda",
                {dt(o.getA()), *ya, Arg(o.getB()), dt(s->gradDtype), gradSlot(s), m + kBiasRows, n, k,
                 m + kOnesColumns, int64_t(tb ? 1 : 0), flt(o.getAlpha().convertToFloat())});
          }
          return call(o, "tgrt_matmul_wgrad",
                      {dt(o.getA()), Arg(o.getA()), Arg(o.getB()), dt(s->gradDtype), gradSlot(s),
                       m, n, k, int64_t(ta ? 1 : 0), int64_t(tb ? 1 : 0),
                       flt(o.getAlpha().convertToFloat()),
                       bias ? gradSlot(bias) : Arg(std::string("NULL"))});
        }
        // tg-bias-rows with persistent gradient slots (planBiasRowsAccumulations): the same
        // [y 1 0]^T dh as tgrt_matmul_wgrad_lda, added into W's slot and b's after it.
        if (o->hasAttr("tg.bias_rows")) {
          if (!accBiasRows.contains(o) || viaAdd)
            return o->emitOpError()
                   << "lower-to-emitc: tg.bias_rows, but the weight gradient neither writes "
                      "nor alone adds into its weight's and bias's slots (run tg-bias-rows "
                      "before tg-plan-memory)";
          FailureOr<Arg> ya = biasRowsWgradA(o, k, m);
          if (failed(ya)) return failure();
          return call(
              o, "tgrt_matmul_acc_lda",
              {dt(o.getA()), *ya, Arg(o.getB()), dt(s->gradDtype), gradSlot(s), m + kBiasRows, n, k,
               m + kOnesColumns, int64_t(tb ? 1 : 0), flt(o.getAlpha().convertToFloat())});
        }
        return call(o, "tgrt_matmul_acc",
                    {dt(o.getA()), Arg(o.getA()), Arg(o.getB()), dt(s->gradDtype), gradSlot(s),
                     m, n, k, int64_t(ta ? 1 : 0),
                     int64_t(tb ? 1 : 0), flt(o.getAlpha().convertToFloat())});
      }
    if (o->hasAttr("tg.bias_rows"))
      return o->emitOpError() << "lower-to-emitc: tg.bias_rows, but the weight gradient goes "
                                 "into no gradient slot (run tg-bias-rows before tg-plan-memory)";
    return call(o, "tgrt_matmul",
                {dt(o.getA()), Arg(o.getA()), Arg(o.getB()), Arg(o.getResult()), batch, m, n, k,
                 int64_t(ta ? 1 : 0), int64_t(tb ? 1 : 0), sa, sb, sc,
                 flt(o.getAlpha().convertToFloat()), flt(0.0f)});
  }

  /// split (whole -> parts) or concat (parts -> whole) along `axis` as strided copies.
  LogicalResult emitPieces(Operation *op, Value whole, ValueRange parts, int64_t axis, bool split) {
    auto shape = rt(whole).getShape();
    int64_t rows = prod(shape.take_front(axis));
    int64_t inner = prod(shape.drop_front(axis + 1));
    int64_t ld = shape[axis] * inner, at = 0;
    for (Value p : parts) {
      int64_t cols = dim(p, axis) * inner;
      auto w = ptrOf(whole), q = ptrOf(p);
      if (failed(w) || failed(q))
        return failure();
      PtrRef wp = *w;
      wp.byteOffset += elemBytes(whole) * at;
      // For the checks: the part whole, and its columns [at, at + cols) of the whole.
      std::string dtype = tgrtDtype(rt(whole).getElementType());
      Arg wa = Arg(wp).view(valueName(whole) + ", columns " + std::to_string(at) + ".." +
                                std::to_string(at + cols - 1) + " of each row",
                            shapeText(rt(whole).getShape()), dtype, rows, cols, ld);
      Arg qa = Arg(*q).view(valueName(p), shapeText(rt(p).getShape()), dtype, 1, rows * cols,
                            rows * cols);
      LogicalResult r = split ? call(op, "tgrt_copy2d", {dt(whole), wa, ld, qa, cols, rows, cols})
                              : call(op, "tgrt_copy2d", {dt(whole), qa, cols, wa, ld, rows, cols});
      if (failed(r))
        return failure();
      at += cols;
    }
    return success();
  }

  ModuleOp module;
  OpBuilder b;
  MLIRContext *ctx;
  PlanReport report;
  llvm::StringMap<const ParamSlot *> slots;
  int64_t ranks = 1, gradAccum = 1; ///< tg.ranks, tg.grad_accum (emitHeader)
  /// A tgrt_reduce_scatter_mean_start of this function not waited for yet.
  bool scatterPending = false;
  /// Arena byte ranges [begin, end) of ZeRO-3 gathers started and not waited for yet: the
  /// first call with a pointer into one of them waits first (call()).
  SmallVector<std::pair<int64_t, int64_t>> pendingGathers;

  /// tgrt_all_reduce_wait at `op`: the context's stream waits for every collective started
  /// so far (gathers and reduce-scatters alike).
  LogicalResult waitCollectives(Operation *op) {
    scatterPending = false;
    pendingGathers.clear();
    return call(op, "tgrt_all_reduce_wait", {});
  }
  /// planGradientBuckets: the buckets not started yet, each slot's tg.accumulate_grad ops
  /// in @micro_step, and the slots the buckets cover (not all-reduced by @optimizer_step).
  std::vector<SmallVector<const ParamSlot *>> buckets;
  llvm::DenseMap<const ParamSlot *, SmallVector<Operation *>> accsOf;
  llvm::SmallPtrSet<const ParamSlot *, 32> overlapped;
  /// Ops lowered as part of an earlier call, in the order they were fused (the trace
  /// attributes their FLOPs to the call that computes them).
  llvm::SetVector<Operation *> fusedAway;
  /// Weight gradients that are their slot's only write of the step (planWeightGradWrites):
  /// lowered to tgrt_matmul_wgrad, which writes the slot (no tgrt_zero before it) and, for
  /// those in wgradBias, the bias gradient of the same layer from its B operand.
  llvm::SmallPtrSet<Operation *, 32> wgradWrites;
  llvm::DenseMap<Operation *, const ParamSlot *> wgradBias;
  /// The bias-gradient ops (tg.bias_grad, tg.matmul_dgelu_bgrad's db) whose slot sum such a
  /// GEMM, or a layer-norm backward (lnBias), computes instead.
  llvm::SmallPtrSet<Operation *, 32> biasInWgrad;
  /// Layer-norm backwards in lnSlotWrites that also write the bias gradient of the residual
  /// stream's gradient they update (the slot of an attention or MLP output projection's
  /// bias, its only write): tgrt_layer_norm_bwd_acc_bgrad.
  llvm::DenseMap<Operation *, const ParamSlot *> lnBias;
  /// Slots written whole by one call of the step (no tgrt_zero before their first write).
  llvm::SmallPtrSet<const ParamSlot *, 32> writtenWhole;
  /// Layer-norm backwards (fused with the residual stream's gradient) whose dgamma and dbeta
  /// are their slots' only writes of the step (planWeightGradWrites): lowered to
  /// tgrt_layer_norm_bwd_acc writing the two slots, not _acc_slots adding into zeroed ones;
  /// RMSNorm backwards whose dgamma is its slot's only write (tgrt_rms_norm_bwd[_acc] with
  /// the slot as dgamma); likewise embedding backwards whose table gradient is its slot's only write
  /// (tgrt_embedding_bwd into the slot). slotWritten collects those lowered so (every one
  /// must be: their slots are not zeroed).
  /// lossSlotWrites: fused losses (tg.linear_cross_entropy) that are their dw slot's first
  /// write of the step: tgrt_linear_cross_entropy_store, the slot not zeroed before it.
  llvm::SmallPtrSet<Operation *, 32> lnSlotWrites, embSlotWrites, lossSlotWrites, slotWritten;
  /// Whether op is in `planned` (its slots written, not zeroed), noting it in slotWritten.
  bool takePlannedWrite(const llvm::SmallPtrSet<Operation *, 32> &planned, Operation *op) {
    if (!planned.contains(op))
      return false;
    slotWritten.insert(op);
    return true;
  }

  /// With the gradients in the arena (one micro-step, one rank: each slot is zeroed right
  /// before its first write, MemoryPlan.h gradientFirstWrites), a parameter whose only
  /// accumulation in @micro_step is fed by one weight-gradient GEMM (through at most a cast,
  /// no add) gets that GEMM's result written, not added: the zero and the read of the slot
  /// go. A linear layer's bias gradient is the column sum of dy, the B of its weight
  /// gradient dW = x^T dy (trans_a, not trans_b, k = dy's rows); when that bias's slot is
  /// also written once, the same call writes it (cuBLASLt's BGRADA epilogue: dy read once),
  /// and the bias-gradient op emits nothing. Likewise layer norms (lnSlotWrites, lnBias),
  /// embeddings (embSlotWrites) and the fused loss when it is its slot's first write
  /// (lossSlotWrites; `firstWrites` is gradientFirstWrites(fn)). Fills those sets,
  /// wgradWrites, wgradBias, biasInWgrad and writtenWhole.
  void planWeightGradWrites(func::FuncOp fn, const llvm::StringMap<int64_t> &firstWrites) {
    writtenWhole.clear();
    // A slot written by one call needs no zero when the call covers it whole: the optimizer
    // reads runs of slots with their 256-byte padding, which must hold zeros (a slot of
    // bf16 [64] is 128 bytes of values in 256), so a padded slot keeps its zero.
    auto noteWhole = [&](const ParamSlot *s) {
      if (dtypeBytes(s->gradDtype) * s->numel % kBufferAlignment == 0)
        writtenWhole.insert(s);
    };
    llvm::DenseMap<Value, int> accumulations;
    fn.walk([&](AccumulateGradOp acc) { ++accumulations[acc.getParam()]; });
    auto onlyWrite = [&](AccumulateGradOp acc) {
      return acc && accumulations.lookup(acc.getParam()) == 1 && slotOf(acc.getParam());
    };
    // The weight GEMMs, by the value their B reads (through a reshape).
    llvm::DenseMap<Value, SmallVector<MatmulOp, 1>> byB;
    fn.walk([&](MatmulOp o) {
      auto a = rt(o.getA()), b = rt(o.getB());
      if (a.getRank() != 2 || b.getRank() != 2)
        return;
      CastOp cast;
      AddOp add;
      AccumulateGradOp acc = gradientSink(o, cast, add);
      if (add || !onlyWrite(acc))
        return;
      wgradWrites.insert(o);
      noteWhole(slotOf(acc.getParam()));
      if (o.getTransposeA() && !o.getTransposeB())
        byB[throughReshape(o.getB())].push_back(o);
    });
    // The slot v goes into (its only reader is the slot's accumulation, no cast between)
    // when that accumulation is the slot's only write; else null.
    auto soleSlot = [&](Value v) -> const ParamSlot * {
      SlotSink sink = slotSink(v, /*allowAdd=*/false);
      return sink.acc && !sink.cast && onlyWrite(sink.acc) ? slotOf(sink.acc.getParam())
                                                           : nullptr;
    };
    // A layer norm's dgamma and dbeta that go straight into their slots (the fused residual
    // form, as lowerOp's LayerNormGradOp case decides) and are each slot's only write: the
    // call writes them, so neither slot is zeroed first (GPT-2 small: 48 tgrt_zero calls
    // fewer per step). The residual gradient it updates is what the output projection of
    // the block below added into the stream: its bias gradient is that gradient's column sum
    // (tg.bias_grad of the add, or of its low copy), which the same call sums while it
    // writes it when the bias slot is also written once (GPT-2 small: 23 of the 24
    // projection biases; ln_f's backward has no add). Memory: gradientFirstWrites reserves
    // such a bias slot from the layer norm on.
    fn.walk([&](LayerNormGradOp o) {
      const ParamSlot *g = soleSlot(o.getDgamma()), *b = soleSlot(o.getDbeta());
      auto [add, low] = residualGradSink(o, o.getDx(), o.getDy());
      if (!add || !g || !b)
        return;
      lnSlotWrites.insert(o);
      noteWhole(g);
      noteWhole(b);
      Value summed = low ? low.getResult() : add.getResult();
      for (Operation *user : summed.getUsers()) {
        auto bias = dyn_cast<BiasGradOp>(user);
        CastOp cast;
        AccumulateGradOp acc = bias ? biasGradSink(bias.getResult(), cast) : AccumulateGradOp();
        if (!acc || !onlyWrite(acc))
          continue;
        lnBias[o] = slotOf(acc.getParam());
        biasInWgrad.insert(bias);
        noteWhole(lnBias[o]);
        break;
      }
    });
    // An RMSNorm's dgamma likewise (whether or not its dx joins the residual gradient:
    // tgrt_rms_norm_bwd_acc or tgrt_rms_norm_bwd, both write dgamma); RMSNorm has no beta
    // and the Llama family no projection biases.
    fn.walk([&](RmsNormGradOp o) {
      if (const ParamSlot *g = soleSlot(o.getDgamma())) {
        lnSlotWrites.insert(o);
        noteWhole(g);
      }
    });
    auto fuseBias = [&](Operation *op, Value db, Value dy) {
      if (biasInWgrad.contains(op)) // summed by a layer-norm backward
        return;
      CastOp cast;
      AccumulateGradOp acc = biasGradSink(db, cast);
      if (!onlyWrite(acc))
        return;
      const ParamSlot *bias = slotOf(acc.getParam());
      int64_t n = dim(dy, -1);
      for (MatmulOp w : byB.lookup(dy)) {
        CastOp wc;
        const ParamSlot *weight = slotOf(gradientSink(w, wc).getParam());
        if (wgradBias.count(w) || weight->gradDtype != bias->gradDtype || dim(w.getB(), -1) != n ||
            dim(w.getB(), 0) * n != numel(dy))
          continue;
        wgradBias[w] = bias;
        biasInWgrad.insert(op);
        noteWhole(bias);
        return;
      }
    };
    fn.walk([&](BiasGradOp o) { fuseBias(o, o.getResult(), o.getDy()); });
    fn.walk([&](MatmulDgeluBgradOp o) { fuseBias(o, o.getDb(), o.getDx()); });
    // An embedding table's gradient that is its slot's only write (untied embeddings) is
    // written into the slot by the embedding backward.
    fn.walk([&](EmbeddingGradOp o) {
      if (const ParamSlot *s = soleSlot(o.getResult())) {
        embSlotWrites.insert(o);
        noteWhole(s);
      }
    });
    // A fused loss whose dw is its slot's first write (a tied embedding's table, whose
    // embedding backward adds later): the first chunk's GEMM writes the slot, no zero.
    llvm::DenseMap<Operation *, int64_t> position;
    int64_t index = 0;
    for (Operation &op : fn.getBody().front())
      position[&op] = index++;
    fn.walk([&](LinearCrossEntropyOp o) {
      SlotSink sink = slotSink(o.getDw(), /*allowAdd=*/false);
      if (!sink.acc || sink.cast)
        return;
      const ParamSlot *s = slotOf(sink.acc.getParam());
      auto first = firstWrites.find(s->name);
      if (first == firstWrites.end() || first->second != position.lookup(o))
        return;
      lossSlotWrites.insert(o);
      noteWhole(s);
    });
  }

  /// The A argument of a tg-bias-rows weight gradient (tgrt_matmul_wgrad_lda / _acc_lda),
  /// as the checks see it: k rows of the layer norm's output, the first m + kBiasRows of each
  /// row's m + kOnesColumns elements.
  FailureOr<Arg> biasRowsWgradA(MatmulOp o, int64_t k, int64_t m) {
    Value y = throughReshape(o.getA());
    FailureOr<PtrRef> yp = ptrOf(y);
    if (failed(yp)) return failure();
    return Arg(*yp).view(valueName(y), shapeText(rt(y).getShape()),
                         tgrtDtype(rt(y).getElementType()), k, m + kBiasRows, m + kOnesColumns);
  }

  /// The A argument of a tg-bias-rows forward GEMM (tg.matmul_bias / _gelu with
  /// tg.bias_rows): the layer norm's output, planned [rows, d + kOnesColumns] (its ones
  /// column, which this GEMM does not read: it takes the bias in its epilogue), described
  /// for the checks with that row pitch. Errors: A is not a tg.ones_column layer norm's
  /// output, or the bias's slot has no zero rows after it (the weight gradient writes them).
  FailureOr<Arg> onesColumnOperand(Operation *o) {
    Value a = o->getOperand(0), bias = o->getOperand(2);
    Value param = bias;
    if (auto c = bias.getDefiningOp<CastOp>())
      param = c.getX();
    const ParamSlot *s = slotOf(param);
    if (!isOnesColumnOutput(a) || !s || s->padRows != kBiasPadRows)
      return o->emitOpError() << "lower-to-emitc: tg.bias_rows needs a tg.ones_column layer "
                                 "norm's output as A and a bias slot with "
                              << kBiasPadRows << " zero rows (run tg-bias-rows before "
                                                 "tg-plan-memory)";
    FailureOr<PtrRef> p = ptrOf(a);
    if (failed(p))
      return failure();
    const int64_t d = dim(a, -1);
    return Arg(*p).view(valueName(a), shapeText(rt(a).getShape()),
                        tgrtDtype(rt(a).getElementType()), numel(a) / d, d, d + kOnesColumns);
  }

  /// The bias-gradient op o whose slot sum a tgrt_matmul_wgrad computes (biasInWgrad): its
  /// cast and accumulation lowered with it, nothing emitted.
  bool biasSumInWgrad(Operation *o, Value db) {
    if (!biasInWgrad.contains(o))
      return false;
    CastOp cast;
    AccumulateGradOp acc = biasGradSink(db, cast);
    fusedAway.insert(acc);
    if (cast)
      fusedAway.insert(cast);
    return true;
  }
  /// tg-bias-rows weight gradients that add into persistent gradient slots (the gradients
  /// outside the arena: training.gradients persistent, a checkpointing budget): lowered to
  /// tgrt_matmul_acc_lda over W's slot and its bias's right after it; the bias-gradient op
  /// (tg.bias_grad of dh, or tg.matmul_dgelu_bgrad's db beside it) goes into biasInWgrad and
  /// emits no sums.
  llvm::SmallPtrSet<Operation*, 32> accBiasRows;
  void planBiasRowsAccumulations(func::FuncOp fn) {
    fn.walk([&](MatmulOp o) {
      if (!o->hasAttr("tg.bias_rows") || wgradWrites.contains(o) || !o.getTransposeA() ||
          !isOnesColumnOutput(throughReshape(o.getA())))
        return;
      CastOp cast;
      AddOp add;
      AccumulateGradOp acc = gradientSink(o, cast, add);
      const ParamSlot* w = acc ? slotOf(acc.getParam()) : nullptr;
      if (!w || add) return;
      const int64_t n = dim(o.getB(), -1);
      // The bias: the slot right after W's, with the zero rows the GEMM writes.
      auto biasAfterW = [&](Value db) -> bool {
        CastOp bc;
        AccumulateGradOp bacc = biasGradSink(db, bc);
        const ParamSlot* b = bacc ? slotOf(bacc.getParam()) : nullptr;
        return b && b->padRows == kBiasPadRows && b->numel == n && b->gradDtype == w->gradDtype &&
               b->gradOffset == w->gradOffset + dtypeBytes(w->gradDtype) * w->numel;
      };
      Value dh = throughReshape(o.getB());
      Operation* source = nullptr;
      for (Operation* u : dh.getUsers())
        if (auto bg = dyn_cast<BiasGradOp>(u); bg && biasAfterW(bg.getResult())) source = u;
      if (auto dg = dh.getDefiningOp<MatmulDgeluBgradOp>();
          !source && dg && dg.getDx() == dh && biasAfterW(dg.getDb()))
        source = dg;
      if (!source) return;
      accBiasRows.insert(o);
      biasInWgrad.insert(source);
    });
  }

  /// Runtime calls emitted so far (lowerToEmitC's `calls`), or null.
  std::vector<RuntimeCall> *trace = nullptr;

  static int64_t opFlops(Operation *op) {
    auto c = dyn_cast<CostOpInterface>(op);
    return c ? c.flops() : 0;
  }

  /// Records the call just emitted (RuntimeCall): its integer arguments, first dtype and
  /// the bytes of the tensors its access string says it reads and writes.
  LogicalResult traceCall(Operation *op, StringRef fnName, ArrayRef<Arg> args,
                          StringRef locText) {
    RuntimeCall c;
    c.function = currentFunction.str();
    c.kernel = fnName.str();
    c.location = locText.str();
    c.phase = (backwardOps.contains(op) ? StringRef("backward") : functionPhase).str();
    c.op = op->getName().getStringRef().str();
    StringRef access = kernelAccess(fnName);
    for (size_t i = 0; i < args.size(); ++i) {
      const Arg &a = args[i];
      if (a.kind == Arg::Int)
        c.ints.push_back(a.i);
      if (a.kind == Arg::Text && c.dtype.empty() && StringRef(a.text).starts_with("TGRT_"))
        c.dtype = a.text;
      char role = i < access.size() ? access[i] : '-';
      if (role != '-' && a.kind == Arg::Text && (a.text == "NULL" || a.text == "nullptr"))
        c.nullArgs.push_back((int)i);
      if (role == '-' || (a.kind != Arg::Val && a.kind != Arg::Ptr))
        continue;
      int64_t bytes = 0;
      if (a.kind == Arg::Val) {
        bytes = elemBytes(a.value) * numel(a.value);
      } else if (a.viewRows >= 0) {
        int64_t e = a.viewDtype == "TGRT_F32" || a.viewDtype == "TGRT_CHECK_I32" ? 4 : 2;
        bytes = e * a.viewRows * a.viewCols;
      }
      if (role == 'R' || role == 'M')
        c.bytesRead += bytes;
      if (role == 'W' || role == 'M')
        c.bytesWritten += bytes;
    }
    trace->push_back(std::move(c));
    return success();
  }

  /// After lowering `op`: the FLOPs of `op` (unless an earlier call computed it) and of
  /// every op fused away while lowering it go to the first call it emitted (none when it
  /// emitted none: a view, or a loss computed with its gradient later).
  void attributeFlops(Operation *op, bool alreadyFused, size_t fusedBefore,
                      size_t callsBefore) {
    int64_t flops = alreadyFused ? 0 : opFlops(op);
    for (size_t i = fusedBefore; i < fusedAway.size(); ++i)
      flops += opFlops(fusedAway[i]);
    // The first call computes the op (a GEMM's epilogue call); later ones finish around it
    // (the bias gradient into its slot, bucket starts).
    if (trace->size() > callsBefore)
      (*trace)[callsBefore].flops += flops;
  }
  /// Adds lowered as tgrt_accumulate of their other operand onto a gradient slot (the GEMM
  /// operand went into the slot already, gradientSink).
  llvm::DenseMap<Operation *, std::pair<const ParamSlot *, Value>> slotAdds;
  /// The same adds by slot (slotFinal).
  llvm::DenseMap<const ParamSlot *, SmallVector<Operation *, 2>> slotAddsOf;
  void noteSlotAdd(Operation *add, const ParamSlot *slot, Value other) {
    slotAdds[add] = {slot, other};
    slotAddsOf[slot].push_back(add);
  }
  /// Loss gradients whose forward (the value) is emitted with them (fusableLossGrad).
  llvm::DenseMap<Operation *, CrossEntropyOp> deferredLoss;

  /// The tg.cross_entropy_grad of the same logits, targets and ignore index later in the
  /// block, when no op between the two reads the loss (so the loss may be written at the
  /// gradient: one pass over the logits instead of two). Null otherwise (eval steps, or a
  /// loss read before its gradient). The logits stay live until the gradient reads them, so
  /// the plan keeps their bytes; the loss's buffer is live from the forward on.
  CrossEntropyGradOp fusableLossGrad(CrossEntropyOp f) {
    CrossEntropyGradOp g;
    for (Operation *u : f.getLogits().getUsers())
      if (auto c = dyn_cast<CrossEntropyGradOp>(u);
          c && c->getBlock() == f->getBlock() && f->isBeforeInBlock(c) &&
          c.getTargets() == f.getTargets() && c.getIgnoreIndex() == f.getIgnoreIndex())
        g = c;
    if (!g)
      return {};
    for (Operation *op = f->getNextNode(); op && op != g.getOperation(); op = op->getNextNode())
      for (Value v : op->getOperands())
        if (v == f.getLoss())
          return {};
    return g;
  }
  // Per function: the tgrt_ctx* argument, the region bases, the pointers built so far.
  Value ctxValue, P, A, H;
  /// Per function: tgrt_check_enabled(ctx), the phase of its ops, @micro_step's backward.
  Value dbg;
  StringRef functionPhase, currentFunction;
  llvm::DenseSet<Operation *> backwardOps;
  /// The non-finite checks' tables (emitCheckTables): C++ rows and counts.
  std::string checkTensorText, checkSiteText;
  int64_t checkTensorCount = 0, checkSiteCount = 0;
  Operation *firstStepFn = nullptr;
  std::map<std::tuple<int, int64_t, int>, Value> ptrCache; /// PtrRef::key() -> pointer
  /// Told of every arena result whose planned offset an emitted call uses (traceReadResults).
  llvm::function_ref<void(Operation*, unsigned)> onOffsetRead;
};

} // namespace

LogicalResult lowerToEmitC(ModuleOp module, std::vector<RuntimeCall> *calls) {
  module.getContext()->getOrLoadDialect<emitc::EmitCDialect>();
  return Lowering(module, calls).run();
}

LogicalResult traceRuntimeCalls(ModuleOp module, std::vector<RuntimeCall> &calls) {
  OwningOpRef<ModuleOp> clone = module.clone();
  calls.clear();
  return lowerToEmitC(*clone, &calls);
}

LogicalResult traceReadResults(ModuleOp module, llvm::DenseSet<Value>& read) {
  OwningOpRef<ModuleOp> clone = module.clone();
  // The clone is the module op for op, in the same walk order.
  llvm::DenseMap<Operation*, Operation*> original;
  SmallVector<Operation*> mine;
  module.walk([&](Operation* op) { mine.push_back(op); });
  size_t i = 0;
  bool same = true;
  clone->walk([&](Operation* op) {
    if (i < mine.size() && mine[i]->getName() == op->getName())
      original[op] = mine[i];
    else
      same = false;
    ++i;
  });
  if (!same || i != mine.size())
    return module.emitError() << "lower-to-emitc: internal error, a clone differs from its module";
  read.clear();
  module.getContext()->getOrLoadDialect<emitc::EmitCDialect>();
  return Lowering(*clone, nullptr,
                  [&](Operation* def, unsigned idx) {
                    if (Operation* op = original.lookup(def)) read.insert(op->getResult(idx));
                  })
      .run();
}

LogicalResult emitTrainingCpp(ModuleOp module, llvm::raw_ostream &os) {
  OwningOpRef<ModuleOp> clone = module.clone();
  if (failed(lowerToEmitC(*clone)))
    return failure();
  return emitc::translateToCpp(*clone, os, /*declareVariablesAtTop=*/false);
}

} // namespace mlir::tg
