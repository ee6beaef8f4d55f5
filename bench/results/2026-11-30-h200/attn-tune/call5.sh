# call5: the cost model's attention points measured again with the tuned cuDNN plans
# (tgc-calibrate-cuda --only attention: the committed h200 table with that group replaced).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 420 runs/cal/tgc-calibrate-cuda --out $OUT/h200.json --only attention calibration/h200.json \
  > $OUT/calibrate.log 2>&1
echo "rc $?"; tail -5 $OUT/calibrate.log | cut -c1-200; ls -la $OUT
