# call1 (seventh session): (1) the cost model's loss points with the cross-entropy's variant
# per vocabulary, the head-dim-128 point (16384 x 1024 x 32000) now in the grid
# (tgc-calibrate-cuda --only loss: the committed h200 table with that group replaced);
# (2) the cross-entropy's two variants across vocabularies (tgrt-cuda-check --bench-kernels,
# rows "sweep": the rule ceVariantFor against measurement); (3) TGRT_ATTN_TUNE_LOG=1 read at
# context creation (2 steps of hd128); (4) head dim 128 against torch.compile, tgc with the
# toolkit's cuDNN (9.14) and with torch's (9.19, its wheel's lib first on LD_LIBRARY_PATH),
# 3 alternating repetitions of 20 steps; (5) the bias gradients' row chunks: the column sums
# alone at 768-4096 columns by default and with TGRT_BGRAD_CHUNKS 8, 32, 64, and hd128's steps
# with 32 (384 first-stage blocks at 3072 columns, 512 at 4096, against about 192).
set -u
source scripts/gpu-lib.sh
gpu_unpack s7c1
timeout 120 $B/tgc-calibrate-cuda --out $OUT/h200.json --only loss calibration/h200.json \
  > $L/calibrate.log 2>&1; echo "calibrate rc $?"; tail -3 $L/calibrate.log | cut -c1-200
TGRT_KERNEL_BENCH_ONLY=sweep timeout 120 $B/tgrt-cuda-check --bench-kernels > $L/ce-sweep.log 2>&1
echo "sweep rc $?"; grep sweep $L/ce-sweep.log
for ch in default 8 32 64; do
  ( [ $ch = default ] || export TGRT_BGRAD_CHUNKS=$ch
    TGRT_KERNEL_BENCH_ONLY=bias_grad timeout 60 $B/tgrt-cuda-check --bench-kernels ) \
    > $L/bgrad-$ch.log 2>&1
  echo "chunks $ch:"; grep "bias_grad.*bf16" $L/bgrad-$ch.log
done
mkdata $B/data-32000 32000 4000000
TGRT_ATTN_TUNE_LOG=1 timeout 120 $B/hd128 --data $B/data-32000 --steps 2 --eval-every 0 \
  --eval-batches 1 > $L/tune-log.log 2>&1; echo "tune-log rc $?"
grep -c "cuDNN attention" $L/tune-log.log; grep -m4 "heuristic\]" $L/tune-log.log | cut -c1-220
TL=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], 'lib'))")
export B L TL
timeout 300 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 3 "hd128" "- LD_LIBRARY_PATH=$TL:/usr/local/cuda/lib64 TGRT_BGRAD_CHUNKS=32 torch"'
steps_summary $L
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
