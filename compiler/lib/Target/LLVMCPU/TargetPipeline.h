//===- TargetPipeline.h - translation, optimization, codegen ----*- C++ -*-===//
//
// Private to Target/LLVMCPU: the steps of LLVMIRPipeline.h on an already resolved target, which
// the library builder runs on several threads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ResolvedTarget.h"
#include "initc/Target/LLVMCPU/LLVMIRPipeline.h"
#include "llvm/ADT/StringSet.h"

namespace initc::target {

/// Lowers `module` if needed and translates it into `ctx`, prepared for `target`.
std::unique_ptr<llvm::Module> translate(mlir::ModuleOp module, llvm::LLVMContext &ctx,
                                        const TargetOptions &options,
                                        const ResolvedTarget &target, std::string &error);

/// Optimizes `module` at `optLevel` and checks that it calls only `kernelNames` and intrinsics.
mlir::LogicalResult optimizeAndCheck(llvm::Module &module, const ResolvedTarget &target,
                                     unsigned optLevel, const llvm::StringSet<> &kernelNames,
                                     std::string &error);

/// Emits `module`'s machine code for `target`.
mlir::LogicalResult emitMachineCode(llvm::Module &module, const ResolvedTarget &target,
                                    CodeFileKind kind, llvm::raw_pwrite_stream &os,
                                    std::string &error);

} // namespace initc::target
