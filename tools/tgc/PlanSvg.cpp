//===- PlanSvg.cpp - the memory plan as an SVG picture -----------------------===//
//
// Plain SVG text, no library: one panel per function, one rectangle per planned buffer
// (x = op range, y = arena byte range), coloured by phase, with a <title> tooltip; the
// peak of live bytes as a dashed line; the region sizes in a caption. See PlanSvg.h.
//
//===----------------------------------------------------------------------------===//
#include "tools/tgc/PlanSvg.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tgc {
namespace {

using Buffer = mlir::tg::PlanReport::Buffer;

// Geometry (pixels).
constexpr double kWidth = 1400, kLeft = 100, kRight = 30;
constexpr double kPanelHeight = 320, kPanelTop = 84, kPanelGap = 34;
constexpr double kPlotWidth = kWidth - kLeft - kRight;

/// Escapes text for XML content and attribute values.
std::string xml(const std::string &s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
    case '&': o += "&amp;"; break;
    case '<': o += "&lt;"; break;
    case '>': o += "&gt;"; break;
    case '"': o += "&quot;"; break;
    case '\'': o += "&apos;"; break;
    default:
      // Control characters are not allowed in XML 1.0 (except tab, newline, return).
      if ((unsigned char)c < 0x20 && c != '\t' && c != '\n' && c != '\r')
        o += '?';
      else
        o += c;
    }
  }
  return o;
}

/// "512 B", "1.50 KiB", "12.00 MiB", "1.23 GiB".
std::string human(int64_t bytes) {
  double b = (double)bytes;
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  if (bytes < (1LL << 20))
    return llvm::formatv("{0:f2} KiB", b / 1024).str();
  if (bytes < (1LL << 30))
    return llvm::formatv("{0:f2} MiB", b / (1 << 20)).str();
  return llvm::formatv("{0:f2} GiB", b / (1LL << 30)).str();
}

std::string num(double v) { return llvm::formatv("{0:f1}", v).str(); }

/// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `ticks` ticks over
/// [0, range].
double niceStep(double range, int ticks) {
  if (range <= 0)
    return 1;
  double raw = range / ticks, p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw)
      return m * p;
  return 10 * p;
}

/// The largest sum of bytes live at one op (same rule as liveBytesPerOp: a buffer is live
/// at ops [first, last]).
int64_t peakLive(const std::vector<const Buffer *> &bufs, int64_t *at) {
  std::map<int64_t, int64_t> delta;
  for (const Buffer *b : bufs) {
    if (b->bytes <= 0 || b->last < b->first)
      continue;
    delta[b->first] += b->bytes;
    delta[b->last + 1] -= b->bytes;
  }
  int64_t run = 0, peak = 0;
  *at = 0;
  for (auto &[i, d] : delta) {
    run += d;
    if (run > peak) {
      peak = run;
      *at = i;
    }
  }
  return peak;
}

struct Panel {
  std::string fn;
  std::vector<const Buffer *> bufs;
  int64_t ops = 0, peak = 0, peakAt = 0, extent = 0, unplaced = 0;
};

struct Rect {
  size_t panel;
  double area;
  std::string text;
};

} // namespace

std::string planSvg(const mlir::tg::PlanReport &report, const PlanSvgOptions &opts) {
  // Panels: the step's functions in their usual order, then any other, in report order.
  std::vector<Panel> panels;
  auto panelFor = [&](const std::string &fn) -> Panel & {
    for (Panel &p : panels)
      if (p.fn == fn)
        return p;
    panels.push_back(Panel{fn, {}, 0, 0, 0, 0, 0});
    return panels.back();
  };
  for (const char *fn : {"micro_step", "optimizer_step", "eval_step"})
    for (const Buffer &b : report.buffers)
      if (b.function == fn) {
        panelFor(fn);
        break;
      }
  for (const Buffer &b : report.buffers)
    panelFor(b.function).bufs.push_back(&b);
  for (Panel &p : panels) {
    for (const Buffer *b : p.bufs) {
      p.ops = std::max(p.ops, b->last + 1);
      if (b->offset >= 0)
        p.extent = std::max(p.extent, b->offset + b->bytes);
      else
        ++p.unplaced;
    }
    p.peak = peakLive(p.bufs, &p.peakAt);
  }

  auto panelY = [&](size_t i) { return kPanelTop + (double)i * (kPanelHeight + kPanelGap + 40); };
  std::vector<double> sx(panels.size()), sy(panels.size()), top(panels.size());
  for (size_t i = 0; i < panels.size(); ++i) {
    const Panel &p = panels[i];
    top[i] = std::max<double>({(double)p.extent, (double)p.peak, 1.0}) * 1.06;
    sx[i] = kPlotWidth / (double)std::max<int64_t>(p.ops, 1);
    sy[i] = kPanelHeight / top[i];
  }

  // Buffer rectangles, each with its on-screen area (for the size cap).
  std::vector<Rect> rects;
  size_t rectBytes = 0;
  for (size_t i = 0; i < panels.size(); ++i) {
    const Panel &p = panels[i];
    double y0 = panelY(i);
    for (const Buffer *b : p.bufs) {
      if (b->offset < 0)
        continue;
      double w = std::max(1.0, (double)(b->last - b->first + 1) * sx[i]);
      double h = std::max(0.5, (double)b->bytes * sy[i]);
      double x = kLeft + (double)b->first * sx[i];
      double y = y0 + kPanelHeight - (double)(b->offset + b->bytes) * sy[i];
      std::string phase = p.fn == "eval_step" ? "eval" : b->phase;
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "<rect class=\"buf " << xml(phase) << "\" x=\"" << num(x) << "\" y=\"" << num(y)
         << "\" width=\"" << num(w) << "\" height=\"" << num(h) << "\"><title>"
         << xml(b->name) << " (" << xml(b->dtype) << ", " << b->bytes << " bytes = "
         << human(b->bytes) << ") ops " << b->first << "–" << b->last << ", offset "
         << b->offset << ", " << xml(phase) << "</title></rect>\n";
      rectBytes += text.size();
      rects.push_back({i, w * h, std::move(text)});
    }
  }
  // Over the size cap: leave out the smallest rectangles on screen.
  std::vector<size_t> skipped(panels.size(), 0);
  std::vector<double> skippedMaxArea(panels.size(), 0);
  const size_t budget = opts.maxBytes > 65536 ? (size_t)opts.maxBytes - 65536 : 0;
  if (rectBytes > budget) {
    std::vector<size_t> order(rects.size());
    for (size_t k = 0; k < order.size(); ++k)
      order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return rects[a].area < rects[b].area; });
    for (size_t k : order) {
      if (rectBytes <= budget)
        break;
      rectBytes -= rects[k].text.size();
      ++skipped[rects[k].panel];
      skippedMaxArea[rects[k].panel] = std::max(skippedMaxArea[rects[k].panel], rects[k].area);
      rects[k].text.clear();
    }
  }

  const double height = panelY(panels.size()) + 80;
  std::string out;
  out.reserve(rectBytes + 65536);
  llvm::raw_string_ostream os(out);
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\""
     << num(height) << "\" viewBox=\"0 0 " << kWidth << " " << num(height)
     << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
     << "<style>\n"
        ".buf{stroke:#fff;stroke-width:0.3;stroke-opacity:0.7}\n"
        ".buf:hover{stroke:#000;stroke-width:1;stroke-opacity:1}\n"
        ".forward{fill:#4e79a7}.backward{fill:#f28e2b}.optimizer{fill:#59a14f}"
        ".eval{fill:#b07aa1}\n"
        ".axis{stroke:#444;stroke-width:1}.grid{stroke:#ddd;stroke-width:1}\n"
        ".peak{stroke:#d62728;stroke-width:1.5;stroke-dasharray:6 4}\n"
        ".extent{stroke:#777;stroke-width:1;stroke-dasharray:2 3}\n"
        ".note{fill:#555}\n"
        "</style>\n"
     << "<rect x=\"0\" y=\"0\" width=\"" << kWidth << "\" height=\"" << num(height)
     << "\" fill=\"#fff\"/>\n"
     << "<text x=\"" << kLeft << "\" y=\"22\" font-size=\"15\" font-weight=\"bold\">"
     << xml(opts.title.empty() ? "tgc memory plan" : opts.title) << "</text>\n";
  // Legend.
  double lx = kLeft;
  for (const char *ph : {"forward", "backward", "optimizer", "eval"}) {
    os << "<rect class=\"legend " << ph << "\" x=\"" << num(lx) << "\" y=\"32\" width=\"12\" "
       << "height=\"12\"/><text x=\"" << num(lx + 16) << "\" y=\"42\">" << ph << "</text>\n";
    lx += 100;
  }
  os << "<text class=\"note\" x=\"" << num(lx + 20) << "\" y=\"42\">x: op index in the "
     << "function; y: byte offset in the arena; hover a buffer for its name</text>\n";

  for (size_t i = 0; i < panels.size(); ++i) {
    const Panel &p = panels[i];
    const double y0 = panelY(i), yb = y0 + kPanelHeight;
    os << "<g class=\"panel\" id=\"" << xml(p.fn) << "\" data-peak-bytes=\"" << p.peak
       << "\" data-extent-bytes=\"" << p.extent << "\" data-buffers=\"" << p.bufs.size()
       << "\" data-drawn=\"" << (p.bufs.size() - p.unplaced - skipped[i]) << "\">\n";
    os << "<text x=\"" << kLeft << "\" y=\"" << num(y0 - 8) << "\" font-size=\"13\" "
       << "font-weight=\"bold\">@" << xml(p.fn) << "</text>"
       << "<text class=\"note\" x=\"" << kLeft + 130 << "\" y=\"" << num(y0 - 8) << "\">"
       << p.ops << " ops, " << p.bufs.size() << " buffers, peak live " << human(p.peak)
       << " (op " << p.peakAt << "), highest offset + size " << human(p.extent) << "</text>\n";
    // Grid and y ticks (bytes, in the unit of the panel's top).
    const double range = top[i];
    const double unit = range >= (1LL << 30) ? (double)(1LL << 30)
                        : range >= (1LL << 20) ? (double)(1 << 20)
                        : range >= 1024        ? 1024.0
                                               : 1.0;
    const char *unitName = unit == (1LL << 30) ? "GiB" : unit == (1 << 20) ? "MiB"
                           : unit == 1024      ? "KiB" : "B";
    const double ystep = niceStep(range / unit, 5);
    for (double v = 0; v * unit <= range; v += ystep) {
      double y = yb - v * unit * sy[i];
      os << "<line class=\"grid\" x1=\"" << kLeft << "\" x2=\"" << kLeft + kPlotWidth
         << "\" y1=\"" << num(y) << "\" y2=\"" << num(y) << "\"/><text x=\"" << kLeft - 6
         << "\" y=\"" << num(y + 4) << "\" text-anchor=\"end\">" << llvm::format("%g", v)
         << " " << unitName << "</text>\n";
    }
    const double xstep = std::max(1.0, std::round(niceStep((double)p.ops, 10)));
    for (double v = 0; v <= (double)p.ops; v += xstep) {
      double x = kLeft + v * sx[i];
      os << "<line class=\"axis\" x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\""
         << num(yb) << "\" y2=\"" << num(yb + 4) << "\"/><text x=\"" << num(x) << "\" y=\""
         << num(yb + 16) << "\" text-anchor=\"middle\">" << (int64_t)v << "</text>\n";
    }
    os << "<line class=\"axis\" x1=\"" << kLeft << "\" x2=\"" << kLeft + kPlotWidth
       << "\" y1=\"" << num(yb) << "\" y2=\"" << num(yb) << "\"/>"
       << "<line class=\"axis\" x1=\"" << kLeft << "\" x2=\"" << kLeft << "\" y1=\""
       << num(y0) << "\" y2=\"" << num(yb) << "\"/>\n";
    for (const Rect &r : rects)
      if (r.panel == i && !r.text.empty())
        os << r.text;
    double ye = yb - (double)p.extent * sy[i];
    os << "<line class=\"extent\" x1=\"" << kLeft << "\" x2=\"" << kLeft + kPlotWidth
       << "\" y1=\"" << num(ye) << "\" y2=\"" << num(ye) << "\"/>\n";
    double yp = yb - (double)p.peak * sy[i];
    os << "<line class=\"peak\" data-bytes=\"" << p.peak << "\" x1=\"" << kLeft << "\" x2=\""
       << kLeft + kPlotWidth << "\" y1=\"" << num(yp) << "\" y2=\"" << num(yp) << "\"/>"
       << "<text x=\"" << kLeft + kPlotWidth - 4 << "\" y=\"" << num(yp - 4)
       << "\" text-anchor=\"end\" fill=\"#d62728\">peak " << human(p.peak) << "</text>\n";
    std::string notes;
    if (skipped[i])
      notes += std::to_string(skipped[i]) + " buffers smaller than " +
               llvm::formatv("{0:f2}", skippedMaxArea[i]).str() +
               " px² on screen not drawn (file size cap); the peak counts them. ";
    if (p.unplaced)
      notes += std::to_string(p.unplaced) + " buffers without an offset not drawn. ";
    if (!notes.empty())
      os << "<text class=\"note\" x=\"" << kLeft << "\" y=\"" << num(yb + 32) << "\">"
         << xml(notes) << "</text>\n";
    os << "</g>\n";
  }

  // Caption: the regions.
  const double yc = panelY(panels.size()) + 4;
  os << "<text class=\"caption\" x=\"" << kLeft << "\" y=\"" << num(yc) << "\">"
     << "persistent region " << human(report.persistentBytes) << " (parameters "
     << human(report.paramBytes) << ", gradients " << human(report.gradBytes)
     << ", optimizer state " << human(report.optimizerStateBytes) << ", tokens and targets "
     << human(report.inputBytes) << ")</text>\n";
  os << "<text class=\"caption\" x=\"" << kLeft << "\" y=\"" << num(yc + 18) << "\">"
     << "workspace " << human(report.workspaceBytes) << " · arena " << human(report.arenaBytes) << " (shared by the functions; lower bound "
     << human(report.lowerBound) << ") · total " << human(report.totalBytes()) << "</text>\n";
  os << "<text class=\"note\" x=\"" << kLeft << "\" y=\"" << num(yc + 36) << "\">"
     << "Only the arena is drawn; dashed red: the largest sum of bytes live at one op; "
     << "dotted grey: the highest offset + size the function uses. Heuristic: "
     << xml(report.heuristic) << "; precision " << xml(mlir::tg::stringifyPrecision(report.precision).str())
     << "; checkpointing " << xml(report.rematPolicy) << ".</text>\n";
  os << "</svg>\n";
  return out;
}

} // namespace tgc
