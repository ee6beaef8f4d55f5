// Parse errors of the enum attributes (test/dialect/enums.mlir runs this file): an unknown
// value is located at the value and lists the cases (generated from dialect/TgEnums.td).

// expected-error @+1 {{unknown precision 'fp8' (expected one of fp32, bf16-mixed, fp16-mixed, bf16)}}
module attributes {tg.precision = #tg.precision<fp8>} {
}

// -----

// The C++ name of a case is not its spelling.
// expected-error @+1 {{unknown precision 'bf16_mixed' (expected one of fp32, bf16-mixed, fp16-mixed, bf16)}}
module attributes {tg.precision = #tg.precision<bf16_mixed>} {
}

// -----

// expected-error @+1 {{unknown checkpointing 'full' (expected one of none, gelu, layer, layer-attn, selective, budget)}}
module attributes {tg.c = #tg.checkpointing<"full">} {
}

// -----

// expected-error @+1 {{unknown offload 'gpu' (expected one of none, cpu)}}
module attributes {tg.o = #tg.offload<gpu>} {
}

// -----

// expected-error @+1 {{expected '<'}}
module attributes {tg.o = #tg.offload} {
}
