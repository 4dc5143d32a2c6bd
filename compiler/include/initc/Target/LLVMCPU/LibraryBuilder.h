// Lowering a module of kernel functions through MLIR's LLVM path to a shared object (kernels.so).
//
// The kernels follow the C ABI of initrt::KernelFn (runtime/include/initrt/program.h); how that
// ABI is written in MLIR, which dialects may appear and what the produced library exports is
// specified in ir-spec/lowering.md.
#pragma once

#include "initc/Target/LLVMCPU/CPUResolution.h"
#include "initc/Target/LLVMCPU/LLVMIRPipeline.h"
#include "initc/Target/LLVMCPU/TargetOptions.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace initc::target {

/// Lowers, translates, optimizes, emits an object file and links it into a shared library at
/// `soPath` (written atomically: a temporary in the same directory, then rename). The library
/// exports exactly the module's public functions, with default visibility, and depends on no
/// other library. Large modules are split into partitions that are optimized and compiled on
/// `options.threads` threads; the partitions do not depend on the thread count, so the library's
/// bytes do not either. Returns a failure with a message on any error.
mlir::LogicalResult emitSharedObject(mlir::ModuleOp module, llvm::StringRef soPath,
                                     const TargetOptions &options, std::string &error);

} // namespace initc::target
