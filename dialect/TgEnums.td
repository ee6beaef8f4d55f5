//===- TgEnums.td - the training policies as enums ---------*- tablegen -*-===//
//
// One definition per training policy that the spec, the pass options and the IR name:
// training.precision, training.checkpointing and training.optimizer.offload. The string
// form of each case is the spelling users write in JSON and on tg-opt's command line;
// every validation goes through the generated symbolize function (frontend/Spec.cpp, the
// pass options' parsers in dialect/TgEnumOptions.h, the attributes' parsers), so the
// allowed values and their error lists come from here only. The integer values of
// Precision are the runtime's TGRT_PRECISION_* (runtime/tgrt.h; checked where the lowering
// writes them).
//
//===----------------------------------------------------------------------------===//
#ifndef TG_ENUMS
#define TG_ENUMS

include "TgDialect.td"
include "mlir/IR/EnumAttr.td"

def Tg_PrecisionFp32      : I32EnumAttrCase<"fp32", 0, "fp32">;
def Tg_PrecisionBf16Mixed : I32EnumAttrCase<"bf16_mixed", 1, "bf16-mixed">;
def Tg_PrecisionFp16Mixed : I32EnumAttrCase<"fp16_mixed", 2, "fp16-mixed">;
def Tg_PrecisionBf16      : I32EnumAttrCase<"bf16", 3, "bf16">;
def Tg_Precision : I32EnumAttr<"Precision", "precision policy (training.precision)",
    [Tg_PrecisionFp32, Tg_PrecisionBf16Mixed, Tg_PrecisionFp16Mixed, Tg_PrecisionBf16]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}

// The order is the spec's error list's (training.checkpointing); budget's bytes are a
// separate integer (the spec's "budget:<bytes>", tg-rematerialize's budget-bytes).
def Tg_CheckpointingNone      : I32EnumAttrCase<"none", 0, "none">;
def Tg_CheckpointingGelu      : I32EnumAttrCase<"gelu", 1, "gelu">;
def Tg_CheckpointingLayer     : I32EnumAttrCase<"layer", 2, "layer">;
def Tg_CheckpointingLayerAttn : I32EnumAttrCase<"layer_attn", 3, "layer-attn">;
def Tg_CheckpointingSelective : I32EnumAttrCase<"selective", 4, "selective">;
def Tg_CheckpointingBudget    : I32EnumAttrCase<"budget", 5, "budget">;
def Tg_Checkpointing : I32EnumAttr<"Checkpointing",
    "activation checkpointing policy (training.checkpointing)",
    [Tg_CheckpointingNone, Tg_CheckpointingGelu, Tg_CheckpointingLayer,
     Tg_CheckpointingLayerAttn, Tg_CheckpointingSelective, Tg_CheckpointingBudget]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}

def Tg_OffloadNone : I32EnumAttrCase<"none", 0, "none">;
def Tg_OffloadCpu  : I32EnumAttrCase<"cpu", 1, "cpu">;
def Tg_Offload : I32EnumAttr<"Offload",
    "where the AdamW moments live (training.optimizer.offload)",
    [Tg_OffloadNone, Tg_OffloadCpu]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}

// The attributes: #tg.precision<"bf16-mixed">, #tg.checkpointing<selective>,
// #tg.offload<cpu> (a case whose string is not a keyword is printed quoted).
// Parsed and printed by dialect/TgDialect.cpp: the case's string form, quoted where it is not
// a keyword (an unknown one is an error listing the cases).
class Tg_EnumAttr<EnumAttrInfo info, string mnemonic> : EnumAttr<Tg_Dialect, info, mnemonic> {
  let assemblyFormat = ?;
  let hasCustomAssemblyFormat = 1;
}
def Tg_PrecisionAttr : Tg_EnumAttr<Tg_Precision, "precision">;
def Tg_CheckpointingAttr : Tg_EnumAttr<Tg_Checkpointing, "checkpointing">;
def Tg_OffloadAttr : Tg_EnumAttr<Tg_Offload, "offload">;

#endif
