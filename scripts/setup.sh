#!/usr/bin/env bash
# Installs every Debian package tgc needs (idempotent), then configures and builds.
#   scripts/setup.sh            install + configure + build (build/)
#   scripts/setup.sh --deps     install packages only
# Both also create .venv-hf/ (a venv over Debian's python3 and torch with Hugging Face
# transformers, tokenizers and pyarrow from PyPI, pinned) for `tgc export --hf` and
# `tgc data prepare --tokenizer` / .parquet and their tests; a failure there is a warning:
# those lit tests then report UNSUPPORTED.
# CUDA is optional: the CUDA runtime is built when /usr/local/cuda/bin/nvcc exists.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(
  cmake ninja-build g++ git python3 python3-pip
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  nlohmann-json3-dev libcli11-dev libgtest-dev
  libopenblas-dev libsentencepiece-dev sentencepiece libssl-dev
  linux-doc
  python3-torch python3-numpy python3-matplotlib python3-venv
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

# Hugging Face transformers (not packaged by Debian) in .venv-hf/, over the system
# site-packages so that it uses Debian's torch 1.13: 4.45.2 is a release that supports it
# and reads every LlamaConfig field tgc exports (head_dim, mlp_bias, rope_type "llama3";
# 4.38 reads none of them). docs/hf.md. `tgc data prepare` runs its Python worker here
# (docs/prepare.md): tokenizers for --tokenizer, pyarrow for .parquet inputs (17.0.0: works
# with Debian's numpy 1.24); sentencepiece and protobuf let transformers load the
# tokenizer.model that `tgc export --data` copies (LlamaTokenizer, and its conversion to
# LlamaTokenizerFast).
HF_PIP=(transformers==4.45.2 tokenizers==0.20.3 huggingface-hub==0.36.2 safetensors==0.8.0
        pyarrow==17.0.0 sentencepiece==0.2.0 protobuf==4.25.5)
if .venv-hf/bin/python -c 'import transformers, torch, tokenizers, pyarrow, sentencepiece
import google.protobuf
assert transformers.__version__ == "4.45.2" and pyarrow.__version__ == "17.0.0"' \
    >/dev/null 2>&1; then
  echo "[setup] .venv-hf: transformers 4.45.2, pyarrow 17.0.0 present"
else
  echo "[setup] .venv-hf: installing ${HF_PIP[*]}"
  if ! { /usr/bin/python3 -m venv --system-site-packages .venv-hf &&
         .venv-hf/bin/pip install -q --disable-pip-version-check "${HF_PIP[@]}"; }; then
    echo "[setup] warning: could not install transformers into .venv-hf; the Hugging Face" \
         "export/import and data prepare --tokenizer tests will be UNSUPPORTED"
  fi
fi
# cuDNN's fused attention (TGRT_ATTN=cudnn; runtime/cuda/CudnnAttention.cu) goes through
# the header-only cudnn-frontend C++ API, only where the CUDA toolkit has cuDNN. Its PyPI
# wheel carries the headers under include/ (the same in every wheel of a release, so one
# fixed tag is fetched); they are unpacked into .deps/cudnn-frontend/include (git-ignored),
# which CMake looks for (runtime/cuda/CMakeLists.txt). 1.18.0: C++17, knows cuDNN 9.19,
# grouped-query SDPA forward and backward. A failure is a warning: the CUDA runtime is then
# built without cuDNN (the own attention kernels only), as before.
CUDNN_FE_VERSION=1.18.0
CUDNN_FE_DIR=.deps/cudnn-frontend
if [ -f /usr/local/cuda/include/cudnn.h ]; then
  if [ "$(cat "$CUDNN_FE_DIR/VERSION" 2>/dev/null)" = "$CUDNN_FE_VERSION" ] &&
     [ -f "$CUDNN_FE_DIR/include/cudnn_frontend.h" ]; then
    echo "[setup] cudnn-frontend $CUDNN_FE_VERSION present"
  else
    echo "[setup] cudnn-frontend: fetching $CUDNN_FE_VERSION (headers) into $CUDNN_FE_DIR"
    fe_tmp=$(mktemp -d)
    if /usr/bin/python3 -m pip download -q --disable-pip-version-check --no-deps \
         --only-binary=:all: --platform manylinux_2_28_x86_64 --python-version 3.11 \
         --implementation cp --abi cp311 "nvidia-cudnn-frontend==$CUDNN_FE_VERSION" \
         -d "$fe_tmp" &&
       /usr/bin/python3 - "$fe_tmp" "$CUDNN_FE_DIR" "$CUDNN_FE_VERSION" <<'PY'
import glob, os, shutil, sys, zipfile
tmp, dest, version = sys.argv[1:4]
wheels = glob.glob(os.path.join(tmp, "*.whl"))
if len(wheels) != 1:
    sys.exit("expected one wheel, found %d" % len(wheels))
shutil.rmtree(dest, ignore_errors=True)
with zipfile.ZipFile(wheels[0]) as z:
    names = [n for n in z.namelist() if n.startswith("include/") and not n.endswith("/")]
    if "include/cudnn_frontend.h" not in names:
        sys.exit("the wheel has no include/cudnn_frontend.h")
    for n in names:
        z.extract(n, dest)
with open(os.path.join(dest, "VERSION"), "w") as f:
    f.write(version + "\n")
PY
    then
      echo "[setup] cudnn-frontend $CUDNN_FE_VERSION unpacked"
    else
      echo "[setup] warning: could not fetch cudnn-frontend; the CUDA runtime is built" \
           "without cuDNN attention"
      rm -rf "$CUDNN_FE_DIR"
    fi
    rm -rf "$fe_tmp"
  fi
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
