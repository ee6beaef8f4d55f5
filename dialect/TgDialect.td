//===- TgDialect.td - the tg dialect ------------------------*- tablegen -*-===//
#ifndef TG_DIALECT
#define TG_DIALECT

include "mlir/IR/OpBase.td"

def Tg_Dialect : Dialect {
  let name = "tg";
  let summary = "Training graphs of GPT-style transformers";
  let description = [{
    Value-semantics ops on ranked tensors describing a decoder-only transformer's
    forward pass, its gradients (built by tg-autodiff through GradientOpInterface) and
    the optimizer update. Element types: f32, bf16, f16 for data; i32 for token ids.
  }];
  let cppNamespace = "::mlir::tg";
  // The policy attributes of TgEnums.td (#tg.precision<...> and the others).
  let useDefaultAttributePrinterParser = 1;
}

class Tg_Op<string mnemonic, list<Trait> traits = []> :
    Op<Tg_Dialect, mnemonic, traits>;

#endif
