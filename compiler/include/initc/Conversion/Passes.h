//===- Passes.h - conversions of initc --------------------------*- C++ -*-===//
#ifndef INITC_CONVERSION_PASSES_H
#define INITC_CONVERSION_PASSES_H

#include "initc/Dialect/Init/IR/InitOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace initc {

#define GEN_PASS_DECL
#include "initc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "initc/Conversion/Passes.h.inc"

} // namespace initc

#endif // INITC_CONVERSION_PASSES_H
