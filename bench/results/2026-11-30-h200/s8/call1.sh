# call1 (eighth session): the driver's batch prefetch (the next micro-batch sampled and staged
# with tgrt_upload_async while the step runs; TGRT_PREFETCH=0 is the driver before it).
# (1) correctness on CUDA: test/e2e/prefetch.py with a CUDA trainer (1 rank, grad_accum 2;
# the 2-rank trainer on the CPU): losses, norms, window logs, checkpoints equal without it;
# (2) steps: head dim 128 with and without the prefetch against torch.compile, GPT-2 small
# with and without it, 3 alternating repetitions of 20 steps; host_gap_ms and batch_ms per
# variant (steps 3-20).
set -u
source scripts/gpu-lib.sh
gpu_unpack s8c1
mkdir -p $L/pf
timeout 120 python3 test/e2e/prefetch.py --work $L/pf --exe1 $B/pf-r1 --exe2 $B/pf-r2-cpu \
  > $L/prefetch-check.log 2>&1; echo "prefetch check rc $?"; cut -c1-160 $L/prefetch-check.log
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "hd128" "- TGRT_PREFETCH=0 torch"'
timeout 100 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s" "- TGRT_PREFETCH=0"'
steps_summary $L
python3 - $L <<'PY'
import glob, json, re, statistics, sys, collections
g = collections.defaultdict(lambda: ([], [], []))
for f in sorted(glob.glob(f"{sys.argv[1]}/tgc-*.jsonl")):
    m = re.match(r"tgc-([^-]+)-(.+)-(\d+)\.jsonl$", f.split("/")[-1])
    rows = [json.loads(l) for l in open(f) if l.startswith("{") and '"ms"' in l]
    gaps, bt, ms = g[(m[1], m[2])]
    gaps += [r["host_gap_ms"] for r in rows[2:]]; bt += [r["batch_ms"] for r in rows[2:]]
    ms += [r["ms"] for r in rows[2:]]
for (m, v), (gaps, bt, ms) in sorted(g.items()):
    print(f"{m} {v}: host_gap_ms median {statistics.median(gaps):.4f} (min {min(gaps):.4f}, "
          f"max {max(gaps):.4f}), batch_ms median {statistics.median(bt):.4f}, step ms median "
          f"{statistics.median(ms):.3f}, gap / step {statistics.median(gaps) / statistics.median(ms) * 100:.2f}% ({len(ms)} steps)")
PY
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
