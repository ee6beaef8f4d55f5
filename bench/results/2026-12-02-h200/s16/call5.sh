# call5 (sixteenth session): after the review mends (placeOf through ptrOf; compile-time code
# only): GPT-2 small default, 2 repetitions: plan against used, ms and the final losses
# against call1 / call2 (the same calls expected).
set -u
source scripts/gpu-lib.sh
gpu_unpack s16c5
export B L
timeout 200 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L 2 "gpt2s" "-"'
grep -h "tgrt: cuda memory on" $L/tgc-*.log | cut -c1-200
grep -h '"final":true' $L/tgc-gpt2s-*.jsonl | cut -c1-120
cd $L && tar -cJf $OUT/logs.tar.xz . && cd - > /dev/null
steps_summary $L
