#!/usr/bin/env python3
"""Run-and-report stage of `tgc experiment`.

  python3 tools/experiment/run.py DIR [--only a,b] [--skip a,b] [--report-only]
                                      [--no-pytorch] [--timeout SEC] [--python PATH]
                                      [--torch-runner FILE.py]

DIR is the --out directory that `tgc experiment` filled (experiment.json and
configs/<safe-name>/{config.json,spec.json,train}; the contract is in docs/experiments.md).
For every selected configuration, in experiment.json order, this runs the compiled
executable (system "tgc") and, when the experiment and the configuration ask for it,
bench/torch_train.py on the same effective spec (system "pytorch"), and appends one line
per finished run to DIR/results.jsonl. A run already recorded there (status ok, error, oom
or crashed, same configuration hash) is not run again; results are only ever appended.
Configurations that `tgc experiment` refused or could not compile get one line with that
status. A crash, a non-zero exit or a refusal of one run is recorded with its reason (the
last lines of its log) and the others go on. At the end (alone with --report-only) it
writes DIR/results.md and DIR/plots (tools/experiment/report.py).

Exit status: 0 when every selected configuration has a tgc result line (whatever its
status), 1 on a broken DIR (no experiment.json, no data directory) or when some have none
(interrupted), 2 on bad arguments.

Python 3.11 stdlib (+ numpy and matplotlib for the plots).
"""
import argparse
import codecs
import datetime
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (tools/experiment/report.py)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TORCH_RUNNER = os.path.join(REPO_ROOT, "bench", "torch_train.py")

# Dense (no sparsity) peak tensor / CUDA-core throughput in FLOP/s by GPU and arithmetic.
# Source: NVIDIA H100 Tensor Core GPU datasheet (H100 SXM: FP32 67 TF, TF32 989 TF and
# BF16/FP16 1979 TF "with sparsity", i.e. 494.7 / 989.4 dense; H100 PCIe: 51 / 378 / 756
# dense), NVIDIA H200 datasheet (H200 SXM: the H100 SXM figures), NVIDIA A100 datasheet
# (19.5 / 156 / 312 dense). The first key contained in the GPU name (case-insensitive)
# wins, so the more specific names come first.
PEAK_FLOPS = [
    ("H100 PCIe", {"fp32": 51.2e12, "tf32": 378.0e12, "16bit": 756.0e12}),
    ("H100", {"fp32": 66.9e12, "tf32": 494.7e12, "16bit": 989.4e12}),
    ("H200", {"fp32": 66.9e12, "tf32": 494.7e12, "16bit": 989.4e12}),
    ("A100", {"fp32": 19.5e12, "tf32": 156.0e12, "16bit": 312.0e12}),
]

# A tgc line with one of these ends the configuration's tgc run for good; "refused" (the plan
# did not fit the free device memory at that moment) is tried again. The PyTorch runner's
# "refused" (a request it cannot serve, e.g. --batch max on the CPU) also counts as done.
DONE_STATUSES = ("ok", "error", "oom", "crashed")
LOG_TAIL_LINES = 6
CURVE_POINTS = 1000

# Messages that mean "the plan does not fit the device" (runtime/cuda/Context.cu, tgc).
REFUSAL_RE = re.compile(r"does not fit|but only \d+ bytes are free|plan exceeds", re.I)
OOM_RE = re.compile(r"out of memory|CUDA_ERROR_OUT_OF_MEMORY|OutOfMemoryError", re.I)
USED_RE = re.compile(r"tgrt: cuda memory on .*?: plan (\d+) bytes .*?device memory used "
                     r"(-?\d+) bytes; overhead (-?\d+) bytes")
PROGRESS_RE = re.compile(r"\bstep (\d+)/(\d+)\b")


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def human_duration(s):
    """'1h02m', '3m05s' or '12s' for s seconds."""
    s = max(0, int(round(s)))
    if s >= 3600:
        return "%dh%02dm" % (s // 3600, (s // 60) % 60)
    if s >= 60:
        return "%dm%02ds" % (s // 60, s % 60)
    return "%ds" % s


def gpu_name():
    """Name of GPU 0 from nvidia-smi, or None (no driver, no GPU)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    names = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]
    return names[0] if out.returncode == 0 and names else None


def peak_flops(gpu, precision, tf32=False):
    """Dense peak FLOP/s of `gpu` (a name from nvidia-smi) for a run at `precision` (a spec
    training.precision); tf32: fp32 GEMMs on the TF32 tensor cores. None for an unknown GPU
    or no GPU."""
    if not gpu:
        return None
    kind = "fp32"
    if precision in ("bf16-mixed", "fp16-mixed", "bf16", "fp16"):
        kind = "16bit"
    elif tf32:
        kind = "tf32"
    for key, table in PEAK_FLOPS:
        if key.lower() in gpu.lower():
            return table[kind]
    return None


def mfu(cfg, ms_per_step, gpu, tf32=False):
    """Model FLOPs utilisation: the planned FLOPs of one micro-step (without recompute) x
    grad_accum per second of a step, over the GPU's dense peak. None when unknown."""
    flops = (cfg.get("plan") or {}).get("step_flops")
    peak = peak_flops(gpu, cfg.get("precision"), tf32)
    if not flops or not peak or not ms_per_step:
        return None
    return flops * max(1, int(cfg.get("grad_accum") or 1)) / (ms_per_step / 1000.0) / peak


# ---------------------------------------------------------------------------- run.jsonl

def thin(points, limit=CURVE_POINTS):
    """At most `limit` evenly spaced points, the first and the last kept."""
    if len(points) <= limit:
        return points
    idx = sorted({round(i * (len(points) - 1) / (limit - 1)) for i in range(limit)})
    return [points[i] for i in idx]


def summarize_log(path, tokens_per_step):
    """Reads an executable's --log FILE.jsonl. Returns a dict with steps, ms_per_step
    (median of the step times after the first 2; all of them when there are fewer than 3),
    timing_steps (how many of those come after the first, warm-up, step) and
    timing_indicative (timing_steps < report.TIMING_MIN_STEPS: the report marks the row's
    times), tokens_per_s, curve [[step, loss, elapsed_s]] (elapsed: sum of step times), val_curve
    (every val eval at its step's elapsed time), val/test loss and ppl (final evals, else
    the last ones). Missing file or malformed lines: what could be read."""
    steps, evals = [], []
    try:
        with open(path) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(rec, dict):
                    continue
                if "eval" in rec:
                    evals.append(rec)
                elif isinstance(rec.get("step"), int):
                    steps.append(rec)
    except OSError:
        pass
    out = {"steps": len(steps), "ms_per_step": None, "timing_steps": 0,
           "timing_indicative": None, "tokens_per_s": None, "curve": [],
           "val_curve": [], "val_loss": None, "val_ppl": None, "test_loss": None,
           "test_ppl": None}
    ms = [report.num(r.get("ms")) for r in steps]
    ms = [m for m in ms if m is not None]
    if ms:
        timed = ms[2:] if len(ms) > 2 else ms
        out["ms_per_step"] = statistics.median(timed)
        out["timing_steps"] = report.steps_after_warmup(len(ms))
        out["timing_indicative"] = out["timing_steps"] < report.TIMING_MIN_STEPS
        if tokens_per_step:
            out["tokens_per_s"] = tokens_per_step * 1000.0 / out["ms_per_step"]
    elapsed, at_step, curve = 0.0, {}, []
    for r in steps:
        elapsed += (report.num(r.get("ms")) or 0.0) / 1000.0
        at_step[r["step"]] = elapsed
        curve.append([r["step"], report.num(r.get("loss")), round(elapsed, 4)])
    out["curve"] = thin(curve)
    for split in ("val", "test"):
        recs = [e for e in evals if e.get("eval") == split]
        final = [e for e in recs if e.get("final")] or recs
        if final:
            out[split + "_loss"] = report.num(final[-1].get("loss"))
            out[split + "_ppl"] = report.num(final[-1].get("ppl"))
    out["val_curve"] = [[e.get("step"), report.num(e.get("loss")),
                         round(at_step.get(e.get("step"), elapsed), 4)]
                        for e in evals if e.get("eval") == "val"]
    return out


# ---------------------------------------------------------------------------- processes

class Progress:
    """The one-line progress report on stderr: `[tgc 3/12] name  step 40/60  ETA 1m10s`.
    The ETA covers the whole experiment: the rest of this run from its step rate (or the
    mean run time so far) plus the mean run time for each run still queued."""

    def __init__(self, total):
        self.total = total
        self.index = 0
        self.durations = []
        self.tty = sys.stderr.isatty()
        self.last_text = ""
        self.last_print = 0.0
        self.lock = threading.Lock()  # show() runs on the main and the log-reader thread

    def start(self, system, name):
        self.index += 1
        self.system, self.name = system, name
        self.t0 = time.monotonic()
        self.step = self.steps = None
        self.show(force=True)

    def update(self, step, steps):
        self.step, self.steps = step, steps
        self.show()

    def eta(self):
        elapsed = time.monotonic() - self.t0
        mean = statistics.mean(self.durations) if self.durations else None
        if self.step and self.steps and self.step <= self.steps:
            rest = elapsed / self.step * (self.steps - self.step)
        elif mean is not None:
            rest = max(0.0, mean - elapsed)
        else:
            return None
        queued = self.total - self.index
        if queued and mean is None:
            mean = elapsed + rest
        return rest + queued * (mean or 0.0)

    def show(self, force=False):
        with self.lock:
            self._show(force)

    def _show(self, force):
        text = "[%s %d/%d] %s" % (self.system, self.index, self.total, self.name)
        if self.step is not None:
            text += "  step %d/%d" % (self.step, self.steps)
        eta = self.eta()
        if eta is not None:
            text += "  ETA %s" % human_duration(eta)
        t = time.monotonic()
        if self.tty:
            sys.stderr.write("\r" + text + "\x1b[K")
            sys.stderr.flush()
        elif force or (text != self.last_text and t - self.last_print >= 5.0):
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
            self.last_print = t
        self.last_text = text

    def finish(self, status, wall_s, reason=None):
        self.durations.append(wall_s)
        text = "[%s %d/%d] %s  %s in %s" % (self.system, self.index, self.total, self.name,
                                            status, human_duration(wall_s))
        if reason and status != "ok":
            text += ": " + report.short_reason(reason, 160)
        sys.stderr.write(("\r" + text + "\x1b[K\n") if self.tty else text + "\n")
        sys.stderr.flush()


def run_logged(cmd, log_path, progress, timeout_s=None, env=None, cwd=None):
    """Runs cmd with stdout+stderr into log_path (and parsed for `step N/T` progress).
    Returns (returncode, wall_s, timed_out). returncode < 0: killed by that signal; an
    executable that cannot be started gives 127 with the reason in the log."""
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        log.write(("$ " + " ".join(cmd) + "\n").encode())
        log.flush()
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                    start_new_session=True)
        except OSError as e:
            log.write(("cannot start: %s\n" % e).encode())
            return 127, time.monotonic() - t0, False

        def pump():
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            pending = ""
            while True:
                chunk = proc.stdout.read1(65536)
                if not chunk:
                    break
                log.write(chunk)
                log.flush()
                parts = re.split(r"[\r\n]", pending + decoder.decode(chunk))
                pending = parts.pop()[-4096:]
                for part in parts:
                    m = PROGRESS_RE.search(part)
                    if m:
                        progress.update(int(m.group(1)), int(m.group(2)))

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        timed_out = False
        try:
            while True:
                try:
                    proc.wait(timeout=1.0)
                    break
                except subprocess.TimeoutExpired:
                    progress.show()
                    if timeout_s and time.monotonic() - t0 > timeout_s:
                        timed_out = True
                        _kill_group(proc)
        except BaseException:
            _kill_group(proc)
            proc.wait()
            raise
        reader.join(timeout=10)
        if timed_out:
            log.write(("\nrun.py: killed after the timeout of %d s\n" % timeout_s).encode())
    return proc.returncode, time.monotonic() - t0, timed_out


def _raise_interrupt(signum, frame):
    """SIGTERM handler: unwinds like Ctrl-C (the running child's group is killed)."""
    raise KeyboardInterrupt


def _kill_group(proc):
    """SIGKILL the process group this script started for proc (start_new_session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


def log_tail(path, n=LOG_TAIL_LINES):
    """The last n non-empty lines of a log (progress \\r-lines split), joined by ' | '."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in re.split(r"[\r\n]+", text)
             if ln.strip() and not ln.startswith("$ ")]
    return " | ".join(lines[-n:])


def failure(returncode, timed_out, timeout_s, log_path):
    """(status, reason) of a run that did not exit 0."""
    text = ""
    try:
        with open(log_path, errors="replace") as f:
            text = f.read()
    except OSError:
        pass
    tail = log_tail(log_path)
    if timed_out:
        return "crashed", "timed out after %d s; log: %s" % (timeout_s, tail)
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode).name
        except ValueError:
            sig = "signal %d" % -returncode
        return "crashed", "killed by %s; log: %s" % (sig, tail)
    if REFUSAL_RE.search(text):
        return "refused", "exit %d; %s" % (returncode, tail)
    if OOM_RE.search(text):
        return "oom", "exit %d; %s" % (returncode, tail)
    return "error", "exit %d; %s" % (returncode, tail)


# ---------------------------------------------------------------------------- runs

def base_record(name, system, cfg):
    """The fields every result line of configuration `cfg` carries."""
    return {"config": name, "system": system, "status": None, "reason": None,
            "batch": cfg.get("batch"), "batch_request": cfg.get("batch_request"),
            "grad_accum": cfg.get("grad_accum"), "tokens_per_step": cfg.get("tokens_per_step"),
            "precision": cfg.get("precision"), "hash": cfg.get("hash")}


def run_tgc(root, name, cfg, exp, gpu, progress, timeout_s):
    """Runs the compiled executable of one configuration; returns its result record."""
    cdir = os.path.join(root, "configs", report.safe_name(name))
    budget = exp.get("budget") or {}
    log_jsonl = os.path.join(cdir, "run.jsonl")
    log_path = os.path.join(cdir, "run.log")
    exe = os.path.join(cdir, cfg.get("exe") or "train")
    cmd = [exe, "--data", exp["data"]]
    # A time budget replaces the step count (the executable takes one of the two).
    if report.num(budget.get("minutes")) and budget["minutes"] > 0:
        cmd += ["--time-limit", "%g" % budget["minutes"]]
    elif int(budget.get("steps") or 0) > 0:
        cmd += ["--steps", str(int(budget["steps"]))]
    cmd += ["--eval-every", str(int(budget.get("eval_every") or 0)),
            "--eval-batches", str(int(budget.get("eval_batches") or 20)),
            "--log", log_jsonl]
    try:
        os.remove(log_jsonl)
    except OSError:
        pass
    rec = base_record(name, "tgc", cfg)
    plan = cfg.get("plan") or {}
    rec.update({"planned_bytes": plan.get("total_bytes"), "used_bytes": None})
    rec.update(report.planned_phase_peaks(plan))
    rec.update({"max_batch": cfg.get("max_batch"), "device": gpu or "cpu"})
    progress.start("tgc", name)
    started = now_iso()
    code, wall, timed_out = run_logged(cmd, log_path, progress, timeout_s, cwd=cdir)
    rec.update(summarize_log(log_jsonl, cfg.get("tokens_per_step")))
    rec["mfu"] = mfu(cfg, rec["ms_per_step"], gpu, os.environ.get("TGRT_TF32") == "1")
    try:
        with open(log_path, errors="replace") as f:
            used = [m for m in USED_RE.finditer(f.read())]
        if used:
            rec["used_bytes"] = max(int(m.group(2)) for m in used)
            if rec["planned_bytes"] is None:
                rec["planned_bytes"] = int(used[-1].group(1))
    except OSError:
        pass
    if code == 0 and rec["steps"] > 0:
        rec["status"] = "ok"
    elif code == 0:
        rec["status"], rec["reason"] = "error", "no step records in %s; log: %s" % (
            log_jsonl, log_tail(log_path))
    else:
        rec["status"], rec["reason"] = failure(code, timed_out, timeout_s, log_path)
    rec["wall_s"] = round(wall, 3)
    rec["started"] = started
    rec["time"] = now_iso()
    progress.finish(rec["status"], wall, rec["reason"])
    return rec


def run_pytorch(root, name, cfg, exp, gpu, progress, timeout_s, python, runner):
    """Runs bench/torch_train.py on the configuration's effective spec; returns the record
    (the runner's torch.json completed with the common fields, or a crash/error)."""
    cdir = os.path.join(root, "configs", report.safe_name(name))
    budget = exp.get("budget") or {}
    out_json = os.path.join(cdir, "torch.json")
    log_path = os.path.join(cdir, "torch.log")
    cmd = [python, runner, "--spec", os.path.join(cdir, cfg.get("spec") or "spec.json"),
           "--data", exp["data"]]
    if report.num(budget.get("minutes")) and budget["minutes"] > 0:
        cmd += ["--minutes", "%g" % budget["minutes"]]
    elif int(budget.get("steps") or 0) > 0:
        cmd += ["--steps", str(int(budget["steps"]))]
    # --eval-batches 0: the runner's final eval then covers the whole val and test splits,
    # as the tgc executable's final eval always does (its --eval-batches only caps the
    # periodic evals), so the perplexities of the two rows are comparable.
    cmd += ["--eval-batches", "0", "--config", name,
            "--device", "cuda" if exp.get("target") == "cuda" else "cpu"]
    if cfg.get("batch_request") == "max":
        cmd += ["--batch", "max"]
    elif cfg.get("batch"):
        cmd += ["--batch", str(int(cfg["batch"]))]
    if (exp.get("pytorch") or {}).get("compile"):
        cmd.append("--compile")
    cmd += ["--out", out_json]
    try:
        os.remove(out_json)
    except OSError:
        pass
    progress.start("pytorch", name)
    started = now_iso()
    code, wall, timed_out = run_logged(cmd, log_path, progress, timeout_s, cwd=REPO_ROOT)
    rec = base_record(name, "pytorch", cfg)
    rec["device"] = gpu or "cpu"
    got = None
    if not timed_out:
        try:
            with open(out_json) as f:
                got = json.load(f)
            if not isinstance(got, dict):
                got = None
        except (OSError, ValueError):
            got = None
    if got is not None:
        rec.update({k: v for k, v in got.items() if v is not None or k not in rec})
        rec["config"], rec["system"], rec["hash"] = name, "pytorch", cfg.get("hash")
        if code != 0 and rec.get("status") in (None, "ok"):
            rec["status"], rec["reason"] = failure(code, timed_out, timeout_s, log_path)
        if rec.get("status") is None:
            rec["status"] = "ok"
    else:
        if code == 0:
            rec["status"], rec["reason"] = "error", "%s: missing or not a JSON object; log: %s" % (
                out_json, log_tail(log_path))
        else:
            rec["status"], rec["reason"] = failure(code, timed_out, timeout_s, log_path)
    ms = report.num(rec.get("ms_per_step"))
    if ms is not None:
        # bench/torch_train.py times its steps by the same rule (median after the first 2).
        if rec.get("timing_steps") is None:
            rec["timing_steps"] = report.timing_steps(rec)
        if rec["timing_steps"] is not None:
            rec["timing_indicative"] = rec["timing_steps"] < report.TIMING_MIN_STEPS
    if ms and rec.get("tokens_per_s") is None and rec.get("tokens_per_step"):
        rec["tokens_per_s"] = rec["tokens_per_step"] * 1000.0 / ms
    if ms:
        # The FLOP count of tgc's row (the planned FLOPs of a micro-step without recompute),
        # scaled to the batch PyTorch actually ran, so both rows' MFU share one definition;
        # the runner's own figure (its GEMM + attention count) is kept as mfu_runner.
        scaled = dict(cfg)
        pb, cb = rec.get("batch"), cfg.get("batch")
        if isinstance(pb, int) and isinstance(cb, int) and cb > 0 and pb != cb:
            plan = dict(cfg.get("plan") or {})
            if plan.get("step_flops"):
                plan["step_flops"] = plan["step_flops"] * pb / cb
            scaled["plan"] = plan
        if rec.get("grad_accum"):
            scaled["grad_accum"] = rec["grad_accum"]
        ours = mfu(scaled, ms, gpu, bool(rec.get("tf32")))
        if ours is not None:
            if rec.get("mfu") is not None:
                rec["mfu_runner"] = rec["mfu"]
            rec["mfu"] = ours
    if rec.get("wall_s") is None:
        rec["wall_s"] = round(wall, 3)
    rec["started"] = started
    rec["time"] = now_iso()
    progress.finish(rec["status"], wall, rec.get("reason"))
    return rec


# ---------------------------------------------------------------------------- main

def append_result(root, rec):
    """Appends one JSON line to DIR/results.jsonl (flushed and synced)."""
    path = os.path.join(root, "results.jsonl")
    with open(path, "a") as f:
        f.write(json.dumps(rec, sort_keys=False, allow_nan=False, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def finite_json(rec):
    """rec with NaN / inf replaced by None, so the line stays strict JSON."""
    if isinstance(rec, dict):
        return {k: finite_json(v) for k, v in rec.items()}
    if isinstance(rec, list):
        return [finite_json(v) for v in rec]
    if isinstance(rec, float) and not math.isfinite(rec):
        return None
    return rec


def is_done(records, name, system, cfg, statuses):
    """A line for (name, system) with a status in `statuses` and the configuration's hash
    (a line or a configuration without a hash matches any)."""
    for r in records:
        if r.get("config") != name or r.get("system") != system:
            continue
        if r.get("status") not in statuses:
            continue
        if r.get("hash") is None or cfg.get("hash") is None or r.get("hash") == cfg.get("hash"):
            return True
    return False


def parse_names(text, known):
    """Splits an --only / --skip list at commas. Axis names contain commas themselves
    ("precision=fp32,checkpointing=none"), so at each position the longest run of pieces
    that forms a known name (or safe directory name) is taken; a piece that starts none is
    returned on its own (and then reported as unknown)."""
    pieces = [p.strip() for p in (text or "").split(",")]
    out, i = [], 0
    while i < len(pieces):
        for j in range(len(pieces), i, -1):
            cand = ",".join(pieces[i:j])
            if cand in known:
                out.append(cand)
                i = j
                break
        else:
            if pieces[i]:
                out.append(pieces[i])
            i += 1
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="run.py", description="Runs the configurations of a `tgc experiment` directory "
        "(tgc and PyTorch) and writes results.jsonl, results.md and plots/.")
    ap.add_argument("dir", metavar="DIR", help="the --out directory of `tgc experiment`")
    ap.add_argument("--only", metavar="A,B", help="run only these configurations (names)")
    ap.add_argument("--skip", metavar="A,B", help="do not run these configurations")
    ap.add_argument("--report-only", action="store_true",
                    help="only write results.md and plots/ from results.jsonl")
    ap.add_argument("--no-pytorch", action="store_true", help="no PyTorch rows")
    ap.add_argument("--data", metavar="DIR",
                    help="token directory to use instead of experiment.json's (e.g. when the "
                         "compiled directory was carried to another machine)")
    ap.add_argument("--timeout", type=float, default=0, metavar="SEC",
                    help="kill a run after SEC seconds (recorded as crashed); default: none "
                    "for step budgets, 2 x minutes + 15 min with a time budget")
    ap.add_argument("--minutes", type=float, default=0, metavar="M",
                    help="replace the matrix's time budget per run by M minutes (written into "
                    "DIR/experiment.json, so the report and later reruns see it); for short "
                    "GPU sessions")
    ap.add_argument("--python", default=sys.executable, metavar="PATH",
                    help="interpreter for bench/torch_train.py (default: this one)")
    ap.add_argument("--torch-runner", default=TORCH_RUNNER, metavar="FILE.py",
                    help="the PyTorch runner (default: bench/torch_train.py of this repo)")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.dir)

    try:
        exp = report.load_experiment(root)
    except report.ExperimentError as e:
        print("run.py: error: %s" % e, file=sys.stderr)
        return 1
    if args.minutes < 0:
        print("run.py: error: --minutes must be > 0, got %g" % args.minutes, file=sys.stderr)
        return 2
    if args.minutes > 0 and not args.report_only:
        exp = set_minutes(root, exp, args.minutes)
    names = list(exp["configs"])
    known = set(names) | {report.safe_name(n) for n in names}
    only, skip = parse_names(args.only, known), parse_names(args.skip, known)
    for opt, given in (("--only", only), ("--skip", skip)):
        unknown = [n for n in given if n not in known]
        if unknown:
            print("run.py: error: %s: unknown configuration(s) %s; %s has: %s"
                  % (opt, ", ".join(unknown), os.path.join(root, "experiment.json"),
                     ", ".join(names)), file=sys.stderr)
            return 2
    only, skip = set(only), set(skip)
    selected = [n for n in names
                if (not only or n in only or report.safe_name(n) in only)
                and n not in skip and report.safe_name(n) not in skip]

    interrupted = False
    if not args.report_only:
        # SIGTERM (e.g. `timeout`) ends the running configuration's process group and still
        # writes the report of what finished, as Ctrl-C does.
        signal.signal(signal.SIGTERM, _raise_interrupt)
        rc = run_all(root, exp, selected, args)
        if rc == 130:
            interrupted = True
        elif rc is not None:
            return rc
    try:
        path = report.write_report(root, exp)
        print("run.py: wrote %s" % path, file=sys.stderr)
    except report.ExperimentError as e:
        print("run.py: error: %s" % e, file=sys.stderr)
        return 1
    if interrupted:
        return 130
    if args.report_only:
        return 0
    records = report.read_results(root)
    missing = [n for n in selected if not any(r.get("config") == n and r.get("system") == "tgc"
                                              for r in records)]
    if missing:
        print("run.py: no result for: %s" % ", ".join(missing), file=sys.stderr)
        return 1
    return 0


def set_minutes(root, exp, minutes):
    """Sets the time budget of the experiment directory `root` to `minutes` per run (in
    experiment.json, rewritten atomically) and returns the updated experiment."""
    path = os.path.join(root, "experiment.json")
    with open(path) as f:
        raw = json.load(f)
    budget = dict(raw.get("budget") or {})
    old = budget.get("minutes")
    budget["minutes"] = minutes
    budget.pop("steps", None)
    raw["budget"] = budget
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(raw, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    print("run.py: time budget per run %s -> %g minutes (%s)" % (old, minutes, path),
          file=sys.stderr)
    return raw


def run_all(root, exp, selected, args):
    """Runs what is not done yet; returns an exit status to stop with, or None."""
    records = report.read_results(root)
    configs = {n: report.load_config(root, n) for n in selected}
    want_torch = bool((exp.get("pytorch") or {}).get("enabled")) and not args.no_pytorch
    if want_torch and not os.path.isfile(args.torch_runner):
        print("run.py: warning: %s not found; no PyTorch rows" % args.torch_runner,
              file=sys.stderr)
        want_torch = False

    # The queue: (system, name); pre-recorded statuses first.
    queue = []
    for n in selected:
        cfg = configs[n]
        st = cfg.get("status")
        if st != "compiled":
            if st not in ("refused", "error"):
                cfg = dict(cfg, status="error", reason="config.json: unknown status %r" % st)
                configs[n], st = cfg, "error"
            if not is_done(records, n, "tgc", cfg, (st,)):
                rec = base_record(n, "tgc", cfg)
                plan = cfg.get("plan") or {}
                rec.update({"status": st, "reason": cfg.get("reason"),
                            "planned_bytes": plan.get("total_bytes"),
                            "max_batch": cfg.get("max_batch"), "time": now_iso()})
                append_result(root, finite_json(rec))
                records.append(rec)
        elif not is_done(records, n, "tgc", cfg, DONE_STATUSES):
            queue.append(("tgc", n))
        if (want_torch and cfg.get("pytorch") and st in ("compiled", "refused")
                and os.path.isfile(os.path.join(root, "configs", report.safe_name(n),
                                                cfg.get("spec") or "spec.json"))
                and not is_done(records, n, "pytorch", cfg, DONE_STATUSES + ("refused",))):
            queue.append(("pytorch", n))
    if not queue:
        print("run.py: nothing to run (%d configuration(s) selected, all recorded in %s)"
              % (len(selected), os.path.join(root, "results.jsonl")), file=sys.stderr)
        return None

    data = args.data or exp.get("data")
    if not data or not os.path.isdir(data):
        print("run.py: error: %s: data directory %s; give --data DIR to `tgc experiment` or "
              '"data" in the matrix' % (os.path.join(root, "experiment.json"),
                                          "is not set" if not data else repr(data) +
                                          " does not exist"), file=sys.stderr)
        return 1
    exp = dict(exp, data=os.path.abspath(data))
    gpu = gpu_name() if exp.get("target") == "cuda" else None
    timeout_s = args.timeout
    minutes = report.num((exp.get("budget") or {}).get("minutes")) or 0
    if not timeout_s and minutes > 0:
        timeout_s = 2 * minutes * 60 + 900
    progress = Progress(len(queue))
    try:
        for system, n in queue:
            if system == "tgc":
                rec = run_tgc(root, n, configs[n], exp, gpu, progress, timeout_s)
            else:
                rec = run_pytorch(root, n, configs[n], exp, gpu, progress, timeout_s,
                                  args.python, args.torch_runner)
            append_result(root, finite_json(rec))
    except KeyboardInterrupt:
        print("\nrun.py: interrupted; the finished runs are in %s (run again to continue)"
              % os.path.join(root, "results.jsonl"), file=sys.stderr)
        return 130
    return None


if __name__ == "__main__":
    sys.exit(main())
