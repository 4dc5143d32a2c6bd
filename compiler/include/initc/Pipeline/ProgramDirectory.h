//===- ProgramDirectory.h - kernels.so, program.json, prog/init -*- C++ -*-===//
//
// The program directory `initc compile` writes (ir-spec/program-format.md) from a partitioned module.
//
//===----------------------------------------------------------------------===//
#ifndef INITC_PIPELINE_PROGRAMDIRECTORY_H
#define INITC_PIPELINE_PROGRAMDIRECTORY_H

#include "initc/Target/LLVMCPU/TargetOptions.h"
#include "initrt/base/program.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace initc {

/// Moves the kernels of a partitioned module into a module of their own, for the target.
mlir::OwningOpRef<mlir::ModuleOp> extractKernels(mlir::ModuleOp module);

/// The CPUs the kernels of `kernels` (from extractKernels, before lowering) were built for, in
/// init-partition's order (best first), with each one's symbol suffix and the CPU extensions its
/// code may use; kernels partitioned without targets make one variant, for options.cpu.
mlir::FailureOr<std::vector<initrt::KernelVariant>>
kernelVariants(mlir::ModuleOp kernels, const target::TargetOptions &options, std::string &error);

/// Writes a complete program directory at `dir` (kernels.so, program.json, the `init` runtime
/// copied from `runtimePath`), built under a temporary name next to it and renamed into place.
mlir::LogicalResult writeProgramDir(mlir::ModuleOp partitioned, llvm::StringRef modelName,
                                    llvm::StringRef dir, llvm::StringRef runtimePath,
                                    const target::TargetOptions &targetOptions,
                                    initrt::Program &program, std::string &error);

} // namespace initc

#endif // INITC_PIPELINE_PROGRAMDIRECTORY_H
