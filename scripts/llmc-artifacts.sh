#!/usr/bin/env bash
# Builds karpathy's llm.c `train_gpt2cu` (GPT-2, bf16, cuDNN flash attention, one GPU) HERE
# (no GPU needed) as tgc's external timing comparator; bench/llmc_step.sh runs it on the GPU
# machine, which needs no compiler. See docs/llmc.md.
#   scripts/llmc-artifacts.sh
# Output (runs/ is git-ignored):
#   runs/llmc/train_gpt2cu   stripped executable (~2 MB)
#   runs/llmc/COMMIT.txt     llm.c commit, cudnn-frontend version, exact nvcc lines, NEEDED libs
#   runs/llmc/llmc.tar.xz    the two above, for carrying one file
# Scratch: runs/llmc-build/ (source export, cudnn-frontend headers, objects).
# Environment:
#   LLMC_SRC=DIR        an llm.c checkout to build from (default: `git archive` of LLMC_REF from
#                       the git mirror /work/.mirror/karpathy+llm.c*, as the search tool's fetch
#                       of github:karpathy/llm.c leaves it)
#   LLMC_REF=REV        revision exported from the mirror (default HEAD)
#   CUDNN_FE_VERSION    nvidia-cudnn-frontend wheel whose headers are used (default 1.18.0, the
#                       one scripts/setup.sh gives tgc's own cuDNN attention; its headers need
#                       no NVRTC, unlike 1.2x+, so the binary needs only libcudnn + libcublasLt)
#   GPU_ARCH            compute capability (default 90: H100 / H200)
#   NVCC                (default /usr/local/cuda/bin/nvcc)
# llm.c's source is never copied into this repository; it is exported at build time only.
# Build choices (llm.c's Makefile with USE_CUDNN=1 NO_MULTI_GPU=1 NO_USE_MPI=1 PRECISION=BF16
# GPU_COMPUTE_CAPABILITY=90, invoked by hand so the lines are exact and recorded):
#  - no NCCL / MPI: without -DMULTI_GPU llmc/zero.cuh includes neither.
#  - CUDA 13 changed cudaMemAdvise's last parameter from `int device` to `cudaMemLocation`;
#    llmc/cuda_utils.cuh (cudaMallocConditionallyManaged, used only when cudaMalloc runs out
#    of memory) still passes cudaCpuDeviceId. Instead of editing llm.c, a forced include
#    (-include, written below into runs/llmc-build/compat/) adds the old overload, forwarding
#    to the new one. No llm.c file is modified.
#  - -lnvidia-ml (the Makefile's) only when the toolkit has nvml.h: llmc/mfu.h uses NVML only
#    `#if __has_include(<nvml.h>)`, and only for -lg GPU-info lines.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CUDNN_FE_VERSION=${CUDNN_FE_VERSION:-1.18.0}
GPU_ARCH=${GPU_ARCH:-90}
LLMC_REF=${LLMC_REF:-HEAD}
B=runs/llmc-build
O=runs/llmc
mkdir -p "$B" "$O"

# --- llm.c source ---------------------------------------------------------------------------
if [ -n "${LLMC_SRC:-}" ]; then
  SRC=$(cd "$LLMC_SRC" && pwd)
  COMMIT=$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo "${LLMC_COMMIT:-unknown}")
  ORIGIN="LLMC_SRC=$SRC"
else
  MIRROR=""
  for m in /work/.mirror/karpathy+llm.c*; do
    for g in "$m/repo" "$m"; do
      if git --git-dir="$g" rev-parse -q --verify "$LLMC_REF^{commit}" >/dev/null 2>&1; then
        MIRROR=$g; break 2
      fi
    done
  done
  [ -n "$MIRROR" ] || { echo "llmc-artifacts: no llm.c mirror under /work/.mirror/karpathy+llm.c*" \
    "(fetch github:karpathy/llm.c) and no LLMC_SRC" >&2; exit 1; }
  COMMIT=$(git --git-dir="$MIRROR" rev-parse "$LLMC_REF^{commit}")
  SRC=$ROOT/$B/src
  if [ "$(cat "$SRC/.llmc-commit" 2>/dev/null)" != "$COMMIT" ]; then
    rm -rf "$SRC"; mkdir -p "$SRC"
    git --git-dir="$MIRROR" archive "$COMMIT" | tar -x -C "$SRC"
    echo "$COMMIT" > "$SRC/.llmc-commit"
  fi
  ORIGIN="git archive $COMMIT of mirror $MIRROR"
fi
[ -f "$SRC/train_gpt2.cu" ] && [ -f "$SRC/llmc/cudnn_att.cpp" ] ||
  { echo "llmc-artifacts: $SRC is not an llm.c tree" >&2; exit 1; }
echo "[llmc] source: $ORIGIN"

# --- cudnn-frontend headers: the ones scripts/setup.sh unpacked for tgc's own cuDNN attention
# (.deps/cudnn-frontend, the PyPI wheel's headers, CUDNN_FE_VERSION there), not a second copy.
FE=$ROOT/.deps/cudnn-frontend
if [ "$(cat "$FE/VERSION" 2>/dev/null)" != "$CUDNN_FE_VERSION" ] || [ ! -f "$FE/include/cudnn_frontend.h" ]; then
  echo "llmc-artifacts: no cudnn-frontend $CUDNN_FE_VERSION headers in $FE: run scripts/setup.sh first" >&2
  exit 1
fi
CUDNN_H=$(dirname "$NVCC")/../include/cudnn_version.h
CUDNN_BUILD=$(awk '/#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) /{printf "%s%s", (n++ ? "." : ""), $3}' "$CUDNN_H" 2>/dev/null || true)

# --- CUDA 13 shim (ours, not llm.c's) -------------------------------------------------------
mkdir -p "$B/compat"
cat > "$B/compat/llmc_cuda13_compat.h" <<'EOF'
// tgc's forced include for building llm.c with CUDA >= 13 (scripts/llmc-artifacts.sh):
// CUDA 13's cudaMemAdvise takes a cudaMemLocation; llm.c passes an int device id.
#pragma once
#include <cuda_runtime_api.h>
#if defined(__cplusplus) && defined(CUDART_VERSION) && CUDART_VERSION >= 13000
static inline cudaError_t cudaMemAdvise(const void* p, size_t n, enum cudaMemoryAdvise a, int device) {
    cudaMemLocation loc;
    loc.type = (device == cudaCpuDeviceId) ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    loc.id = (device == cudaCpuDeviceId) ? 0 : device;
    return cudaMemAdvise(p, n, a, loc);
}
#endif
EOF

# --- build (the Makefile's lines for train_gpt2cu with USE_CUDNN=1, by hand) ----------------
NVCC_FLAGS="--threads=0 -t=0 --use_fast_math -std=c++17 -O3 --generate-code arch=compute_${GPU_ARCH},code=[compute_${GPU_ARCH},sm_${GPU_ARCH}] -DENABLE_CUDNN"
PFLAGS="-DENABLE_BF16"
NVCC_LDFLAGS="-lcublas -lcublasLt -lcudnn"
if [ -f "$(dirname "$NVCC")/../include/nvml.h" ]; then
  NVCC_LDFLAGS="$NVCC_LDFLAGS -L$(dirname "$NVCC")/../lib64/stubs -lnvidia-ml"
fi
NVCC_INCLUDES="-I$FE/include -include $ROOT/$B/compat/llmc_cuda13_compat.h"
OBJ=$ROOT/$B/cudnn_att.o
LINE1="$NVCC -c $NVCC_FLAGS $PFLAGS llmc/cudnn_att.cpp -I$FE/include -o $OBJ"
LINE2="$NVCC $NVCC_FLAGS $PFLAGS train_gpt2.cu $OBJ $NVCC_LDFLAGS $NVCC_INCLUDES -o $ROOT/$O/train_gpt2cu"
rm -f "$OBJ" "$O/train_gpt2cu" "$O/llmc.tar.xz"
set -f  # the --generate-code argument has [..]: no globbing of the unquoted lines
echo "[llmc] $LINE1"
( cd "$SRC" && $LINE1 2>&1 | grep -v "Wdeprecated-declarations\|^ *[0-9]* |\|note: declared here\|In file included\|^ *from \|In function\|^ *|" || true )
[ -f "$OBJ" ] || { echo "llmc-artifacts: cudnn_att.o failed" >&2; exit 1; }
echo "[llmc] $LINE2"
( cd "$SRC" && $LINE2 )
set +f
strip "$O/train_gpt2cu"
NEEDED=$(objdump -p "$O/train_gpt2cu" | awk '/NEEDED/{print $2}' | tr '\n' ' ')
GLIBC_MAX=$(objdump -T "$O/train_gpt2cu" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -1)
GLIBCXX_MAX=$(objdump -T "$O/train_gpt2cu" | grep -o 'GLIBCXX_[0-9.]*' | sort -V | tail -1)
{
  echo "llm.c commit: $COMMIT"
  echo "llm.c source: $ORIGIN"
  echo "cudnn-frontend: $CUDNN_FE_VERSION (PyPI nvidia-cudnn-frontend, headers only)"
  echo "cuDNN headers at build: ${CUDNN_BUILD:-?}; $("$NVCC" --version | tail -1)"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "llm.c sources unmodified; forced include $B/compat/llmc_cuda13_compat.h (cudaMemAdvise int overload for CUDA 13)"
  echo "nvcc (cwd = llm.c tree):"
  echo "  $LINE1"
  echo "  $LINE2"
  echo "  strip train_gpt2cu"
  echo "NEEDED: $NEEDED"
  echo "symbol versions: $GLIBC_MAX $GLIBCXX_MAX"
  echo "ldd here:"
  ldd "$O/train_gpt2cu" | sed 's/^/ /'
  echo "sha256: $(sha256sum "$O/train_gpt2cu" | cut -d' ' -f1)"
} > "$O/COMMIT.txt"
tar -C "$O" -cJf "$O/llmc.tar.xz" train_gpt2cu COMMIT.txt
cat "$O/COMMIT.txt"
ls -la "$O"
