#!/usr/bin/env bash
# Builds (here, no GPU needed) what the GPU scripts carry to the GPU machine, under runs/
# (the device tool carries at most 64 MiB: build one set at a time).
#   scripts/gpu-artifacts.sh fp32    GPT-2 small fp32 + gradient libraries + kernel check
#                                    (scripts/gpu-session.sh, scripts/gpu-run.sh)
#   scripts/gpu-artifacts.sh mixed   per precision (scripts/gpu-mixed.sh)
#   scripts/gpu-artifacts.sh remat   per checkpointing policy, at B=16 and at the planned
#                                    max micro-batch for MAXMEM (default 78GiB)
#   scripts/gpu-artifacts.sh sanitize  GPT-2 small at micro-batch 1 (bf16-mixed flash, fp32
#                                    naive) + kernel check (scripts/gpu-sanitize.sh)
#   scripts/gpu-artifacts.sh perf [TAG]  GPT-2 small bf16-mixed (checkpointing $POLICIES, default
#                                    "none gelu")
#                                    + one per SETS entry "name:PATH=VALUE" (gpt2-bf16m-name[-TAG])
#                                    + kernel check, named gpt2-bf16m[-gelu][-TAG] and
#                                    tgrt-cuda-check[-TAG]; earlier perf artifacts of other tags
#                                    stay (scripts/gpu-perf.sh compares them in one call)
#   scripts/gpu-artifacts.sh dp      GPT-2 small bf16-mixed, ranks 1 x micro-batch 16 and ranks
#                                    2 x 8 (scripts/gpu-dp.sh, on the 2-GPU machine)
#   scripts/gpu-artifacts.sh zero    ZeRO-0..3 and CPU offload (GPT-2 small) and the largest
#                                    ZeRO-3 + offload model for BIGMEM (scripts/gpu-zero.sh)
#   scripts/gpu-artifacts.sh all     mixed + remat (one device call: scripts/gpu-mixed.sh then
#                                    scripts/gpu-remat.sh)
# Executables are stripped and xz-compressed (runs/NAME.xz, ~3.8 MB for GPT-2 on CUDA); the
# scripts unpack them. Always: 8 MiB of tokenized kernel docs (runs/data-gpu).
set -euo pipefail
cd "$(dirname "$0")/.."
TGC=build/bin/tgc
WHAT=${1:-mixed}
ninja -C build -j"${JOBS:-2}" >/dev/null
[ "$WHAT" = experiment ] || [ "$WHAT" = sanitize ] || [ "$WHAT" = perf ] || [ "$WHAT" = dp ] || [ "$WHAT" = zero ] || rm -rf runs/*.gz runs/*.xz runs/*.so runs/gpt2-* runs/tiny-* runs/max-batch.txt
mkdir -p runs
exe() { # name args... : compile a CUDA executable of GPT-2 small, strip and xz it
  local name=$1; shift
  $TGC compile examples/gpt2-small.json --target cuda "$@" -o "runs/$name"
  strip "runs/$name" && xz -T2 -f "runs/$name"
}
lib() { # name spec args... : a CUDA shared library, xz'd
  local name=$1 spec=$2; shift 2
  $TGC compile "$spec" --target cuda --emit=lib "$@" -o "runs/$name"
  strip "runs/$name" && xz -T2 -f "runs/$name"
}
mixed() {
  for p in bf16-mixed:bf16m fp16-mixed:fp16m bf16:bf16 fp32:fp32; do
    exe "gpt2-${p##*:}" --set training.precision="${p%%:*}"
  done
  lib tiny-bf16m-cuda.so examples/tiny.json --set model.n_heads=2 \
    --set training.attention.kernel=flash --set training.precision=bf16-mixed
  lib tiny-fp16m-cuda.so examples/tiny.json --set model.n_heads=2 \
    --set training.attention.kernel=flash --set training.precision=fp16-mixed
  lib gpt2-bf16m-grad.so examples/gpt2-small.json --set training.precision=bf16-mixed \
    --set training.batch_size=2
}
remat() { # POLICIES (none gelu selective layer); B16=0: no micro-batch-16 executables;
           # MAX=0: no max-batch ones (the device tool carries 64 MiB: ~7 MB each)
  MAXMEM=${MAXMEM:-78GiB}
  : > runs/max-batch.txt
  for p in ${POLICIES:-none gelu selective layer}; do
    [ "$p" = none ] && [ -f runs/gpt2-bf16m.xz ] && cp runs/gpt2-bf16m.xz runs/gpt2-bf16m-none.xz
    [ "${B16:-1}" = 1 ] && [ ! -f "runs/gpt2-bf16m-$p.xz" ] && exe "gpt2-bf16m-$p" \
      --set training.precision=bf16-mixed --set training.checkpointing=$p
    line=$($TGC plan examples/gpt2-small.json --set training.precision=bf16-mixed \
      --set training.checkpointing=$p --max-batch --memory "$MAXMEM" 2>/dev/null | grep '^max micro-batch')
    b=$(echo "$line" | sed -E 's/max micro-batch: ([0-9]+).*/\1/')
    bytes=$(echo "$line" | sed -E 's/.*plan ([0-9]+) bytes.*/\1/')
    echo "$p $b $bytes" >> runs/max-batch.txt
    [ "${MAX:-1}" = 1 ] && exe "gpt2-bf16m-$p-max" --set training.precision=bf16-mixed \
      --set training.checkpointing=$p --set training.batch_size="$b"
  done
  cat runs/max-batch.txt
}
case "$WHAT" in
fp32)
  exe gpt2-cuda --set training.precision=fp32
  $TGC compile examples/gpt2-small.json --set training.precision=fp32 --set training.batch_size=2 \
    --emit=lib --target cuda -o runs/gpt2-grad.so
  $TGC compile examples/tiny.json --set model.n_heads=2 --set training.attention.kernel=flash \
    --target cuda --emit=lib -o runs/tiny-cuda.so
  gzip -c build/bin/tgrt-cuda-check > runs/tgrt-cuda-check.gz
  ;;
mixed) mixed; gzip -c build/bin/tgrt-cuda-check > runs/tgrt-cuda-check.gz ;;
remat) remat ;;
all) mixed; remat ;;
final)  # after the first 'all' run: bf16-mixed and its policies at B=16, the gradient
        # libraries and the kernel check (scripts/gpu-mixed.sh STEPS=30 CURVE=0, then
        # scripts/gpu-remat.sh MAX=0)
  exe gpt2-bf16m --set training.precision=bf16-mixed
  cp runs/gpt2-bf16m.xz runs/gpt2-bf16m-none.xz
  for p in gelu selective layer; do
    exe "gpt2-bf16m-$p" --set training.precision=bf16-mixed --set training.checkpointing=$p
  done
  lib tiny-bf16m-cuda.so examples/tiny.json --set model.n_heads=2 \
    --set training.attention.kernel=flash --set training.precision=bf16-mixed
  lib tiny-fp16m-cuda.so examples/tiny.json --set model.n_heads=2 \
    --set training.attention.kernel=flash --set training.precision=fp16-mixed
  lib tiny-bf16-cuda.so examples/tiny.json --set model.n_heads=2 \
    --set training.attention.kernel=flash --set training.precision=bf16
  lib gpt2-bf16m-grad.so examples/gpt2-small.json --set training.precision=bf16-mixed \
    --set training.batch_size=2
  gzip -c build/bin/tgrt-cuda-check > runs/tgrt-cuda-check.gz
  ;;
perf)  # scripts/gpu-perf.sh: this build's GPT-2 bf16-mixed (none, gelu) and kernel check
  TAG=${2:+-$2}
  for p in ${POLICIES:-none gelu}; do # checkpointing policies; none is plain gpt2-bf16m$TAG
    n=gpt2-bf16m-$p$TAG; [ "$p" = none ] && n=gpt2-bf16m$TAG
    exe "$n" --set training.precision=bf16-mixed --set training.checkpointing=$p
  done
  for s in ${SETS:-}; do # "name:PATH=VALUE": one more executable, gpt2-bf16m-name[-TAG]
    exe "gpt2-bf16m-${s%%:*}$TAG" --set training.precision=bf16-mixed --set "${s#*:}"
  done
  gzip -c build/bin/tgrt-cuda-check > "runs/tgrt-cuda-check$TAG.gz"
  ;;
dp)  # scripts/gpu-dp.sh: GPT-2 small bf16-mixed (or DP_SETS: "--set k=v ..." on top, named
     # DP_PREFIX), one rank x micro-batch B (DP_BATCH, 16), two ranks x B/2 (ZeRO-0 and
     # ZeRO-1) and two ranks x B
  # tgc's own attention kernels: the launcher and ZeRO-1 checks of gpu-dp.sh expect
  # bit-identical runs, and cuDNN's SDPA backward (the cuda default) is not run-to-run
  # deterministic (scripts/gpu-zero.sh measures it).
  P=${DP_PREFIX:-gpt2}; B=${DP_BATCH:-16}
  S=(--set training.precision=bf16-mixed --set training.attention.impl=own ${DP_SETS:-})
  exe "$P-dp1" "${S[@]}" --set training.batch_size=$B
  exe "$P-dp2" "${S[@]}" --set training.batch_size=$((B / 2)) --set training.distributed.ranks=2
  exe "$P-dp2z" "${S[@]}" --set training.batch_size=$((B / 2)) \
    --set training.distributed.ranks=2 --set training.distributed.zero=1
  exe "$P-dp2w" "${S[@]}" --set training.batch_size=$B --set training.distributed.ranks=2
  ;;
zero)  # scripts/gpu-zero.sh: GPT-2 small bf16-mixed, 2 ranks x micro-batch 8 under ZeRO-0..3
       # and ZeRO-3 + CPU offload; 1 rank x 16 with and without offload; and the largest model
       # (24 + k layers of d_model 4096, d_ff 16384, 32 heads, micro-batch 1, layer
       # checkpointing) that ZeRO-3 + offload fits in BIGMEM (76GiB) per GPU, from the plan
  # tgc's own attention kernels: cuDNN's SDPA backward (the cuda default) is not run-to-run
  # deterministic, so the bit-identity checks of the ZeRO machinery (ZeRO-1 vs 0, offload,
  # torchrun vs --gpus 2) need the own, deterministic kernels; zero-z0c (the default, cuDNN)
  # runs twice to measure cuDNN's run-to-run spread.
  S=(--set training.precision=bf16-mixed --set training.attention.impl=own)
  rm -rf runs/zero runs/zero.tar.xz runs/zero-*.xz; mkdir -p runs/zero
  exe() { # stripped, not compressed: one solid tar.xz at the end (they share the runtime)
    local name=$1; shift
    $TGC compile examples/gpt2-small.json --target cuda "$@" -o "runs/zero/$name"
    strip "runs/zero/$name"
  }
  exe zero-dp1 "${S[@]}" --set training.batch_size=16
  exe zero-off1 "${S[@]}" --set training.batch_size=16 --set training.optimizer.offload=cpu
  for z in 0 1 2 3; do
    exe zero-z$z "${S[@]}" --set training.batch_size=8 --set training.distributed.ranks=2 \
      --set training.distributed.zero=$z
  done
  exe zero-z3off "${S[@]}" --set training.batch_size=8 --set training.distributed.ranks=2 \
    --set training.distributed.zero=3 --set training.optimizer.offload=cpu
  exe zero-z0c --set training.precision=bf16-mixed --set training.batch_size=8 \
    --set training.distributed.ranks=2 --set training.distributed.zero=0
  BIG=(--set model.d_model=4096 --set model.n_heads=32 --set model.d_ff=16384
       --set training.batch_size=1 --set training.checkpointing=layer
       --set training.distributed.ranks=2 --set training.distributed.zero=3
       --set training.optimizer.offload=cpu "${S[@]}")
  lim=$(python3 -c "import sys;u={'GiB':30,'MiB':20};s=sys.argv[1];print(int(float(s[:-3]))<<u[s[-3:]])" "${BIGMEM:-76GiB}")
  bigtotal() { # layers -> the plan's per-rank device bytes
    $TGC plan examples/gpt2-small.json "${BIG[@]}" --set model.n_layers=$1 --json runs/big.json \
      > /dev/null 2>&1
    python3 -c "import json,sys;print(json.load(open('runs/big.json'))['total_bytes'])"
  }
  L=8
  while :; do # the largest layer count whose per-rank device total fits
    t=$(bigtotal $((L + 4)))
    [ "$t" -le "$lim" ] || break
    L=$((L + 4))
  done
  while t=$(bigtotal $((L + 1))) && [ "$t" -le "$lim" ]; do
    L=$((L + 1))
  done
  rm -f runs/big.json
  echo "largest: $L layers" | tee runs/zero-big.txt
  $TGC plan examples/gpt2-small.json "${BIG[@]}" --set model.n_layers=$L | sed -n 1,14p >> runs/zero-big.txt
  $TGC summary examples/gpt2-small.json "${BIG[@]}" --set model.n_layers=$L | grep "total parameters" >> runs/zero-big.txt
  exe zero-big "${BIG[@]}" --set model.n_layers=$L
  tar -C runs -cf - zero | xz -9 -T1 --lzma2=preset=9,dict=256MiB > runs/zero.tar.xz
  rm -rf runs/zero
  ls -la runs/zero.tar.xz
  ;;
sanitize)  # scripts/gpu-sanitize.sh: the kernel check and GPT-2 small at micro-batch 1:
           # bf16-mixed flash (the default path) and fp32 naive
  rm -f runs/san-*.xz
  exe san-bf16m-flash --set training.precision=bf16-mixed --set training.attention.kernel=flash \
    --set training.batch_size=1
  exe san-fp32-naive --set training.precision=fp32 --set training.attention.kernel=naive \
    --set training.batch_size=1
  gzip -c build/bin/tgrt-cuda-check > runs/tgrt-cuda-check.gz
  ;;
experiment)  # scripts/gpu-artifacts.sh experiment MATRIX NAME: `tgc experiment --stage compile`
             # for CUDA into runs/NAME, executables stripped, one solid tar.xz (the configs
             # share the runtime, so they compress together to a few MB); for
             # scripts/gpu-experiment.sh
  MATRIX=${2:?matrix file}; NAME=${3:?name}
  rm -rf "runs/$NAME" "runs/$NAME.tar.xz"
  $TGC experiment "$MATRIX" --out "runs/$NAME" --stage compile --target cuda \
    --memory "${MAXMEM:-78GiB}" --data runs/data-gpu
  for f in runs/"$NAME"/configs/*/train; do strip "$f"; done
  tar -C runs -cf - "$NAME" | xz -9 -T1 --lzma2=preset=9,dict=256MiB > "runs/$NAME.tar.xz"
  rm -rf "runs/$NAME"
  ls -la "runs/$NAME.tar.xz"
  ;;
*) echo "usage: $0 fp32|mixed|remat|all|final|perf [TAG]|dp|zero|sanitize|experiment MATRIX NAME" >&2; exit 2 ;;
esac
[ -f runs/data-gpu/meta.json ] || $TGC data prepare --input /usr/share/doc/linux-doc-*/Documentation \
  --vocab 8192 --max-bytes 8MiB --out runs/data-gpu
du -sh runs
