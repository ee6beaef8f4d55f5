//===- PlanSvg.h - the memory plan as an SVG picture --------------*- C++ -*-===//
//
// `tgc plan SPEC --svg FILE`: one panel per function of the step (@micro_step,
// @optimizer_step, @eval_step), x = op index, y = byte offset in the arena, one rectangle
// per planned buffer, in the spirit of PyTorch's memory snapshot viewer.
//
//===----------------------------------------------------------------------------===//
#ifndef TGC_TOOLS_TGC_PLANSVG_H
#define TGC_TOOLS_TGC_PLANSVG_H

#include "passes/MemoryPlan.h"

#include <cstdint>
#include <string>

namespace tgc {

/// Options of planSvg().
struct PlanSvgOptions {
  std::string title;                       ///< first line of the picture (spec, precision, ...)
  int64_t maxBytes = 4 * 1024 * 1024;      ///< soft cap on the SVG text size (bytes)
};

/// Renders `report` as a standalone SVG document (UTF-8 text).
///
/// Each function with buffers gets a panel `<g class="panel" id="FUNCTION"
/// data-peak-bytes="P" data-buffers="N" data-drawn="K">` holding one `<rect class="buf
/// PHASE">` per drawn buffer: x spans ops [first, last] (inclusive), y spans
/// [offset, offset + bytes) (offset 0 at the bottom), with a `<title>` tooltip naming the
/// buffer (name, dtype, bytes, op range, offset, phase). PHASE is forward, backward or
/// optimizer, and eval for every buffer of @eval_step. The panel's peak (the largest sum
/// of bytes live at one op, the same quantity as the report's per-phase peaks) is a
/// dashed `<line class="peak" data-bytes="P">` labelled in KiB/MiB/GiB. A caption states
/// the persistent region, the workspace and the arena sizes.
///
/// Size: when drawing every buffer would exceed opts.maxBytes, the buffers with the
/// smallest on-screen area are left out (their count and largest size are stated in the
/// panel's note; the peak still counts them). Buffers with no offset (-1) are not drawn
/// either. All text is XML-escaped. Never fails.
std::string planSvg(const mlir::tg::PlanReport &report, const PlanSvgOptions &opts);

} // namespace tgc

#endif
