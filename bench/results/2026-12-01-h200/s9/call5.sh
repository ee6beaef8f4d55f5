# call5 (ninth session): `tgc calibrate --target cuda` writes memory_bytes (cudaMemGetInfo's
# total at start-up) on the GPU: a quick grid into a fresh table; `--only loss` into a copy of
# calibration/h200.json keeps that table's memory_bytes.
set -u
source scripts/gpu-lib.sh
gpu_unpack s9c5
python3 -c "import torch; f, t = torch.cuda.mem_get_info(); print('cudaMemGetInfo total', t)"
timeout 240 $B/tgc-calibrate-cuda --out $L/quick.json --quick > $L/quick.log 2>&1; echo "quick rc $?"
tail -2 $L/quick.log
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print('quick table memory_bytes', d.get('memory_bytes'), 'points', sum(len(p) for k in d['kernels'].values() for p in k.values()))" $L/quick.json
timeout 120 $B/tgc-calibrate-cuda --out $L/only.json --quick --only loss calibration/h200.json > $L/only.log 2>&1; echo "only rc $?"
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print('--only table memory_bytes', d.get('memory_bytes'))" $L/only.json
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
