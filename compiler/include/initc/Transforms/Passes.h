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

/// What init-load-from-base did to a module.
struct BaseLoadSummary {
  std::vector<std::string> loaded;   // parameters that now load their values
  std::vector<std::string> computed; // parameters the base lacks, still computed
  std::vector<std::string> unused;   // tensors of the base no parameter takes
};

/// init-load-from-base as a function: rewrites `module` to load from `file` the parameters it
/// has, reporting mistakes as the pass does (through the context's diagnostics).
mlir::LogicalResult loadFromBase(mlir::ModuleOp module, llvm::StringRef file,
                                 BaseLoadSummary &summary);

} // namespace initc

#endif // INITC_TRANSFORMS_PASSES_H
