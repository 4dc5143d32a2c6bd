//===- InitEnums.td - enums of the init dialect ------------*- tablegen -*-===//
#ifndef INITC_DIALECT_INIT_IR_INITENUMS_TD
#define INITC_DIALECT_INIT_IR_INITENUMS_TD

include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Init_FanMode : I32EnumAttr<"FanMode", "which fan a variance_scaling op divides by", [
    I32EnumAttrCase<"fan_in", 0>, I32EnumAttrCase<"fan_out", 1>, I32EnumAttrCase<"fan_avg", 2>]> {
  let cppNamespace = "::initc::init";
}
def Init_Distribution : I32EnumAttr<"Distribution", "the distribution of a variance_scaling op", [
    I32EnumAttrCase<"uniform", 0>, I32EnumAttrCase<"normal", 1>]> {
  let cppNamespace = "::initc::init";
}
def Init_PartitionStrategy : I32EnumAttr<"PartitionStrategy",
    "how ranks obtain their slices of a non-elementwise value", [
    I32EnumAttrCase<"redundant", 0>]> {
  let cppNamespace = "::initc::init";
}

#endif // INITC_DIALECT_INIT_IR_INITENUMS_TD
