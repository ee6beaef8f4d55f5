// RUN: tg-opt %s -tg-lower-to-emitc -split-input-file -verify-diagnostics -allow-unregistered-dialect -o /dev/null
// Diagnostics of tg-lower-to-emitc. The modules are hand-written: the module attributes
// the frontend writes (the lowering reads the model and optimizer from them, never the
// spec's JSON) and a tg.plan holding only what each case needs (missing integer keys read
// as 0).

// expected-error @+1 {{module has no memory plan (run -tg-plan-memory first)}}
module {
}

// -----

// The frontend's attributes are required; the first missing one is named.
// expected-error @+1 {{lower-to-emitc: module attribute tg.name is missing or has the wrong kind (build the module with tgc)}}
module attributes {tg.plan = {}} {
}

// -----

// The precision is an enum attribute (dialect/TgEnums.td); its old string form is refused,
// not read as fp32.
// expected-error @+1 {{module attribute tg.precision must be a #tg.precision<...> attribute (e.g. #tg.precision<"bf16-mixed">), got "bf16-mixed"}}
module attributes {tg.plan = {}, tg.precision = "bf16-mixed"} {
}

// -----

// expected-error @+1 {{tg.plan's offload must be a #tg.offload<...> attribute (e.g. #tg.offload<cpu>), got "cpu"}}
module attributes {tg.plan = {offload = "cpu"}} {
}

// -----

// expected-error @+1 {{lower-to-emitc: module attribute tg.vocab_size is missing or has the wrong kind (build the module with tgc)}}
module attributes {tg.plan = {}, tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64} {
}

// -----

// expected-error @+1 {{lower-to-emitc: tg.optimizer has no float 'eps'}}
module attributes {tg.plan = {}, tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32}} {
}

// -----

// Parameter slots of a dtype the runtime does not have.
// expected-error @+1 {{lower-to-emitc: parameter "w" has dtypes f64/f32 the runtime does not have}}
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {params = [{name = "w", dtype = "f64", shape = array<i64: 4>, numel = 4 : i64}]}} {
}

// -----

// expected-error @+1 {{module has no memory plan (run -tg-plan-memory first)}}
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}} {
  func.func @micro_step() {
    return
  }
}

// -----

// expected-error @+1 {{lower-to-emitc: missing @micro_step}}
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {}} {
  func.func @eval_step() {
    return
  }
}

// -----

// The functions are lowered in the order micro, optimizer, eval: an empty micro step
// is fine, the optimizer step is then missing.
// expected-error @+1 {{lower-to-emitc: missing @optimizer_step}}
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {}} {
  func.func @micro_step() {
    return
  }
  func.func @eval_step() {
    return
  }
}

// -----

// The parameter has its slot; the gelu result has no tg.offsets.
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {persistent_bytes = 64 : i64, arena_bytes = 16 : i64, params = [{name = "w", shape = array<i64: 4>, numel = 4 : i64, offset = 0 : i64, grad_offset = 16 : i64, m_offset = 32 : i64, v_offset = 48 : i64}]}} {
  func.func @micro_step(%w: tensor<4xf32> {tg.param = "w"}) {
    // expected-error @+1 {{'tg.gelu' op has no planned offset (run -tg-plan-memory)}}
    %0 = tg.gelu %w : (tensor<4xf32>) -> tensor<4xf32>
    return
  }
}

// -----

// An offsets array shorter than the results counts as unplanned (result #1 here).
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {params = [{name = "w", shape = array<i64: 4>, numel = 4 : i64, offset = 0 : i64, grad_offset = 16 : i64, m_offset = 32 : i64, v_offset = 48 : i64}]}} {
  func.func @micro_step(%w: tensor<4xf32> {tg.param = "w"}) {
    // expected-error @+1 {{'tg.split' op has no planned offset (run -tg-plan-memory)}}
    %0:2 = tg.split %w {axis = 0 : i64, tg.offsets = array<i64: 0>} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    return
  }
}

// -----

// The runtime has f32, bf16 and f16 tensors (and i32 ids), nothing else: the plan
// (read back first) refuses any other element type.
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {}} {
  func.func @micro_step() {
    // expected-error @+1 {{'test.op' op result #0 needs a static shape and a known element type to be planned}}
    %0 = "test.op"() {tg.offsets = array<i64: 0>} : () -> tensor<4xf64>
    return
  }
}

// -----

// A parameter that the plan does not list.
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {params = []}} {
  // expected-error @+1 {{lower-to-emitc: parameter "u" has no planned slot}}
  func.func @micro_step(%u: tensor<4xf32> {tg.param = "u"}) {
    %0 = tg.gelu %u {tg.offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
    return
  }
}

// -----

// Every argument must be a parameter (tg.param) or an input (tg.input).
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {}} {
  // expected-error @+1 {{lower-to-emitc: argument #0 is neither a parameter nor an input}}
  func.func @micro_step(%x: tensor<4xf32>) {
    %0 = tg.gelu %x {tg.offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
    return
  }
}

// -----

// A gradient slot of the compute type (the plan's grad_dtype, tg-plan-memory
// low-precision-grads) is written by its weight-gradient GEMM only: an f32 accumulation into
// it is refused, not added as bf16 bits.
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {persistent_bytes = 64 : i64, arena_bytes = 16 : i64, params = [{name = "w", shape = array<i64: 4>, numel = 4 : i64, offset = 0 : i64, grad_offset = 16 : i64, m_offset = 32 : i64, v_offset = 48 : i64, grad_dtype = "bf16"}]}} {
  func.func @micro_step(%w: tensor<4xf32> {tg.param = "w"}) {
    %0 = tg.gelu %w {tg.offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{'tg.accumulate_grad' op lower-to-emitc: the gradient slot of 'w' holds bf16 (the plan's grad_dtype), but this accumulation adds a f32 gradient that no weight-gradient GEMM writes into it (plan with tg-plan-memory low-precision-grads=false)}}
    tg.accumulate_grad %w, %0 : tensor<4xf32>
    return
  }
}

// -----

// accumulate_grad / adamw / clip_grad_norm address the parameter's persistent slots.
// The verifier only asks for a function argument; an input argument has no slot.
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {}} {
  func.func @micro_step(%x: tensor<4xf32> {tg.input = "tokens"}) {
    %0 = tg.gelu %x {tg.offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{'tg.accumulate_grad' op lower-to-emitc: param has no planned slot}}
    tg.accumulate_grad %x, %0 : tensor<4xf32>
    return
  }
}

// -----

// An op with no runtime kernel (a foreign op, planned like any other).
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {}} {
  func.func @micro_step() {
    // expected-error @+1 {{'test.op' op lower-to-emitc: no runtime kernel for this op}}
    %0 = "test.op"() {tg.offsets = array<i64: 0>} : () -> tensor<4xf32>
    return
  }
}

// -----

// Element sizes come from the type: a type with no tgrt_dtype (fp8 here) is refused, never
// sized as a 2-byte element (the planner refuses such results; this is an operand the
// planner never sized: an argument).
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {}} {
  func.func @micro_step(%a: tensor<4xf8E4M3FN>) {
    // expected-error @+1 {{lower-to-emitc: operand type 'tensor<4xf8E4M3FN>' has no runtime element type (tgrt_dtype has f32, bf16, f16; token ids are i32)}}
    "test.use"(%a) : (tensor<4xf8E4M3FN>) -> ()
    return
  }
}

// -----

// A tg.bias_rows weight gradient must add or write into its weight's slot (and its bias's
// after it); one whose result goes elsewhere is refused, not lowered as a plain GEMM over
// the layer norm's pitched rows.
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {arena_bytes = 4096 : i64, params = []}} {
  func.func @micro_step(%a: tensor<4x8xf32> {tg.offsets = array<i64: 0>}, %b: tensor<4x8xf32>) {
    // expected-error @+1 {{'tg.matmul' op lower-to-emitc: tg.bias_rows, but the weight gradient goes into no gradient slot (run tg-bias-rows before tg-plan-memory)}}
    %0 = tg.matmul %a, %b {transpose_a = true, tg.bias_rows, tg.offsets = array<i64: 1024>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    return
  }
}

// -----

// A split master value (the plan's `split`, tg-plan-memory split-master) has no f32 slot:
// its slot holds the low halves, so an op reading the f32 value is refused.
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {persistent_bytes = 1024 : i64, arena_bytes = 16 : i64, work_dtype = "bf16", work_offset = 512 : i64, work_bytes = 256 : i64, params = [{name = "w", shape = array<i64: 4>, numel = 4 : i64, offset = 0 : i64, grad_offset = 256 : i64, m_offset = 768 : i64, v_offset = 896 : i64, work_offset = 512 : i64, grad_dtype = "bf16", split}]}} {
  // expected-error @+1 {{lower-to-emitc: parameter "w" is split (its slot holds low halves), but an op reads its f32 value}}
  func.func @micro_step(%w: tensor<4xf32> {tg.param = "w"}) {
    %0 = tg.gelu %w {tg.offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
    return
  }
}

// -----

// A split value needs its working copy (the high halves).
// expected-error @+1 {{tg.plan: parameter w is split but has no work_offset}}
module attributes {tg.name = "t", tg.spec = "{}", tg.batch_size = 1 : i64, tg.context = 4 : i64, tg.vocab_size = 8 : i64, tg.grad_accum = 1 : i64, tg.optimizer = {lr = 1.0 : f32, min_lr = 0.0 : f32, beta1 = 0.9 : f32, beta2 = 0.95 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32, grad_clip = 1.0 : f32, warmup_steps = 0 : i64, decay = 0 : i64, seed = 1 : i64}, tg.plan = {persistent_bytes = 1024 : i64, arena_bytes = 16 : i64, params = [{name = "w", shape = array<i64: 4>, numel = 4 : i64, offset = 0 : i64, grad_offset = 256 : i64, m_offset = 768 : i64, v_offset = 896 : i64, grad_dtype = "bf16", split}]}} {
  func.func @micro_step(%w: tensor<4xf32> {tg.param = "w"}) {
    return
  }
}
