# call3 (nineteenth session): the cost model's "loss" group measured again (with
# tgrt_linear_cross_entropy_store, measured since this session) into a copy of
# calibration/h200.json (committed as calibration/h200.json).
set -u
source scripts/gpu-lib.sh
gpu_unpack s19c3
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
timeout 400 $B/tgc-calibrate-cuda --out $OUT/h200.json --only loss calibration/h200.json > $L/calibrate-loss.log 2>&1; echo "loss rc $?"
tail -3 $L/calibrate-loss.log | cut -c1-200
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
