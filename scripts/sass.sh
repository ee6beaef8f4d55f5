#!/usr/bin/env bash
# sass.sh OBJECT PATTERN: registers, spills and SASS of the kernels in a CUDA object (e.g.
# build/runtime/cuda/CMakeFiles/tgrt_cuda_impl.dir/Kernels.cu.o) whose mangled name matches
# PATTERN (grep -E), with the static instruction count of each backward branch (a loop).
# The CUDA toolkit on the build machine has no cuobjdump: this fetches NVIDIA's
# nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels (cuobjdump -sass runs nvdisasm) from
# PyPI into .deps/cuobjdump once (pip download, no install).
# Output: OBJECT's resource usage of the matches on stdout, their SASS in /tmp/sass-<pid>.txt.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 OBJECT PATTERN" >&2; exit 2; }
obj=$1 pat=$2
cd "$(dirname "$0")/.."
d=.deps/cuobjdump
if [ ! -x "$d/nvidia/cu13/bin/cuobjdump" ] || [ ! -x "$d/nvidia/cu13/bin/nvdisasm" ]; then
  mkdir -p "$d"
  python3 -m pip download --no-deps -q -d "$d" nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
  (cd "$d" && for w in *.whl; do python3 -m zipfile -e "$w" .; done &&
    chmod +x nvidia/cu13/bin/cuobjdump nvidia/cu13/bin/nvdisasm)
fi
export PATH=$PWD/$d/nvidia/cu13/bin:$PATH
cub=cuobjdump
out=/tmp/sass-$$.txt
"$cub" -res-usage "$obj" 2>&1 | grep -A1 -E "Function .*($pat)" | grep -o "Function [^:]*\|REG:[0-9]*\|STACK:[0-9]*" \
  | paste - - - | c++filt | awk -F'\t' '{print $2, $3, substr($1, 10, 160)}'
"$cub" -sass "$obj" > "$out"
python3 - "$out" "$pat" <<'PY'
import re, sys
for f in open(sys.argv[1]).read().split("Function : ")[1:]:
    name = f.split("\n")[0]
    if not re.search(sys.argv[2], name): continue
    ins = re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", f)
    loops = []
    for a, t in ins:
        m = re.search(r"BRA (0x[0-9a-f]+)", t)
        if m and int(m.group(1), 16) < int(a, 16):
            loops.append((int(a, 16) - int(m.group(1), 16)) // 16)
    print(f"{name[:100]}: {len(ins)} instructions; loops (instructions): {loops[:8]}")
PY
echo "SASS: $out"
