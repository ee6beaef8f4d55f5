# call2 (fifteenth session): the gradient matrix on CUDA. Carried: runs/gm.tar.xz, the
# libraries of `test/e2e/grad_matrix.py --target cuda --compile-only --keep runs/gm` (17 rows:
# checkpointing x gradient placement x bias rows x precision x attention x grad_accum x
# dropout x Llama) and runs/gm/gpt2s-sel-persistent-fp32.so (GPT-2 small, fp32, micro-batch 2,
# selective, persistent gradient slots, bias rows: tgrt_add_layer_norm_fwd_ones and
# tgrt_matmul_acc_lda at d 768), all stripped. Each against PyTorch float64 on the GPU.
set -u
tar -C /tmp -xJf runs/gm.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== 1. grad matrix (CUDA libraries, float64 reference on cuda)"
timeout 300 python3 test/e2e/grad_matrix.py --tg-src . --libs /tmp/gm --device cuda 2>&1 | tee $OUT/grad-matrix.log
echo "== 2. GPT-2 small fp32, selective, persistent slots, bias rows"
timeout 240 bash scripts/gpu-grad-check.sh /tmp/gm/gpt2s-sel-persistent-fp32.so - 2>&1 | tail -25
