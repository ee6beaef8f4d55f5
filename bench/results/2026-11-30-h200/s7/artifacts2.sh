#!/usr/bin/env bash
# s7 call2's executables (built here, no GPU): GPT-2 small under every checkpointing policy
# that `tgc plan --set training.checkpointing=auto:6GiB|auto:7GiB --calibration
# calibration/h200.json` weighs, named by policy; the two budgets are the ones auto resolves
# to (auto6 = budget:3587549952, auto7's budget candidate = budget:4661291776), the auto
# specs compiled as such. Output: runs/llama/llama.tar.xz (carry runs/llama).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
rm -rf runs/llama && mkdir -p runs/llama/llama
c() { build/bin/tgc compile examples/gpt2-small.json --target cuda --calibration calibration/h200.json "$@" 2>&1 | grep -v '^$' | tail -2; }
for p in none gelu selective layer-attn layer budget:4661291776; do
  n=gpt2s_$(echo $p | tr ':-' '__'); c --set training.checkpointing=$p -o runs/llama/llama/$n; strip runs/llama/llama/$n
done
c --set training.checkpointing=auto:6GiB -o runs/llama/llama/gpt2s_auto6 && strip runs/llama/llama/gpt2s_auto6
c --set training.checkpointing=auto:7GiB -o runs/llama/llama/gpt2s_auto7 && strip runs/llama/llama/gpt2s_auto7
tar -C runs/llama -cf - llama | xz -9 -T2 > runs/llama/llama.tar.xz
rm -rf runs/llama/llama
ls -la runs/llama
