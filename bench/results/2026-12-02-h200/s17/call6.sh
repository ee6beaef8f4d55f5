# call6 (seventeenth session): the cost model's "rows" group (AdamW, the norms, the small
# kernels) measured again after AdamW in float and the norms' backwards with their loads
# issued together, into a copy of calibration/h200.json (committed as calibration/h200.json).
set -u
source scripts/gpu-lib.sh
gpu_unpack s17c6
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
timeout 330 $B/tgc-calibrate-cuda --out $OUT/h200.json --only rows calibration/h200.json > $L/calibrate-rows.log 2>&1; echo "rows rc $?"
tail -3 $L/calibrate-rows.log | cut -c1-200
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
