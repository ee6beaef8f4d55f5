# call5: the cost model's loss points measured again with the cross-entropy's variant per
# vocabulary (tgc-calibrate-cuda --only loss: the committed h200 table with that group replaced).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
timeout 120 runs/cal/tgc-calibrate-cuda --out $OUT/h200.json --only loss calibration/h200.json \
  > $OUT/calibrate.log 2>&1
echo "rc $?"; tail -4 $OUT/calibrate.log | cut -c1-200; ls -la $OUT
