# call7 (tenth session): data for the next round, no change: the own bias-gradient column
# sums (about 0.8 ms of GPT-2 small's step at 2.7-2.9 TB/s) under TGRT_BGRAD_CHUNKS = 4 ... 96
# row chunks against the default (192 first-stage blocks: 16 chunks at 3072 columns, 64 at
# 768), 3 rounds each; bench rows bias_grad 16384 x {768, 2304, 3072, 4096} bf16.
set -u
source scripts/gpu-lib.sh
gpu_unpack s10c7
for r in 1 2 3; do for k in default 4 8 12 16 22 33 48 64 96; do
  if [ $k = default ]; then e=(); else e=(TGRT_BGRAD_CHUNKS=$k); fi
  env "${e[@]}" TGRT_KERNEL_BENCH_ONLY=bias_grad timeout 40 $B/tgrt-cuda-check --bench-kernels 2>&1 \
    | grep "bias_grad.*bf16" | sed "s/^/$k $r: /"
done; done > $L/bgrad-chunks.txt
python3 - $L/bgrad-chunks.txt <<'PY'
import re, sys, collections
t = collections.defaultdict(list)
for l in open(sys.argv[1]):
    m = re.match(r"(\S+) \d+: (bias_grad 16384 x \d+)\s+bf16\s+([0-9.]+) ms", l)
    if m: t[(m[2], m[1])].append(float(m[3]))
shapes = sorted({s for s, _ in t}, key=lambda s: int(s.split()[-1]))
ks = ["default", "4", "8", "12", "16", "22", "33", "48", "64", "96"]
print("| chunks | " + " | ".join(shapes) + " |\n|---|" + "---|" * len(shapes))
for k in ks:
    print(f"| {k} | " + " | ".join(f"{min(t[(s, k)]):.4f}" if t[(s, k)] else "-" for s in shapes) + " |")
PY
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
