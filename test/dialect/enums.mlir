// The training policies' enum attributes (dialect/TgEnums.td): round trip, parse errors,
// and the pass options typed by the same enums.
// RUN: tg-opt %s -split-input-file | tg-opt -split-input-file | FileCheck %s
// RUN: tg-opt %S/Inputs/enums-errors.mlir -split-input-file -verify-diagnostics
//
// An unknown value of a pass option is refused at the option, listing the enum's cases.
// RUN: not tg-opt %s -tg-mixed-precision=precision=fp8 2>&1 | FileCheck %s --check-prefix=OPT-PREC
// OPT-PREC: for the --precision option: 'fp8' is not one of fp32, bf16-mixed, fp16-mixed, bf16
// RUN: not tg-opt %s -tg-rematerialize=policy=Layer 2>&1 | FileCheck %s --check-prefix=OPT-REMAT
// OPT-REMAT: for the --policy option: 'Layer' is not one of none, gelu, layer, layer-attn, selective, budget
// RUN: not tg-opt %s -tg-plan-memory=offload=gpu 2>&1 | FileCheck %s --check-prefix=OPT-OFFLOAD
// OPT-OFFLOAD: for the --offload option: 'gpu' is not one of none, cpu
// RUN: not tg-opt %s -tg-pipeline="precision=bf16_mixed" 2>&1 | FileCheck %s --check-prefix=PIPE-PREC
// PIPE-PREC: for the --precision option: 'bf16_mixed' is not one of fp32, bf16-mixed, fp16-mixed, bf16
// RUN: not tg-opt %s -tg-pipeline="checkpointing=full" 2>&1 | FileCheck %s --check-prefix=PIPE-CK
// PIPE-CK: for the --checkpointing option: 'full' is not one of none, gelu, layer, layer-attn, selective, budget
// RUN: not tg-opt %s -tg-pipeline="offload=host" 2>&1 | FileCheck %s --check-prefix=PIPE-OFF
// PIPE-OFF: for the --offload option: 'host' is not one of none, cpu
//
// The spelling of a value is the spec's: the option reads it as written there.
// RUN: tg-opt %s -tg-pipeline="precision=fp16-mixed checkpointing=layer-attn offload=cpu until=forward" -o /dev/null

// A case whose string form is a keyword prints bare, the others quoted.
// CHECK-LABEL: module attributes
// CHECK-SAME: tg.a = #tg.precision<fp32>
// CHECK-SAME: tg.b = #tg.precision<"bf16-mixed">
// CHECK-SAME: tg.c = #tg.precision<"fp16-mixed">
// CHECK-SAME: tg.d = #tg.precision<bf16>
module attributes {tg.a = #tg.precision<fp32>, tg.b = #tg.precision<"bf16-mixed">,
                   tg.c = #tg.precision<"fp16-mixed">, tg.d = #tg.precision<bf16>} {
}

// -----

// The quotes are optional where the string form is a keyword.
// CHECK-LABEL: module attributes
// CHECK-SAME: tg.a = #tg.checkpointing<none>
// CHECK-SAME: tg.b = #tg.checkpointing<gelu>
// CHECK-SAME: tg.c = #tg.checkpointing<layer>
// CHECK-SAME: tg.d = #tg.checkpointing<"layer-attn">
// CHECK-SAME: tg.e = #tg.checkpointing<selective>
// CHECK-SAME: tg.f = #tg.checkpointing<budget>
// CHECK-SAME: tg.g = #tg.offload<none>
// CHECK-SAME: tg.h = #tg.offload<cpu>
module attributes {tg.a = #tg.checkpointing<"none">, tg.b = #tg.checkpointing<gelu>,
                   tg.c = #tg.checkpointing<layer>, tg.d = #tg.checkpointing<"layer-attn">,
                   tg.e = #tg.checkpointing<selective>, tg.f = #tg.checkpointing<budget>,
                   tg.g = #tg.offload<none>, tg.h = #tg.offload<"cpu">} {
}
