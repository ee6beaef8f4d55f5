// RUN: tg-opt %S/Inputs/llama-block.mlir -tg-autodiff | FileCheck %s --implicit-check-not=tg.attention
// RUN: tg-opt %S/Inputs/llama-block.mlir -tg-fuse-attention -tg-autodiff | FileCheck %s --check-prefix=PACKED
// RUN: tg-opt %S/Inputs/llama-block.mlir -tg-fuse-attention=packed=false -tg-autodiff | FileCheck %s --check-prefix=FUSED
// tg-autodiff on one Llama block (Inputs/llama-block.mlir): RMSNorm's gradient is
// tg.rms_norm_grad (dy, x, gamma, the forward's rstd) -> (dx, dgamma); SwiGLU's is
// tg.swiglu_grad of the forward's input [.., 2F] and dy [.., F]; RoPE's is tg.rope
// {inverse = true} on the gradient of the rotated projection, with the forward's heads,
// kv_heads, theta and Llama 3 scaling (the rotation is orthogonal); grouped-query naive
// attention differentiates through its views with no attention op; fused, the gradient is
// tg.attention_qkv_grad {kv_heads} (packed) or tg.attention_grad with dk, dv of the kv heads.

// CHECK-LABEL: func.func @micro_step
// CHECK:      %[[X0:.*]] = tg.embedding {{.*}}tg.phase = "forward"
// CHECK:      %[[Y1:[^ ,]+]], %[[R1:[^ ,]+]] = tg.rms_norm %[[X0]], %arg1 {tg.layer = 0 : i64, tg.phase = "forward"}
// CHECK:      %[[QKV:.*]] = tg.matmul %[[Y1]], %arg2
// CHECK-NEXT: %[[ROT:.*]] = tg.rope %[[QKV]] {heads = 4 : i64, kv_heads = 2 : i64, scaling = array<f32: 3.200000e+01, 1.000000e+00, 4.000000e+00, 8.192000e+03>, tg.layer = 0 : i64, tg.phase = "forward", theta = 5.000000e+05 : f32}
// CHECK:      %[[X1:.*]] = tg.add %[[X0]], %{{.*}} {tg.layer = 0 : i64, tg.phase = "forward"}
// CHECK:      %[[Y2:[^ ,]+]], %[[R2:[^ ,]+]] = tg.rms_norm %[[X1]], %arg4
// CHECK:      %[[FC:.*]] = tg.matmul %[[Y2]], %arg5
// CHECK-NEXT: %[[SW:.*]] = tg.swiglu %[[FC]]
// CHECK:      %[[X2:.*]] = tg.add %[[X1]], %{{.*}} {tg.layer = 0 : i64, tg.phase = "forward"}
// CHECK:      %[[Y3:[^ ,]+]], %[[R3:[^ ,]+]] = tg.rms_norm %[[X2]], %arg7 {tg.phase = "forward"}
// CHECK:      tg.cross_entropy_grad
// CHECK:      %[[DY3:.*]] = tg.matmul %{{.*}}, %arg0 {tg.phase = "backward"}
// CHECK:      %[[DX3:[^ ,]+]], %[[DG3:[^ ,]+]] = tg.rms_norm_grad %[[DY3]], %[[X2]], %arg7, %[[R3]] {tg.phase = "backward"} : (tensor<2x6x16xf32>, tensor<2x6x16xf32>, tensor<16xf32>, tensor<2x6xf32>) -> (tensor<2x6x16xf32>, tensor<16xf32>)
// CHECK:      %[[DSW:.*]] = tg.matmul %[[DX3]], %arg6 {{.*}}transpose_b = true
// CHECK:      %[[DFC:.*]] = tg.swiglu_grad %[[FC]], %[[DSW]] {tg.layer = 0 : i64, tg.phase = "backward"} : (tensor<2x6x24xf32>, tensor<2x6x12xf32>) -> tensor<2x6x24xf32>
// CHECK:      %[[DY2:.*]] = tg.matmul %[[DFC]], %arg5 {{.*}}transpose_b = true
// CHECK:      %[[DX2:[^ ,]+]], %[[DG2:[^ ,]+]] = tg.rms_norm_grad %[[DY2]], %[[X1]], %arg4, %[[R2]]
// The attention's gradient stays primitive (no tg.attention anywhere: implicit-check-not):
// softmax_grad on the grouped scores view.
// CHECK:      tg.softmax_grad {{.*}} : (tensor<2x2x2x6x6xf32>, tensor<2x2x2x6x6xf32>) -> tensor<2x2x2x6x6xf32>
// CHECK:      %[[DROT:.*]] = tg.concat {{.*}} -> tensor<2x6x32xf32>
// CHECK-NEXT: %[[DQKV:.*]] = tg.rope %[[DROT]] {heads = 4 : i64, inverse = true, kv_heads = 2 : i64, scaling = array<f32: 3.200000e+01, 1.000000e+00, 4.000000e+00, 8.192000e+03>, tg.layer = 0 : i64, tg.phase = "backward", theta = 5.000000e+05 : f32} : (tensor<2x6x32xf32>) -> tensor<2x6x32xf32>
// CHECK-NEXT: %[[DY1:.*]] = tg.matmul %[[DQKV]], %arg2 {{.*}}transpose_b = true
// CHECK:      %[[DWQKV:.*]] = tg.matmul %{{.*}}, %{{.*}} {tg.layer = 0 : i64, tg.phase = "backward", transpose_a = true} : (tensor<12x16xf32>, tensor<12x32xf32>) -> tensor<16x32xf32>
// CHECK:      %[[DX1:[^ ,]+]], %[[DG1:[^ ,]+]] = tg.rms_norm_grad %[[DY1]], %[[X0]], %arg1, %[[R1]]
// CHECK-DAG:  tg.accumulate_grad %arg1, %[[DG1]] {tg.phase = "backward"} : tensor<16xf32>
// CHECK-DAG:  tg.accumulate_grad %arg2, %[[DWQKV]] {tg.phase = "backward"} : tensor<16x32xf32>
// CHECK-DAG:  tg.accumulate_grad %arg4, %[[DG2]] {tg.phase = "backward"} : tensor<16xf32>
// CHECK-DAG:  tg.accumulate_grad %arg7, %[[DG3]] {tg.phase = "backward"} : tensor<16xf32>
// CHECK:      return

// Packed: the fused op's gradient writes dqkv in the packed layout, rotated back.
// PACKED-LABEL: func.func @micro_step
// PACKED:      %[[ROT:.*]] = tg.rope %{{.*}} {heads = 4 : i64, kv_heads = 2 : i64, {{.*}}tg.phase = "forward"
// PACKED-NEXT: %[[OUT:[^ ,]+]], %[[LSE:[^ ,]+]] = tg.attention_qkv %[[ROT]] {heads = 4 : i64, kv_heads = 2 : i64, scale = 5.000000e-01 : f32, tg.layer = 0 : i64, tg.phase = "forward"}
// PACKED:      %[[D:.*]] = tg.attention_qkv_grad %[[ROT]], %[[OUT]], %[[LSE]], %{{.*}} {heads = 4 : i64, kv_heads = 2 : i64, scale = 5.000000e-01 : f32, tg.layer = 0 : i64, tg.phase = "backward"} : (tensor<2x6x32xf32>, tensor<2x6x16xf32>, tensor<2x4x6xf32>, tensor<2x6x16xf32>) -> tensor<2x6x32xf32>
// PACKED-NEXT: %[[DQKV:.*]] = tg.rope %[[D]] {heads = 4 : i64, inverse = true, kv_heads = 2 : i64, {{.*}}tg.phase = "backward", theta = 5.000000e+05 : f32}
// PACKED-NEXT: tg.matmul %[[DQKV]], %arg2 {{.*}}transpose_b = true
// PACKED-NOT:  tg.softmax_grad
// PACKED-NOT:  tg.concat
// PACKED:      return

// Fused, not packed: dk and dv have the 2 kv heads of k and v.
// FUSED-LABEL: func.func @micro_step
// FUSED:      %[[O:[^ ,]+]], %[[L:[^ ,]+]] = tg.attention %[[Q:[^ ,]+]], %[[K:[^ ,]+]], %[[V:[^ ,]+]] {scale = 5.000000e-01 : f32, tg.layer = 0 : i64, tg.phase = "forward"} : (tensor<2x4x6x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>)
// FUSED:      tg.attention_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[L]], %{{.*}} {scale = 5.000000e-01 : f32, tg.layer = 0 : i64, tg.phase = "backward"} : (tensor<2x4x6x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>, tensor<2x4x6x4xf32>, tensor<2x4x6xf32>, tensor<2x4x6x4xf32>) -> (tensor<2x4x6x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>)
// FUSED-NOT:  tg.softmax_grad
// FUSED:      tg.concat {{.*}} -> tensor<2x6x32xf32>
// FUSED-NEXT: tg.rope %{{.*}} {heads = 4 : i64, inverse = true, kv_heads = 2 : i64,
// FUSED:      return
