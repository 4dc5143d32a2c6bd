//===- DType.h - element types as the runtime and safetensors name them -*- C++ -*-===//
#ifndef INITC_SUPPORT_DTYPE_H
#define INITC_SUPPORT_DTYPE_H

#include "initrt/base/program.h"
#include "mlir/IR/Types.h"

namespace initc {

/// The runtime's dtype of a parameter element type (F32, BF16, F16, F64, BOOL, I64); false for
/// any other type.
inline bool dtypeOf(mlir::Type element, initrt::DType &dtype) {
  if (element.isF32())
    dtype = initrt::DType::F32;
  else if (element.isBF16())
    dtype = initrt::DType::BF16;
  else if (element.isF16())
    dtype = initrt::DType::F16;
  else if (element.isF64())
    dtype = initrt::DType::F64;
  else if (element.isInteger(1))
    dtype = initrt::DType::BOOL;
  else if (element.isInteger(64))
    dtype = initrt::DType::I64;
  else
    return false;
  return true;
}

} // namespace initc

#endif // INITC_SUPPORT_DTYPE_H
