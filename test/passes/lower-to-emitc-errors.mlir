// RUN: tg-opt %s -tg-lower-to-emitc -split-input-file -verify-diagnostics -allow-unregistered-dialect -o /dev/null
// Diagnostics of tg-lower-to-emitc. The modules are hand-written: a minimal tg.spec (every
// other field takes its default) and a tg.plan holding only what each case needs
// (missing integer keys read as 0).

// expected-error @+1 {{tg-lower-to-emitc: module has no tg.spec attribute (build it with tgc)}}
module {
}

// -----

// The spec is parsed with the same checks as a spec file.
// expected-error @+1 {{tg-lower-to-emitc: tg.spec: model.d_model: expected a positive integer, got "x"}}
module attributes {tg.spec = "{\"name\": \"t\", \"model\": {\"d_model\": \"x\"}}"} {
}

// -----

// expected-error @+1 {{module has no memory plan (run -tg-plan-memory first)}}
module attributes {tg.spec = "{\"name\": \"t\"}"} {
  func.func @micro_step() {
    return
  }
}

// -----

// expected-error @+1 {{lower-to-emitc: missing @micro_step}}
module attributes {tg.spec = "{\"name\": \"t\"}", tg.plan = {}} {
  func.func @eval_step() {
    return
  }
}

// -----

// The functions are lowered in the order micro, optimizer, eval: an empty micro step
// is fine, the optimizer step is then missing.
// expected-error @+1 {{lower-to-emitc: missing @optimizer_step}}
module attributes {tg.spec = "{\"name\": \"t\"}", tg.plan = {}} {
  func.func @micro_step() {
    return
  }
  func.func @eval_step() {
    return
  }
}

// -----

// The parameter has its slot; the gelu result has no tg.offsets.
module attributes {tg.spec = "{\"name\": \"t\"}", tg.plan = {persistent_bytes = 64 : i64, arena_bytes = 16 : i64, params = [{name = "w", shape = array<i64: 4>, numel = 4 : i64, offset = 0 : i64, grad_offset = 16 : i64, m_offset = 32 : i64, v_offset = 48 : i64}]}} {
  func.func @micro_step(%w: tensor<4xf32> {tg.param = "w"}) {
    // expected-error @+1 {{'tg.gelu' op has no planned offset (run -tg-plan-memory)}}
    %0 = tg.gelu %w : (tensor<4xf32>) -> tensor<4xf32>
    return
  }
}

// -----

// An offsets array shorter than the results counts as unplanned (result #1 here).
module attributes {tg.spec = "{\"name\": \"t\"}", tg.plan = {params = [{name = "w", shape = array<i64: 4>, numel = 4 : i64, offset = 0 : i64, grad_offset = 16 : i64, m_offset = 32 : i64, v_offset = 48 : i64}]}} {
  func.func @micro_step(%w: tensor<4xf32> {tg.param = "w"}) {
    // expected-error @+1 {{'tg.split' op has no planned offset (run -tg-plan-memory)}}
    %0:2 = tg.split %w {axis = 0 : i64, tg.offsets = array<i64: 0>} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    return
  }
}

// -----

// tg ops accept bf16/f16, but the runtime kernels are f32 only.
module attributes {tg.spec = "{\"name\": \"t\"}", tg.plan = {}} {
  func.func @micro_step(%x: tensor<4xbf16> {tg.input = "tokens"}) {
    // expected-error @+1 {{'tg.gelu' op lower-to-emitc: the runtime computes in f32 only, got 'tensor<4xbf16>'}}
    %0 = tg.gelu %x {tg.offsets = array<i64: 0>} : (tensor<4xbf16>) -> tensor<4xbf16>
    return
  }
}

// -----

// A parameter that the plan does not list.
module attributes {tg.spec = "{\"name\": \"t\"}", tg.plan = {params = []}} {
  // expected-error @+1 {{lower-to-emitc: parameter "u" has no planned slot}}
  func.func @micro_step(%u: tensor<4xf32> {tg.param = "u"}) {
    %0 = tg.gelu %u {tg.offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
    return
  }
}

// -----

// Every argument must be a parameter (tg.param) or an input (tg.input).
module attributes {tg.spec = "{\"name\": \"t\"}", tg.plan = {}} {
  // expected-error @+1 {{lower-to-emitc: argument #0 is neither a parameter nor an input}}
  func.func @micro_step(%x: tensor<4xf32>) {
    %0 = tg.gelu %x {tg.offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
    return
  }
}

// -----

// accumulate_grad / adamw / clip_grad_norm address the parameter's persistent slots.
// The verifier only asks for a function argument; an input argument has no slot.
module attributes {tg.spec = "{\"name\": \"t\"}", tg.plan = {}} {
  func.func @micro_step(%x: tensor<4xf32> {tg.input = "tokens"}) {
    %0 = tg.gelu %x {tg.offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{'tg.accumulate_grad' op lower-to-emitc: param has no planned slot}}
    tg.accumulate_grad %x, %0 : tensor<4xf32>
    return
  }
}

// -----

// An op with no runtime kernel (a foreign op, planned like any other).
module attributes {tg.spec = "{\"name\": \"t\"}", tg.plan = {}} {
  func.func @micro_step() {
    // expected-error @+1 {{'test.op' op lower-to-emitc: no runtime kernel for this op}}
    %0 = "test.op"() {tg.offsets = array<i64: 0>} : () -> tensor<4xf32>
    return
  }
}
