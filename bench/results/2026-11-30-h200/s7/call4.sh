# call4 (seventh session): where the GPU waits for the host between training steps. hd128
# (the s7 build) for 8 steps under Nsight Systems (CUDA trace, graph nodes traced) when the
# image has nsys: per step, the GPU's busy time (union of kernel and copy intervals) against
# the step's span, and the gaps over 20 us. Then GPT-2 small against torch.compile with this
# build, 3 alternating repetitions.
set -u
source scripts/gpu-lib.sh
gpu_unpack s7c4
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys /usr/local/cuda/nsight-systems*/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${NSYS:-none}"
mkdata $B/data-32000 32000 4000000
if [ -n "$NSYS" ]; then
  timeout 180 $NSYS profile -t cuda --cuda-graph-trace=node -o $L/hd128 -f true $B/hd128 --data $B/data-32000 \
    --steps 8 --eval-every 0 --eval-batches 1 > $L/nsys.log 2>&1; echo "nsys rc $?"
  timeout 120 $NSYS stats -r cuda_gpu_trace -f csv -o $L/trace $L/hd128.nsys-rep > $L/stats.log 2>&1; echo "stats rc $?"
  ls $L | head; f=$(ls $L/trace*.csv 2>/dev/null | head -1)
  [ -n "$f" ] && python3 - "$f" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
iv = []
for r in rows:
    s = int(float(r.get("Start (ns)") or r.get("Start") or 0)); d = int(float(r.get("Duration (ns)") or r.get("Duration") or 0))
    iv.append((s, s + d, r.get("Name", "")[:60]))
iv.sort()
# Steps: split at gaps over 1 ms (a step's own gaps are shorter); report each span's busy share.
spans, cur = [], [iv[0]]
for a in iv[1:]:
    if a[0] - max(x[1] for x in cur[-50:]) > 1_000_000: spans.append(cur); cur = [a]
    else: cur.append(a)
spans.append(cur)
print(f"{len(iv)} GPU activities, {len(spans)} spans split at gaps > 1 ms")
for k, sp in enumerate(spans):
    t0, t1 = sp[0][0], max(x[1] for x in sp)
    busy, end, gaps = 0, t0, []
    for s, e, n in sp:
        if s > end:
            if s - end > 20_000: gaps.append((s - end, n))
            busy += e - s; end = e
        elif e > end:
            busy += e - end; end = e
    print(f"span {k}: {len(sp)} activities, {(t1-t0)/1e6:.3f} ms, busy {busy/1e6:.3f} ms, idle {(t1-t0-busy)/1e6:.3f} ms;"
          f" gaps > 20 us: {len(gaps)} ({sum(g for g,_ in gaps)/1e6:.3f} ms) e.g. {[(round(g/1e3), n) for g, n in sorted(gaps)[-3:]]}")
# Between spans: the host's time between steps.
for k in range(1, len(spans)):
    print(f"between span {k-1} and {k}: {(spans[k][0][0] - max(x[1] for x in spans[k-1]))/1e6:.3f} ms")
PY
fi
export B L
timeout 330 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "gpt2s" "- torch"'
steps_summary $L
rm -f $L/*.nsys-rep $L/*.sqlite
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
