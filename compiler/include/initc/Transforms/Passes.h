//===- Passes.h - passes of initc -------------------------------*- C++ -*-===//
#ifndef INITC_TRANSFORMS_PASSES_H
#define INITC_TRANSFORMS_PASSES_H

#include "initc/Dialect/Init/IR/InitOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace initc {

#define GEN_PASS_DECL
#include "initc/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "initc/Transforms/Passes.h.inc"

/// Said of an init.load wherever the pipeline meets it: no backend lowers it in this version.
inline constexpr const char *kLoadNotCompiled =
    "'init.load' cannot be compiled in this version: no backend reads a base checkpoint yet; "
    "initialize the parameter with a recipe, and load the base weights into the model after";

} // namespace initc

#endif // INITC_TRANSFORMS_PASSES_H
