# call4 (eleventh session): call3's executables (24b71b1, bias rows on by default) against
# llm.c -r 0 -ge 2 (its GELU-fused path, which ran 30.52 / 32.49 / 33.97 ms in call3's three
# repetitions) and -r 0: 4 alternating repetitions of 20 steps, GPT-2 small.
set -u
source scripts/gpu-lib.sh
gpu_unpack s11c4
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
export B L
timeout 400 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 4 "gpt2s" "- llmc-r0ge2 llmc-r0"'
echo "gpt2s rc $?"
for f in $L/llmc-*-gpt2s-*.json; do echo "$(basename $f) $(python3 -c "import json,sys; r=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); print(r['ms'], r['ms_min'], r['ms_max'])" $f)"; done
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
