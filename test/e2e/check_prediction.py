"""Checks of tgc plan's predicted step time (plan-predict.test, cost-model-cpu.test).

  fixed PLAN.json CALLS.jsonl GRAD_ACCUM   the arithmetic with Inputs/calibration-fixed.json
  tradeoff TRADEOFF.json                   --tradeoff --sort time rows
  calibrated TABLE.json                    a table tgc calibrate wrote is well formed
  accuracy PLAN.json RUN.jsonl LO HI       predicted / measured step time within [LO, HI]
  nullargs GPT.jsonl LLAMA.jsonl           the weight-gradient GEMMs' bias gradients in the trace
  only TABLE.json COPY.json GROUP KERNELS  tgc calibrate --only GROUP --into TABLE wrote COPY
"""
import json
import statistics
import sys


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def fixed(plan, calls_file, grad_accum):
    p = json.load(open(plan))["prediction"]
    calls = [json.loads(line) for line in open(calls_file)]
    micro = [c for c in calls if c["function"] == "micro_step"]
    opt = [c for c in calls if c["function"] == "optimizer_step"]
    assert micro and opt and any(c["function"] == "eval_step" for c in calls)
    # Every call costs the 0.5 ms overhead; tgrt_adamw 0.5 + 2 ms per 1e6 bytes.
    for c in calls:
        want = 0.5 + (2.0 * c["bytes"] / 1e6 if c["kernel"] == "tgrt_adamw" else 0.0)
        assert close(c["predicted_ms"], want), c
        assert c["calibrated"] == (c["kernel"] == "tgrt_adamw"), c
    assert p["grad_accum"] == grad_accum, p
    assert close(p["micro_step_ms"], sum(c["predicted_ms"] for c in micro)), p
    assert close(p["optimizer_step_ms"], sum(c["predicted_ms"] for c in opt)), p
    assert close(p["step_ms"], grad_accum * p["micro_step_ms"] + p["optimizer_step_ms"]), p
    assert p["calls_per_step"] == grad_accum * len(micro) + len(opt), p
    assert close(p["overhead_ms"], 0.5 * p["calls_per_step"]), p
    assert close(sum(k["ms"] for k in p["by_kernel"]), p["step_ms"]), p
    adamw = sum(c["predicted_ms"] for c in opt if c["kernel"] == "tgrt_adamw")
    assert adamw > 0.5 and close(p["uncalibrated_ms"], p["step_ms"] - adamw), p
    assert "tgrt_adamw/f32" not in p["uncalibrated"] and "tgrt_matmul/f32" in p["uncalibrated"]
    assert p["tokens_per_step"] == 8 * 64 * grad_accum, p
    assert close(p["tokens_per_s"], p["tokens_per_step"] / (p["step_ms"] / 1e3)), p
    assert close(p["mfu"], p["model_flops_per_step"] / (p["step_ms"] / 1e3) / 1e30), p
    print("fixed table: PASS", round(p["step_ms"], 3), "ms,", p["calls_per_step"], "calls")


def tradeoff(path):
    d = json.load(open(path))
    rows = d["rows"]
    assert d["sort"] == "time" and all(r["ok"] for r in rows), d
    t = [r["predicted_ms"] for r in rows]
    assert t == sorted(t) and t[0] > 0, t
    by = {r["policy"]: r["predicted_ms"] for r in rows}
    assert by["none"] < by["gelu"] < by["layer"], by
    print("tradeoff: PASS", [(r["policy"], round(r["predicted_ms"], 1)) for r in rows])


def calibrated(path, needed):
    d = json.load(open(path))
    assert d["format"] == "tgc-calibration/1" and d["target"] == "cpu", d.get("format")
    assert d["peak"]["flops_per_s"]["f32"] > 0 and d["peak"]["memory_bytes_per_s"] > 0
    assert d["call_overhead_ms"] >= 0
    for k in needed.split(","):
        pts = d["kernels"][k]["f32" if k not in ("tgrt_zero",) else "any"]
        assert pts and all(p["ms"] > 0 and p["flops"] + p["bytes"] > 0 for p in pts), (k, pts)
    n = sum(len(v) for k in d["kernels"].values() for v in k.values())
    print("calibrated: PASS", len(d["kernels"]), "kernels", n, "points")


def accuracy(plan, run, lo, hi):
    p = json.load(open(plan))["prediction"]
    assert not p["uncalibrated"], p["uncalibrated"]
    ms = [json.loads(line)["ms"] for line in open(run) if '"ms"' in line]
    assert len(ms) >= 10, len(ms)
    measured = statistics.median(ms[3:])  # the first steps warm up
    ratio = p["step_ms"] / measured
    print("predicted %.2f ms, measured %.2f ms (median of %d steps), ratio %.2f"
          % (p["step_ms"], measured, len(ms) - 3, ratio))
    assert float(lo) <= ratio <= float(hi), ratio
    print("accuracy: PASS")


def nullargs(gpt_calls, llama_calls):
    """tgc plan --calls: a tgrt_matmul_wgrad's bias gradient (argument 11, after (ctx, loc))
    is NULL where no bias gradient is computed in it, and the cost model then prices no
    column sums (priced: the call costs more than the same GEMM without a bias)."""
    def wgrads(path):
        return [c for c in map(json.loads, open(path)) if c["kernel"] == "tgrt_matmul_wgrad"]
    gpt, llama = wgrads(gpt_calls), wgrads(llama_calls)
    assert gpt and llama
    # GPT-2: qkv and fc sum their bias gradients in the GEMM call; the projections into the
    # residual (attn.proj, mlp.proj) have theirs summed by the layer-norm backward that
    # reads the same residual gradient (NULL here), but the last layer's mlp.proj, whose
    # residual gradient comes from the final norm's plain backward.
    with_bias = [c for c in gpt if 11 not in c["null_args"]]
    without = [c for c in gpt if 11 in c["null_args"]]
    assert with_bias and without
    assert all(c["location"].endswith(("qkv", "fc")) for c in gpt
               if not c["location"].endswith("proj")), gpt
    assert all(c in with_bias for c in gpt if c["location"].endswith(("qkv", "fc"))), gpt
    assert all(c["location"].endswith("proj") for c in without), without
    # Llama has no biases: every weight gradient passes NULL.
    assert all(11 in c["null_args"] for c in llama), llama
    print("nullargs: PASS", len(with_bias), "with a bias,", len(without) + len(llama), "without")


def only(table, copy, group, kernels):
    """COPY (tgc calibrate --only GROUP --into TABLE) has TABLE's kernels, KERNELS (of GROUP)
    measured again and named in its note, every other kernel's points TABLE's own."""
    a, b = json.load(open(table)), json.load(open(copy))
    again = kernels.split(",")
    assert set(a["kernels"]) == set(b["kernels"]), set(a["kernels"]) ^ set(b["kernels"])
    assert b["note"].startswith(a["note"]) and b["note"].endswith("(--only %s)" % group), b["note"]
    for k in again:
        assert k in b["note"] and b["kernels"][k], (k, b["note"])
        assert all(p["ms"] > 0 for v in b["kernels"][k].values() for p in v), k
    kept = [k for k in a["kernels"] if k not in b["note"]]
    assert kept and all(a["kernels"][k] == b["kernels"][k] for k in kept), kept
    assert (a["peak"], a["device"], a["call_overhead_ms"]) == (b["peak"], b["device"],
                                                               b["call_overhead_ms"])
    print("only: PASS", len(kept), "kernels kept")


if __name__ == "__main__":
    {"fixed": lambda a: fixed(a[0], a[1], int(a[2])), "tradeoff": lambda a: tradeoff(a[0]),
     "calibrated": lambda a: calibrated(a[0], a[1]),
     "accuracy": lambda a: accuracy(*a), "nullargs": lambda a: nullargs(*a),
     "only": lambda a: only(*a)}[sys.argv[1]](sys.argv[2:])
