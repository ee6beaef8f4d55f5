#!/bin/bash
# NVML check of runtime/cuda/Context.cu on the GPU machine (issue 25).
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
OUT=${OUT:-/tmp/nvml-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv | tee "$OUT/gpu.txt"
ls -l /proc/self/ns/pid; ls -l /usr/lib/x86_64-linux-gnu/libnvidia-ml.so* 2>&1 | head -3
./train --data data --steps ${STEPS:-3000} --log "$OUT/run.jsonl" > "$OUT/train.out" 2> "$OUT/train.err" &
pid=$!
echo "train pid $pid"
for i in $(seq 1 200); do
  kill -0 $pid 2>/dev/null || break
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >> "$OUT/smi.txt" 2>&1
  sleep 0.1
done
wait $pid; echo "train rc $?"
echo "--- nvidia-smi samples (pid, MiB): distinct"; sort "$OUT/smi.txt" | uniq -c | sort -rn | head -8
echo "--- tgrt lines"; grep "tgrt:" "$OUT/train.err"
tail -3 "$OUT/train.err"
