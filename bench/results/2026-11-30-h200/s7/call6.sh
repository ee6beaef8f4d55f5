# call6 (seventh session): as call5, with the --log line's batch_ms (the host's time sampling
# and uploading the step's batches, part of host_gap_ms). call5: the host's time between training steps, GPU idle (the --log line's
# new host_gap_ms: from the previous step's synchronisation to this step's first launch, the
# batch's sampling and two synchronous copies in it), at GPT-2 small and head dim 128, against
# the step (ms); 3 repetitions of 20 steps, steps 3-20.
set -u
source scripts/gpu-lib.sh
gpu_unpack s7c6
export B L
timeout 200 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s hd128" -'
steps_summary $L
python3 - $L <<'PY'
import glob, json, statistics, sys
for m in ("gpt2s", "hd128"):
    gaps, ms, bt = [], [], []
    for f in sorted(glob.glob(f"{sys.argv[1]}/tgc-{m}---*.jsonl")):
        rows = [json.loads(l) for l in open(f) if l.startswith("{") and '"ms"' in l]
        gaps += [r["host_gap_ms"] for r in rows[2:]]; ms += [r["ms"] for r in rows[2:]]
        bt += [r["batch_ms"] for r in rows[2:]]
    print(f"{m}: host_gap_ms median {statistics.median(gaps):.4f} (min {min(gaps):.4f}, max {max(gaps):.4f}) "
          f"over {len(gaps)} steps; step ms median {statistics.median(ms):.3f}; "
          f"gap / step {statistics.median(gaps) / statistics.median(ms) * 100:.2f}%; "
          f"batch_ms median {statistics.median(bt):.4f} (min {min(bt):.4f}, max {max(bt):.4f})")
PY
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
