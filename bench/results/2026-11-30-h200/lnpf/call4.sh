# call4: tgc's cuDNN attention kernels against torch.compile's at head dim 128 (8 x 8 heads,
# T 2048, causal) and GPT-2 small: the library versions, the engine configurations the
# frontend's plans pick (CUDNN_FRONTEND_LOG_INFO), and the kernels' durations under Nsight
# Compute (gpu__time_duration, clocks not controlled) for both programs in the same call.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/lnk; rm -rf $B; mkdir -p $B; tar -C $B -xJf runs/llama/llama.tar.xz; B=$B/llama
L=/tmp/ln-logs; rm -rf $L; mkdir -p $L
source scripts/gpu-lib.sh
mkdata $B/data-32000 32000 4000000; mkdata $B/data-50304 50304 4000000
echo "== versions"
python3 -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())"
ls /usr/local/cuda/lib64/ | grep -i "libcudnn.so\|libcudnn_engines" | head -4
python3 -c "import nvidia.cudnn, os; p=os.path.dirname(nvidia.cudnn.__path__[0]); print(p)" 2>/dev/null
pip list 2>/dev/null | grep -i cudnn
echo "== tgc engine log (hd128, 2 steps)"
CUDNN_FRONTEND_LOG_INFO=1 CUDNN_FRONTEND_LOG_FILE=$L/fe-hd128.log TGRT_CUDA_GRAPH=0 $B/hd128 --data $B/data-32000 --steps 2 --eval-every 0 --eval-batches 1 > $L/tgc-fe-hd128.log 2>&1
echo "rc $?"; grep -i -E "engine|knob|plan|tag" $L/fe-hd128.log | sort | uniq -c | sort -rn | head -20 | cut -c1-180
for m in hd128 gpt2s; do
  case $m in hd128) V=32000; S="--batch 8 --layers 8 --d-model 1024 --heads 8 --d-ff 4096 --vocab 32000 --context 2048" ;;
              gpt2s) V=50304; S="--batch 16" ;; esac
  echo "== ncu: tgc $m, attention kernels of step 1"
  timeout 150 ncu --clock-control none -k regex:"sdpa|cudnn" -c 16 --metrics gpu__time_duration.sum \
    $B/$m --data $B/data-$V --steps 1 --eval-every 0 --eval-batches 1 > $L/ncu-tgc-$m.log 2>&1
  echo "rc $?"; python3 - $L/ncu-tgc-$m.log <<'PY'
import re, sys, collections
d = collections.defaultdict(list); name = None
for l in open(sys.argv[1]):
    m = re.match(r"\s+(\S.*?) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)", l)
    if m: name = m[1][:110]
    m = re.search(r"gpu__time_duration.sum\s+(\S+)\s+([\d.,]+)", l)
    if m and name:
        v = float(m[2].replace(",", "")); d[name].append(v / 1000 if m[1] == "ns" else v if m[1] == "us" else v * 1000)
for k, v in d.items(): print(f"{len(v):3d}x median {sorted(v)[len(v)//2]:9.1f} us  {k}")
PY
  echo "== ncu: torch.compile $m, attention kernels"
  timeout 240 ncu --clock-control none -k regex:"sdpa|cudnn" -c 24 --metrics gpu__time_duration.sum \
    python3 bench/torch_gpt2_step.py --compile --bf16 $S --steps 1 --warmup 1 > $L/ncu-torch-$m.log 2>&1
  echo "rc $?"; python3 - $L/ncu-torch-$m.log <<'PY'
import re, sys, collections
d = collections.defaultdict(list); name = None
for l in open(sys.argv[1]):
    m = re.match(r"\s+(\S.*?) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)", l)
    if m: name = m[1][:110]
    m = re.search(r"gpu__time_duration.sum\s+(\S+)\s+([\d.,]+)", l)
    if m and name:
        v = float(m[2].replace(",", "")); d[name].append(v / 1000 if m[1] == "ns" else v if m[1] == "us" else v * 1000)
for k, v in d.items(): print(f"{len(v):3d}x median {sorted(v)[len(v)//2]:9.1f} us  {k}")
PY
done
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
