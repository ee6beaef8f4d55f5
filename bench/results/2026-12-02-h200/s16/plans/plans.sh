T=$1
p() { name=$1; shift; $T plan "$@" --json /tmp/pj.json > /dev/null 2>/tmp/pj.err || { echo "$name FAILED $(tail -1 /tmp/pj.err)"; return; }; python3 -c "
import json;d=json.load(open('/tmp/pj.json'));print('$name', d['total_bytes'], d['arena_bytes'], d.get('remat_policy',''))"; }
p gpt2s examples/gpt2-small.json --set training.checkpointing=none
p gpt2s-sel examples/gpt2-small.json --set training.checkpointing=selective
p gpt2s-layer examples/gpt2-small.json --set training.checkpointing=layer
p gpt2s-budget4g examples/gpt2-small.json --set training.checkpointing=budget:4GiB
p hd128 examples/gpt2-small.json --set model.n_layers=8 --set model.d_model=1024 --set model.n_heads=8 --set model.d_ff=4096 --set model.vocab_size=32000 --set model.context=2048 --set training.batch_size=8 --set training.checkpointing=none
p gpt2m examples/gpt2-small.json --set model.n_layers=24 --set model.d_model=1024 --set model.n_heads=16 --set model.d_ff=4096 --set training.batch_size=8 --set training.checkpointing=none
p gpt2l examples/gpt2-small.json --set model.n_layers=36 --set model.d_model=1280 --set model.n_heads=20 --set model.d_ff=5120 --set training.batch_size=8 --set training.checkpointing=none
p smollm2 examples/smollm2-135m.json --set training.checkpointing=none
p smollm2u examples/smollm2-135m.json --set model.tie_embeddings=false --set training.checkpointing=none
p llama1b examples/llama3.2-1b.json --set training.checkpointing=none
p llama1b-sel examples/llama3.2-1b.json --set training.checkpointing=selective
p llama1bu examples/llama3.2-1b.json --set model.tie_embeddings=false --set training.checkpointing=none
p lab-ctx256 examples/lab-12l-768-ctx256.json --set training.checkpointing=none
p llama8b-shape examples/llama3.2-1b.json --set model.n_layers=32 --set model.d_model=4096 --set model.n_heads=32 --set model.n_kv_heads=8 --set model.head_dim=128 --set model.d_ff=14336 --set model.tie_embeddings=false --set model.rope_theta=500000 --set training.batch_size=1 --set model.context=8192 --set training.checkpointing=selective
