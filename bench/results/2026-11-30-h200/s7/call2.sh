# call2 (seventh session): training.checkpointing auto:<memory> on the GPU. GPT-2 small,
# bf16-mixed, micro-batch 16, compiled here (s7/artifacts2.sh) with calibration/h200.json:
# auto:6GiB resolves to budget:3587549952 (predicted 32.67 ms, ahead of layer-attn 35.03 and
# layer 35.97; none, gelu, selective do not fit), auto:7GiB to gelu (30.98, ahead of selective
# 31.60 and budget:4661291776 31.64). Every candidate trained: 3 alternating repetitions of 20
# steps, and the process's device memory (NVML) against the memory asked for.
set -u
source scripts/gpu-lib.sh
gpu_unpack s7c2
export B L
M="gpt2s_none gpt2s_gelu gpt2s_selective gpt2s_layer_attn gpt2s_layer gpt2s_auto6 gpt2s_budget_4661291776 gpt2s_auto7"
timeout 420 bash -c "source scripts/gpu-lib.sh; steps_ab $B $L 3 \"$M\" -"
steps_summary $L
echo; echo "| executable | plan bytes | process bytes (NVML, max of 3) | GiB |"; echo "|---|---|---|---|"
for m in $M; do
  mx=$(grep -h "cuda process memory at the end" $L/tgc-$m---*.log | sed -E 's/.*: ([0-9]+) bytes = plan ([0-9]+).*/\1 \2/' | sort -n | tail -1)
  set -- $mx; echo "| $m | ${2:-?} | ${1:-?} | $(python3 -c "print(f'{${1:-0}/2**30:.3f}')") |"
done
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
