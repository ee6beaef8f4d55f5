# call4 (fifteenth session): the grad matrix's 21 rows (test/e2e/grad_matrix.py at d9fba6a,
# compiled with --target cuda, carried as runs/gm.tar.xz) against PyTorch float64 on the GPU.
set -u
tar -C /tmp -xJf runs/gm.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 400 python3 test/e2e/grad_matrix.py --tg-src . --libs /tmp/gm --device cuda 2>&1 | tee $OUT/grad-matrix.log
