#!/usr/bin/env python3
"""Report stage of `tgc experiment`: DIR/results.md and DIR/plots/*.{png,svg}.

  python3 tools/experiment/report.py DIR

Reads DIR/experiment.json, DIR/configs/<safe>/config.json and DIR/results.jsonl (the
contract is in docs/experiments.md) and writes

  DIR/results.md        one row per (configuration, system) with memory, speed, MFU and
                        perplexity, and a table of the largest micro-batches
  DIR/plots/memory.*    per-phase peak memory (forward / backward / optimizer): tgc planned
                        vs PyTorch measured, grouped bars per configuration
  DIR/plots/step_time.* ms per optimizer step per configuration and system
  DIR/plots/max_batch.* tgc's planned largest micro-batch vs PyTorch's trial maximum
  DIR/plots/loss.*      validation loss (periodic and final evals) and training loss
                        against training time, one line per (configuration, system)

For each (configuration, system) the last line of results.jsonl counts. Missing data
(a crashed run, no PyTorch rows, matplotlib absent) leaves cells empty or a plot out; it
never stops the report. Python 3.11 stdlib + numpy + matplotlib (Agg backend) only.
"""
import json
import math
import os
import re
import sys

GIB = float(1 << 30)
SYSTEMS = ("tgc", "pytorch")
# A step time that rests on fewer timed steps after the first (warm-up) step than this is
# marked indicative: a trailing '*' on ms/step, speed-up, tokens/s and MFU, and a footnote.
TIMING_MIN_STEPS = 3
INDICATIVE_NOTE = ("\\* fewer than %d timed steps after the warm-up step: indicative only "
                   "(ms/step, speed-up, tokens/s and MFU of that row)" % TIMING_MIN_STEPS)


class ExperimentError(Exception):
    """A broken experiment directory (missing or malformed experiment.json)."""


def safe_name(name):
    """The directory name of configuration `name`: characters outside [A-Za-z0-9._=,+-]
    replaced by '_' (the rule `tgc experiment` uses for DIR/configs/<safe-name>)."""
    return re.sub(r"[^A-Za-z0-9._=,+-]", "_", name)


def load_experiment(root):
    """DIR/experiment.json as a dict. Raises ExperimentError (with the path) when it is
    missing, not JSON, or lacks a "configs" list of names."""
    path = os.path.join(root, "experiment.json")
    if not os.path.isdir(root):
        raise ExperimentError("%s: no such directory (run `tgc experiment MATRIX --out DIR` "
                              "first)" % root)
    if not os.path.isfile(path):
        raise ExperimentError("%s: missing; DIR must be the --out directory of "
                              "`tgc experiment`" % path)
    try:
        with open(path) as f:
            exp = json.load(f)
    except (OSError, ValueError) as e:
        raise ExperimentError("%s: cannot read: %s" % (path, e))
    if not isinstance(exp, dict):
        raise ExperimentError("%s: expected a JSON object" % path)
    configs = exp.get("configs")
    if not isinstance(configs, list) or not all(isinstance(c, str) for c in configs):
        raise ExperimentError('%s: "configs" must be a list of configuration names' % path)
    return exp


def load_config(root, name):
    """DIR/configs/<safe>/config.json of configuration `name` as a dict, or a stand-in
    {"name", "status": "error", "reason"} when it is missing or malformed."""
    path = os.path.join(root, "configs", safe_name(name), "config.json")
    try:
        with open(path) as f:
            cfg = json.load(f)
        if not isinstance(cfg, dict):
            raise ValueError("expected a JSON object")
    except (OSError, ValueError) as e:
        return {"name": name, "status": "error", "reason": "%s: cannot read: %s" % (path, e)}
    cfg.setdefault("name", name)
    return cfg


def read_results(root):
    """The records of DIR/results.jsonl in file order (an absent file: none). Lines that
    are not JSON objects are skipped with a warning on stderr."""
    path = os.path.join(root, "results.jsonl")
    out = []
    if not os.path.isfile(path):
        return out
    with open(path) as f:
        for i, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            if not isinstance(rec, dict):
                print("report: warning: %s:%d: not a JSON object; ignored" % (path, i),
                      file=sys.stderr)
                continue
            out.append(rec)
    return out


def latest_results(records):
    """{(config, system): the last record for it}."""
    last = {}
    for rec in records:
        last[(rec.get("config"), rec.get("system"))] = rec
    return last


# ---------------------------------------------------------------------------- timing

def steps_after_warmup(n):
    """How many of a run's `n` step times after the first (warm-up) step its ms/step rests
    on, by the runners' rule (tools/experiment/run.py, bench/torch_train.py): the median of
    the steps after the first 2, or of all of them when there are fewer than 3 (the warm-up
    step included, which does not count here)."""
    return n - 2 if n > 2 else max(0, n - 1)


def timing_steps(rec):
    """The record's "timing_steps", else steps_after_warmup of its "steps"; None when the
    record has neither."""
    for key, conv in (("timing_steps", int), ("steps", steps_after_warmup)):
        v = rec.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            return v if key == "timing_steps" else conv(v)
    return None


def indicative(rec):
    """True when the row has a step time and it rests on fewer than TIMING_MIN_STEPS timed
    steps after the warm-up step (e.g. the 1-2 steps of a run at the largest batch)."""
    t = timing_steps(rec)
    return num(rec.get("ms_per_step")) is not None and t is not None and t < TIMING_MIN_STEPS


# ---------------------------------------------------------------------------- formatting

def num(x):
    """x as a float when it is a finite number, else None."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def fmt_gib(b):
    v = num(b)
    return "" if v is None else "%.3g" % (v / GIB)


def fmt(x, spec):
    v = num(x)
    return "" if v is None else spec % v


def marked_fmt(x, spec, mark):
    """fmt(x, spec) with `mark` appended when there is a number to mark."""
    text = fmt(x, spec)
    return text + mark if text else ""


def cell(text):
    """Markdown-safe table cell text (pipes escaped, one line)."""
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def short_reason(reason, limit=100):
    if not reason:
        return ""
    r = " ".join(str(reason).split())
    return r if len(r) <= limit else r[:limit - 3] + "..."


def attention_text(cfg):
    kernel = cfg.get("attention_kernel") or ""
    window = cfg.get("window") or 0
    return "%s (window %s)" % (kernel, window) if kernel and window else kernel


def batch_text(rec, cfg):
    batch = rec.get("batch", cfg.get("batch"))
    text = "" if batch is None else str(batch)
    if cfg.get("batch_request") == "max":
        text = (text + " (max)").strip()
    return text


PHASE_KEYS = ("peak_forward_bytes", "peak_backward_bytes", "peak_optimizer_bytes")


def planned_phase_peaks(plan):
    """{peak_<phase>_bytes: bytes} of a tgc plan (config.json "plan") as device bytes in use
    at the phase's peak: persistent (parameters, gradients, AdamW moments, inputs) +
    workspace + the phase's peak of live arena bytes (the plan's peak_* fields count the
    arena only). Comparable with PyTorch's max_memory_allocated per phase, which counts
    parameters, gradients and optimizer state too. None where the plan lacks a field."""
    plan = plan or {}
    base = [num(plan.get("persistent_bytes")), num(plan.get("workspace_bytes")) or 0.0]
    out = {}
    for key in PHASE_KEYS:
        arena = num(plan.get(key))
        out[key] = None if arena is None or base[0] is None else int(base[0] + base[1] + arena)
    return out


def peaks(rec, cfg):
    """(forward, backward, optimizer) peak bytes of a row: its own fields, for tgc falling
    back to the plan in config.json."""
    planned = planned_phase_peaks(cfg.get("plan")) if rec.get("system") == "tgc" else {}
    out = []
    for key in PHASE_KEYS:
        v = rec.get(key)
        if v is None:
            v = planned.get(key)
        out.append(num(v))
    return tuple(out)


def rows_in_order(exp, configs, last):
    """[(name, cfg, system, record)] in experiment order, tgc before pytorch."""
    rows = []
    for name in exp["configs"]:
        for system in SYSTEMS:
            rec = last.get((name, system))
            if rec is not None:
                rows.append((name, configs[name], system, rec))
    return rows


def write_markdown(root, exp, configs, last, rows, plots):
    """Writes DIR/results.md; returns its path."""
    # The speed-up baseline per system: the first row with a time that is not indicative
    # (else the first with a time).
    base_ms = {}
    for want_solid in (True, False):
        for name, cfg, system, rec in rows:
            ms = num(rec.get("ms_per_step"))
            if ms and system not in base_ms and (not want_solid or not indicative(rec)):
                base_ms[system] = (name, ms, indicative(rec))

    budget = dict(exp.get("budget") or {})
    if num(budget.get("minutes")) and budget["minutes"] > 0:
        budget.pop("steps", None)  # a time budget replaces the step count (run.py)
    lines = ["# Experiment %s" % exp.get("name", "?"), ""]
    meta = [("matrix", exp.get("matrix_file")), ("spec", exp.get("spec_file")),
            ("data", exp.get("data")), ("target", exp.get("target")),
            ("device", ", ".join(sorted({str(rec.get("device")) for _, _, _, rec in rows
                                         if rec.get("device")})) or None),
            ("memory for max micro-batches", fmt_gib(exp.get("memory_bytes")) + " GiB"
             if num(exp.get("memory_bytes")) else None),
            ("context reserve beside each plan (counted against that memory)",
             fmt_gib(exp.get("context_bytes")) + " GiB"
             if num(exp.get("context_bytes")) else None),
            ("budget", ", ".join("%s %s" % (k, v) for k, v in budget.items()) or None)]
    for key, val in meta:
        if val:
            lines.append("- %s: %s" % (key, cell(val)))
    lines.append("")
    lines.append("## Runs")
    lines.append("")
    header = ["config", "system", "micro-batch", "precision", "attention", "checkpointing",
              "grad_accum", "planned GiB", "measured GiB", "fwd GiB", "bwd GiB", "opt GiB",
              "ms/step", "speed-up", "tokens/s", "MFU", "pred ms", "pred err", "val ppl",
              "test ppl", "status"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join(["---"] * 2 + ["---:"] + ["---"] * 3 + ["---:"] * 14 + ["---"])
                 + "|")
    marked = False
    for name, cfg, system, rec in rows:
        ms = num(rec.get("ms_per_step"))
        star = "*" if indicative(rec) else ""
        marked = marked or bool(star)
        speed = ""
        if ms and system in base_ms:
            speed = "%.2fx" % (base_ms[system][1] / ms)
            speed += "*" if star or base_ms[system][2] else ""
            marked = marked or speed.endswith("*")
        planned = rec.get("planned_bytes")
        if planned is None and system == "tgc":
            planned = (cfg.get("plan") or {}).get("total_bytes")
        fwd, bwd, opt = peaks(rec, cfg)
        # The cost model's prediction (tgc rows; config.json "predicted") and its error
        # against the measured time: (predicted - measured) / measured.
        pred = num((cfg.get("predicted") or {}).get("step_ms")) if system == "tgc" else None
        pred_text = "%.1f" % pred if pred else ""
        pred_err = "%+.1f%%" % (100.0 * (pred - ms) / ms) + star if pred and ms else ""
        mfu = num(rec.get("mfu"))
        status = rec.get("status", "?")
        if rec.get("reason"):
            status += ": " + short_reason(rec.get("reason"))
        cells = [name, system, batch_text(rec, cfg), cfg.get("precision", ""),
                 attention_text(cfg), cfg.get("checkpointing", ""),
                 rec.get("grad_accum", cfg.get("grad_accum", "")),
                 fmt_gib(planned) if system == "tgc" else "", fmt_gib(rec.get("used_bytes")),
                 fmt_gib(fwd), fmt_gib(bwd), fmt_gib(opt), marked_fmt(ms, "%.1f", star),
                 speed, marked_fmt(rec.get("tokens_per_s"), "%.0f", star),
                 "" if mfu is None else "%.1f%%" % (100 * mfu) + star,
                 pred_text, pred_err,
                 fmt(rec.get("val_ppl"), "%.2f"), fmt(rec.get("test_ppl"), "%.2f"), status]
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    if not rows:
        lines.append("| (no results yet) |" + " |" * (len(header) - 1))
    lines.append("")
    if marked:
        lines.append(INDICATIVE_NOTE)
        lines.append("")
    if base_ms:
        lines.append("Speed-up: the baseline's ms/step over this row's, per system; the "
                     "baseline is the first configuration whose time rests on at least %d "
                     "timed steps, else the first with a time (%s)."
                     % (TIMING_MIN_STEPS, ", ".join("%s: %s%s" % (s, n, "*" if ind else "")
                                                    for s, (n, _, ind) in base_ms.items())))
    lines.append("planned GiB: tgc's static plan (persistent + arena + workspace); measured "
                 "GiB: device memory the process took (tgc: the runtime's cudaMemGetInfo "
                 "difference; PyTorch: peak reserved); fwd/bwd/opt: bytes in use at the peak of "
                 "each phase, planned for tgc (persistent + workspace + the phase's arena "
                 "peak), torch.cuda.max_memory_allocated for PyTorch (parameters, gradients "
                 "and optimizer state included in both). ms/step: median over "
                 "the steps after the first two (over all steps when a run has fewer than 3, "
                 "the warm-up step included). MFU: planned FLOPs of a step (no recompute) "
                 "per second over the GPU's dense peak for the precision (tools/experiment/"
                 "run.py PEAK_FLOPS); empty on the CPU or an unknown GPU. pred ms: tgc's "
                 "cost model's step time, predicted before the run from the plan's runtime "
                 "calls and a calibration table (docs/cost-model.md; config.json "
                 "\"predicted\" names the table); pred err: (predicted - measured) / "
                 "measured.")
    lines.append("")

    max_rows = []
    for name in exp["configs"]:
        cfg = configs[name]
        mb = cfg.get("max_batch") or None
        torch_rec = last.get((name, "pytorch"))
        torch_max = None
        if torch_rec is not None:
            tmb = torch_rec.get("max_batch")
            if isinstance(tmb, dict):
                torch_max = tmb.get("max", tmb.get("batch"))
            elif isinstance(tmb, int):
                torch_max = tmb
        if not mb and cfg.get("batch_request") != "max" and torch_max is None:
            continue
        mb = mb if isinstance(mb, dict) else {}
        tgc_rec = last.get((name, "tgc"))
        fit = ""
        if cfg.get("batch_request") == "max" and tgc_rec is not None:
            st = tgc_rec.get("status")
            fit = "yes" if st == "ok" else "no (%s)" % st
        mem = mb.get("memory_bytes", exp.get("memory_bytes"))
        max_rows.append([name, mb.get("max", ""), fmt_gib(mb.get("plan_at_max_bytes")),
                         fmt_gib(mb.get("plan_at_max_plus_1_bytes")), fmt_gib(mem), fit,
                         "" if torch_max is None else torch_max])
    if max_rows:
        lines += ["## Largest micro-batch", "",
                  "| config | tgc planned max | plan(max) GiB | plan(max+1) GiB | memory GiB | "
                  "tgc run at max fit | PyTorch trial max |",
                  "|---|---:|---:|---:|---:|---|---:|"]
        for r in max_rows:
            lines.append("| " + " | ".join(cell(c) for c in r) + " |")
        lines += ["", "tgc's max is read off the static plan before anything runs (the largest "
                  "micro-batch whose plan fits the memory); PyTorch's is found by "
                  "doubling-then-bisecting trial runs until out-of-memory.", ""]

    if plots:
        lines += ["## Plots", ""]
        for title, rel in plots:
            lines.append("![%s](%s)" % (title, rel))
            lines.append("")
    path = os.path.join(root, "results.md")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    os.replace(tmp, path)
    return path


# ---------------------------------------------------------------------------- plots

def _save(fig, plots_dir, stem, written):
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(plots_dir, stem + "." + ext), dpi=110, bbox_inches="tight")
    written.append(stem)


def make_plots(root, exp, configs, rows):
    """Draws the four plots into DIR/plots; returns [(title, relative png path)]. Each plot
    is skipped when it has no data; matplotlib missing or failing only warns."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        matplotlib.rcParams["svg.fonttype"] = "none"
        matplotlib.rcParams["svg.hashsalt"] = "tgc-experiment"
        import matplotlib.pyplot as plt
        import numpy as np
    except Exception as e:  # noqa: BLE001 - any import failure only skips the plots
        print("report: warning: no plots (%s)" % e, file=sys.stderr)
        return []
    plots_dir = os.path.join(root, "plots")
    os.makedirs(plots_dir, exist_ok=True)
    names = list(exp["configs"])
    by = {(n, s): r for n, _, s, r in rows}
    titles = {"memory": "Peak memory per phase", "step_time": "Time per step",
              "max_batch": "Largest micro-batch", "loss": "Validation loss vs training time"}
    written = []
    plotters = [("memory", _plot_memory), ("step_time", _plot_step_time),
                ("max_batch", _plot_max_batch), ("loss", _plot_loss)]
    for stem, fn in plotters:
        try:
            fig = fn(plt, np, names, configs, by, titles[stem])
            if fig is not None:
                _save(fig, plots_dir, stem, written)
                plt.close(fig)
        except Exception as e:  # noqa: BLE001 - one bad plot must not stop the report
            print("report: warning: plot %s skipped: %s: %s" % (stem, type(e).__name__, e),
                  file=sys.stderr)
            plt.close("all")
    return [(titles[s], "plots/%s.png" % s) for s in written]


def _figure(plt, n_groups):
    return plt.subplots(figsize=(max(6.0, 1.3 * n_groups + 2.0), 4.2))


def _plot_memory(plt, np, names, configs, by, title):
    phases = ("forward", "backward", "optimizer")
    series = []  # (label, values per config, hatch, color index)
    for system, what in (("tgc", "planned"), ("pytorch", "measured")):
        vals = {n: peaks(by[(n, system)], configs[n]) for n in names if (n, system) in by}
        if system == "tgc":
            for n in names:  # refused / not yet run configurations still have a plan
                if n not in vals and configs[n].get("plan"):
                    vals[n] = peaks({"system": "tgc"}, configs[n])
        for i, ph in enumerate(phases):
            col = [vals.get(n, (None,) * 3)[i] for n in names]
            if any(v is not None for v in col):
                series.append(("%s %s %s" % (system, what, ph), col, system, i))
    if not series:
        return None
    fig, ax = _figure(plt, len(names))
    x = np.arange(len(names))
    width = 0.8 / len(series)
    colors = ("#4C72B0", "#DD8452", "#55A868")
    top = max(v for _, col, _, _ in series for v in col if v is not None)
    unit, scale = ("GiB", GIB) if top >= 0.5 * GIB else ("MiB", float(1 << 20))
    for k, (label, col, system, i) in enumerate(series):
        ys = [np.nan if v is None else v / scale for v in col]
        ax.bar(x - 0.4 + width * (k + 0.5), ys, width, label=label, color=colors[i],
               hatch="//" if system == "pytorch" else None,
               edgecolor="black" if system == "pytorch" else colors[i], linewidth=0.5)
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set_ylabel(unit)
    ax.set_title(title + " (tgc planned, PyTorch measured)")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def _bars_by_system(plt, np, names, values, ylabel, title, fmt_label, marked=()):
    """Grouped bars per configuration, one per system, each labelled with its value (and a
    trailing '*' when its (name, system) is in `marked`)."""
    systems = [s for s in SYSTEMS if any(values.get((n, s)) is not None for n in names)]
    if not systems:
        return None
    fig, ax = _figure(plt, len(names))
    x = np.arange(len(names))
    width = 0.8 / len(systems)
    for k, s in enumerate(systems):
        ys = [values.get((n, s)) for n in names]
        bars = ax.bar(x - 0.4 + width * (k + 0.5), [np.nan if y is None else y for y in ys],
                      width, label=s)
        for n, b, y in zip(names, bars, ys):
            if y is not None:
                label = fmt_label % y + ("*" if (n, s) in marked else "")
                ax.annotate(label, (b.get_x() + b.get_width() / 2, y), ha="center",
                            va="bottom", fontsize="x-small")
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def _plot_step_time(plt, np, names, configs, by, title):
    values = {k: num(r.get("ms_per_step")) for k, r in by.items()}
    marked = {k for k, r in by.items() if indicative(r)}
    note = ("; * fewer than %d timed steps: indicative" % TIMING_MIN_STEPS) if marked else ""
    return _bars_by_system(plt, np, names, values, "ms per optimizer step",
                           title + " (median after the first 2 steps%s)" % note, "%.1f",
                           marked)


def _plot_max_batch(plt, np, names, configs, by, title):
    values = {}
    for n in names:
        mb = configs[n].get("max_batch")
        if isinstance(mb, dict) and num(mb.get("max")) is not None:
            values[(n, "tgc")] = num(mb.get("max"))
        rec = by.get((n, "pytorch"))
        if rec is not None:
            tmb = rec.get("max_batch")
            v = tmb.get("max", tmb.get("batch")) if isinstance(tmb, dict) else tmb
            if num(v) is not None:
                values[(n, "pytorch")] = num(v)
    return _bars_by_system(plt, np, names, values, "micro-batch",
                           title + " (tgc: planned; PyTorch: OOM trials)", "%.0f")


def _smooth(ys, n):
    """Trailing moving average over n points (n <= 1: ys unchanged)."""
    if n <= 1:
        return ys
    out, acc = [], 0.0
    for i, y in enumerate(ys):
        acc += y
        if i >= n:
            acc -= ys[i - n]
        out.append(acc / min(i + 1, n))
    return out


def _plot_loss(plt, np, names, configs, by, title):
    """Left: validation loss against training time (tgc's periodic evals with
    budget.eval_every > 0, and each run's final eval); right: the training loss (moving
    average over ~2% of the steps). One line per (configuration, system)."""
    val, train = [], []
    for n in names:
        for s in SYSTEMS:
            rec = by.get((n, s))
            if rec is None:
                continue
            label = "%s (%s)" % (n, s)
            vpts = _points(rec.get("val_curve"))
            cpts = _points(rec.get("curve"))
            if not vpts and num(rec.get("val_loss")) is not None and cpts:
                vpts = [(cpts[-1][0], num(rec.get("val_loss")), cpts[-1][2])]
            if vpts:
                val.append((label, s, vpts))
            if len(cpts) >= 2:
                train.append((label, s, cpts))
    if not val and not train:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, series, what in ((axes[0], val, "validation"), (axes[1], train, "training")):
        for label, s, pts in series:
            ys = [p[1] for p in pts]
            if what == "training":
                ys = _smooth(ys, max(1, len(ys) // 50))
            ax.plot([p[2] for p in pts], ys, "-" if s == "tgc" else "--", label=label,
                    marker="o" if len(pts) <= 30 else None, markersize=3)
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("%s loss" % what)
        ax.grid(alpha=0.3)
        if series:
            ax.legend(fontsize="x-small", ncol=2 if len(series) > 8 else 1)
        else:
            ax.text(0.5, 0.5, "no %s losses" % what, ha="center", va="center",
                    transform=ax.transAxes)
    axes[0].set_title(title)
    axes[1].set_title("Training loss vs training time (moving average)")
    fig.tight_layout()
    return fig


def _points(curve):
    """[[step, loss, elapsed_s], ...] with finite numbers only."""
    out = []
    if isinstance(curve, list):
        for p in curve:
            if isinstance(p, (list, tuple)) and len(p) >= 3 and all(num(v) is not None
                                                                  for v in p[:3]):
                out.append((float(p[0]), float(p[1]), float(p[2])))
    return out


# ---------------------------------------------------------------------------- entry

def write_report(root, exp=None):
    """Writes DIR/results.md and DIR/plots/*; returns the path of results.md. Raises
    ExperimentError on a broken DIR; missing results only leave cells or plots out."""
    if exp is None:
        exp = load_experiment(root)
    configs = {n: load_config(root, n) for n in exp["configs"]}
    last = latest_results(read_results(root))
    rows = rows_in_order(exp, configs, last)
    plots = make_plots(root, exp, configs, rows)
    return write_markdown(root, exp, configs, last, rows, plots)


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print("usage: report.py DIR   (DIR: the --out directory of `tgc experiment`)",
              file=sys.stderr)
        return 2
    try:
        path = write_report(argv[1])
    except ExperimentError as e:
        print("report: error: %s" % e, file=sys.stderr)
        return 1
    print("report: wrote %s" % path, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
