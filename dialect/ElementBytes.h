//===- ElementBytes.h - the bytes of a tensor element --------------*- C++ -*-===//
//
// The size of one element of a tg tensor, from its type: the element types the runtime
// knows (runtime/tgrt.h: TGRT_F32, TGRT_BF16, TGRT_F16 for data, int32 token ids) and no
// other. Every place that sizes a buffer by its element type asks here, so a type the
// runtime does not know is never sized as some other type (an fp8 tensor as 2 bytes): the
// callers refuse it (tg-lower-to-emitc's type check, the ops' verifiers, tg-fuse-loss's
// match).
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_DIALECT_ELEMENTBYTES_H
#define TGC_DIALECT_ELEMENTBYTES_H

#include "mlir/IR/Types.h"

#include <cstdint>
#include <optional>

namespace mlir::tg {

/// Bytes of one element of type `t`: 4 for f32 and i32, 2 for bf16 and f16; nullopt for any
/// other type (no runtime dtype).
inline std::optional<int64_t> elementBytes(Type t) {
  if (t.isF32() || t.isInteger(32))
    return 4;
  if (t.isBF16() || t.isF16())
    return 2;
  return std::nullopt;
}

} // namespace mlir::tg

#endif
