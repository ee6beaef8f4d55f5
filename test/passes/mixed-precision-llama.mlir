// RUN: tg-opt %S/Inputs/llama-block.mlir -tg-mixed-precision="precision=bf16-mixed" | FileCheck %s
// RUN: tg-opt %S/Inputs/llama-block.mlir -tg-mixed-precision="precision=fp16-mixed" \
// RUN:   | FileCheck %s --check-prefix=FP16 --implicit-check-not=bf16
// RUN: tg-opt %S/Inputs/llama-block.mlir -tg-mixed-precision="precision=bf16" \
// RUN:   | FileCheck %s --check-prefix=BF16 --implicit-check-not=xf16
// RUN: tg-opt %S/Inputs/llama-block.mlir -tg-mixed-precision="precision=fp32" \
// RUN:   | FileCheck %s --check-prefix=FP32 --implicit-check-not=bf16 --implicit-check-not=xf16 \
// RUN:   --implicit-check-not=tg.cast
// Fused grouped-query attention under bf16-mixed: one op, bf16 in and out, f32 lse.
// RUN: tg-opt %S/Inputs/llama-block.mlir -tg-fuse-attention -tg-mixed-precision="precision=bf16-mixed" \
// RUN:   | FileCheck %s --check-prefix=PACKED
// RUN: tg-opt %S/Inputs/llama-block.mlir -tg-fuse-attention=packed=false -tg-mixed-precision="precision=bf16-mixed" \
// RUN:   | FileCheck %s --check-prefix=FUSED
// RoPE and SwiGLU follow their operand's type (no cast is inserted for them).
// RUN: tg-opt %s -tg-mixed-precision="precision=bf16-mixed" | FileCheck %s --check-prefix=OPERAND \
// RUN:   --implicit-check-not=tg.cast
// tg-mixed-precision's rules for the Llama family's ops, on one Llama block
// (Inputs/llama-block.mlir): tg.rms_norm reads the f32 residual stream and f32 gamma and
// writes y in the low type with f32 rstd (as tg.layer_norm); tg.rope and tg.swiglu take
// their operand's type (the low-precision GEMM outputs); the residual adds stay f32.

// CHECK-LABEL: module attributes {tg.precision = #tg.precision<"bf16-mixed">}
// CHECK:      %[[X0:.*]] = tg.embedding {{.*}} -> tensor<2x6x16xf32>
// CHECK-NEXT: %[[Y1:[^ ,]+]], %{{[^ ,]+}} = tg.rms_norm %[[X0]], %arg1 {tg.layer = 0 : i64} : (tensor<2x6x16xf32>, tensor<16xf32>) -> (tensor<2x6x16xbf16>, tensor<2x6xf32>)
// CHECK-NEXT: %[[W:.*]] = tg.cast %arg2 {{.*}} : (tensor<16x32xf32>) -> tensor<16x32xbf16>
// CHECK-NEXT: %[[QKV:.*]] = tg.matmul %[[Y1]], %[[W]] {{.*}} -> tensor<2x6x32xbf16>
// CHECK-NEXT: %[[ROT:.*]] = tg.rope %[[QKV]] {{.*}} : (tensor<2x6x32xbf16>) -> tensor<2x6x32xbf16>
// CHECK-NEXT: tg.split %[[ROT]] {{.*}} : (tensor<2x6x32xbf16>) -> (tensor<2x6x16xbf16>, tensor<2x6x8xbf16>, tensor<2x6x8xbf16>)
// The grouped scores are widened for mask and softmax, narrowed for P.v.
// CHECK:      tg.cast %{{.*}} : (tensor<2x2x2x6x6xbf16>) -> tensor<2x2x2x6x6xf32>
// CHECK-NEXT: tg.causal_mask %{{.*}} : (tensor<2x2x2x6x6xf32>) -> tensor<2x2x2x6x6xf32>
// CHECK-NEXT: tg.softmax %{{.*}} : (tensor<2x2x2x6x6xf32>) -> tensor<2x2x2x6x6xf32>
// CHECK:      %[[X1:.*]] = tg.add %[[X0]], %{{.*}} : (tensor<2x6x16xf32>, tensor<2x6x16xf32>) -> tensor<2x6x16xf32>
// CHECK-NEXT: %[[Y2:[^ ,]+]], %{{[^ ,]+}} = tg.rms_norm %[[X1]], %arg4 {{.*}} : (tensor<2x6x16xf32>, tensor<16xf32>) -> (tensor<2x6x16xbf16>, tensor<2x6xf32>)
// CHECK-NEXT: %[[WFC:.*]] = tg.cast %arg5 {{.*}} : (tensor<16x24xf32>) -> tensor<16x24xbf16>
// CHECK-NEXT: %[[FC:.*]] = tg.matmul %[[Y2]], %[[WFC]] {{.*}} -> tensor<2x6x24xbf16>
// CHECK-NEXT: %[[SW:.*]] = tg.swiglu %[[FC]] {{.*}} : (tensor<2x6x24xbf16>) -> tensor<2x6x12xbf16>
// CHECK-NEXT: %[[WP:.*]] = tg.cast %arg6 {{.*}} -> tensor<12x16xbf16>
// CHECK-NEXT: %[[P:.*]] = tg.matmul %[[SW]], %[[WP]] {{.*}} -> tensor<2x6x16xbf16>
// CHECK-NEXT: %[[PF:.*]] = tg.cast %[[P]] {{.*}} : (tensor<2x6x16xbf16>) -> tensor<2x6x16xf32>
// CHECK-NEXT: %[[X2:.*]] = tg.add %[[X1]], %[[PF]] {{.*}} -> tensor<2x6x16xf32>
// CHECK-NEXT: %[[Y3:[^ ,]+]], %{{[^ ,]+}} = tg.rms_norm %[[X2]], %arg7 : (tensor<2x6x16xf32>, tensor<16xf32>) -> (tensor<2x6x16xbf16>, tensor<2x6xf32>)
// CHECK-NEXT: %[[WTE:.*]] = tg.cast %arg0 : (tensor<20x16xf32>) -> tensor<20x16xbf16>
// CHECK-NEXT: tg.matmul %[[Y3]], %[[WTE]] {transpose_b = true} : (tensor<2x6x16xbf16>, tensor<20x16xbf16>) -> tensor<2x6x20xbf16>

// fp16-mixed: the same placement in f16.
// FP16: tg.rms_norm {{.*}} : (tensor<2x6x16xf32>, tensor<16xf32>) -> (tensor<2x6x16xf16>, tensor<2x6xf32>)
// FP16: tg.rope {{.*}} : (tensor<2x6x32xf16>) -> tensor<2x6x32xf16>
// FP16: tg.rms_norm {{.*}} : (tensor<2x6x16xf32>, tensor<16xf32>) -> (tensor<2x6x16xf16>, tensor<2x6xf32>)
// FP16: tg.swiglu {{.*}} : (tensor<2x6x24xf16>) -> tensor<2x6x12xf16>
// FP16: tg.rms_norm {{.*}} : (tensor<2x6x16xf32>, tensor<16xf32>) -> (tensor<2x6x16xf16>, tensor<2x6xf32>)

// Pure bf16: bf16 parameters and residual stream; rstd stays f32.
// BF16-LABEL: module attributes {tg.precision = #tg.precision<bf16>}
// BF16: tg.embedding {{.*}} : (tensor<20x16xbf16>, tensor<2x6xi32>) -> tensor<2x6x16xbf16>
// BF16: tg.rms_norm {{.*}} : (tensor<2x6x16xbf16>, tensor<16xbf16>) -> (tensor<2x6x16xbf16>, tensor<2x6xf32>)
// BF16: tg.rope {{.*}} : (tensor<2x6x32xbf16>) -> tensor<2x6x32xbf16>
// BF16: tg.add {{.*}} : (tensor<2x6x16xbf16>, tensor<2x6x16xbf16>) -> tensor<2x6x16xbf16>
// BF16: tg.rms_norm {{.*}} : (tensor<2x6x16xbf16>, tensor<16xbf16>) -> (tensor<2x6x16xbf16>, tensor<2x6xf32>)
// BF16: tg.swiglu {{.*}} : (tensor<2x6x24xbf16>) -> tensor<2x6x12xbf16>

// fp32: nothing changes (no cast, no low type anywhere).
// FP32-LABEL: module attributes {tg.precision = #tg.precision<fp32>}
// FP32: tg.rms_norm {{.*}} -> (tensor<2x6x16xf32>, tensor<2x6xf32>)
// FP32: tg.rope {{.*}} : (tensor<2x6x32xf32>) -> tensor<2x6x32xf32>
// FP32: tg.swiglu {{.*}} : (tensor<2x6x24xf32>) -> tensor<2x6x12xf32>

// PACKED:      %[[ROT:.*]] = tg.rope {{.*}} : (tensor<2x6x32xbf16>) -> tensor<2x6x32xbf16>
// PACKED-NEXT: tg.attention_qkv %[[ROT]] {heads = 4 : i64, kv_heads = 2 : i64, {{.*}}} : (tensor<2x6x32xbf16>) -> (tensor<2x6x16xbf16>, tensor<2x4x6xf32>)

// FUSED: tg.attention {{.*}} : (tensor<2x4x6x4xbf16>, tensor<2x2x6x4xbf16>, tensor<2x2x6x4xbf16>) -> (tensor<2x4x6x4xbf16>, tensor<2x4x6xf32>)

// OPERAND-LABEL: func.func @forward
// OPERAND: tg.rope %arg0 {{.*}} : (tensor<2x6x32xf32>) -> tensor<2x6x32xf32>
// OPERAND: tg.swiglu %arg1 : (tensor<2x6x24xf32>) -> tensor<2x6x12xf32>
// OPERAND: tg.rope %arg2 {{.*}} : (tensor<2x6x32xbf16>) -> tensor<2x6x32xbf16>
// OPERAND: tg.swiglu %arg3 : (tensor<2x6x24xbf16>) -> tensor<2x6x12xbf16>
func.func @forward(%x: tensor<2x6x32xf32>, %f: tensor<2x6x24xf32>, %xb: tensor<2x6x32xbf16>, %fb: tensor<2x6x24xbf16>)
    -> (tensor<2x6x32xf32>, tensor<2x6x12xf32>, tensor<2x6x32xbf16>, tensor<2x6x12xbf16>) {
  %r = tg.rope %x {heads = 4 : i64, kv_heads = 2 : i64, scaling = array<f32: 0.0, 1.0, 4.0, 8192.0>, theta = 1.0e4 : f32} : (tensor<2x6x32xf32>) -> tensor<2x6x32xf32>
  %s = tg.swiglu %f : (tensor<2x6x24xf32>) -> tensor<2x6x12xf32>
  %rb = tg.rope %xb {heads = 4 : i64, kv_heads = 2 : i64, scaling = array<f32: 0.0, 1.0, 4.0, 8192.0>, theta = 1.0e4 : f32} : (tensor<2x6x32xbf16>) -> tensor<2x6x32xbf16>
  %sb = tg.swiglu %fb : (tensor<2x6x24xbf16>) -> tensor<2x6x12xbf16>
  return %r, %s, %rb, %sb : tensor<2x6x32xf32>, tensor<2x6x12xf32>, tensor<2x6x32xbf16>, tensor<2x6x12xbf16>
}
