#!/usr/bin/env bash
# Installs every Debian package tgc needs (idempotent), then configures and builds.
#   scripts/setup.sh            install + configure + build (build/)
#   scripts/setup.sh --deps     install packages only
# CUDA is optional: the CUDA runtime is built when /usr/local/cuda/bin/nvcc exists.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(
  cmake ninja-build g++ git python3 python3-pip
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  nlohmann-json3-dev libcli11-dev libgtest-dev
  libopenblas-dev libsentencepiece-dev sentencepiece
  linux-doc
  python3-torch python3-numpy python3-matplotlib
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[setup] installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "[setup] all Debian packages present"
fi
[ "${1:-}" = "--deps" ] && exit 0

CUDA_ARGS=()
if [ -x /usr/local/cuda/bin/nvcc ]; then
  CUDA_ARGS=(-DTGC_ENABLE_CUDA=ON -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
else
  CUDA_ARGS=(-DTGC_ENABLE_CUDA=OFF)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py \
  "${CUDA_ARGS[@]}"
ninja -C build -j"${JOBS:-2}"
