// KernelList.cpp — compile-time checks of the kernel list, runtime/tgrt_kernels.def, against
// the declarations runtime/tgrt.h makes from it. No code: a wrong entry fails this file's
// compilation, in every build (it is part of tgrt_cpu, which every configuration builds), not
// only in the CUDA one. Checked for each entry:
//   - the parameters start with (tgrt_ctx* ctx, const char* loc);
//   - the access string is empty ("not checked") or has one character per parameter after
//     (ctx, loc);
//   - its characters are R, W, M or '-'; an R sits on a pointer, a W or an M on a pointer to
//     non-const (what the non-finite checks and the traced calls' byte counts rely on);
//   - no name appears twice.
#include "runtime/tgrt.h"

#include <cstddef>
#include <tuple>
#include <type_traits>

namespace {

/// What an access string may say of a parameter of type T: 'w' a pointer to non-const (R, W,
/// M or '-'), 'r' a pointer to const (R or '-'), 's' anything else ('-' only).
template <class T> constexpr char paramKind() {
  if constexpr (!std::is_pointer_v<T>)
    return 's';
  else
    return std::is_const_v<std::remove_pointer_t<T>> ? 'r' : 'w';
}

/// A kernel's function type, as tgrt.h declares it.
template <class F> struct Kernel;
template <class R, class... A> struct Kernel<R(A...)> {
  static constexpr std::size_t arity = sizeof...(A);
  /// paramKind of each parameter, in order.
  static constexpr char kinds[sizeof...(A) + 1] = {paramKind<A>()..., '\0'};
  static constexpr bool ctxLoc() {
    if constexpr (sizeof...(A) < 2) {
      return false;
    } else {
      using P = std::tuple<A...>;
      return std::is_same_v<std::tuple_element_t<0, P>, tgrt_ctx*> &&
             std::is_same_v<std::tuple_element_t<1, P>, const char*>;
    }
  }
};

/// The access string's characters against the parameter kinds after (ctx, loc).
constexpr bool accessFits(const char* access, std::size_t n, const char* kinds) {
  for (std::size_t i = 0; i < n; ++i) {
    const char a = access[i], k = kinds[i + 2];
    const bool ok = a == '-' || (a == 'R' && k != 's') || ((a == 'W' || a == 'M') && k == 'w');
    if (!ok)
      return false;
  }
  return true;
}

#define TGRT_KERNEL(ret, name, access, params)                                                     \
  static_assert(Kernel<decltype(name)>::ctxLoc(),                                                  \
                #name ": the parameters must start with (tgrt_ctx* ctx, const char* loc)");        \
  static_assert(sizeof(access) == 1 || sizeof(access) - 1 == Kernel<decltype(name)>::arity - 2,   \
                #name ": the access string must be empty or have one character per parameter "    \
                      "after (ctx, loc)");                                                         \
  static_assert(accessFits(access, sizeof(access) - 1, Kernel<decltype(name)>::kinds),             \
                #name ": access characters are R, W, M or -; R needs a pointer parameter, W and " \
                      "M a pointer to non-const");
#include "runtime/tgrt_kernels.def"
#undef TGRT_KERNEL

/// Every name of the list, in order.
constexpr const char* kNames[] = {
#define TGRT_KERNEL(ret, name, access, params) #name,
#include "runtime/tgrt_kernels.def"
#undef TGRT_KERNEL
};

constexpr bool sameText(const char* a, const char* b) {
  while (*a && *a == *b)
    ++a, ++b;
  return *a == *b;
}

constexpr bool namesDistinct() {
  constexpr std::size_t n = sizeof(kNames) / sizeof(kNames[0]);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j)
      if (sameText(kNames[i], kNames[j]))
        return false;
  return true;
}
static_assert(namesDistinct(), "tgrt_kernels.def: a kernel is listed twice");

} // namespace
