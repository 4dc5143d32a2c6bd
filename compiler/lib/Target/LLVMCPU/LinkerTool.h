//===- LinkerTool.h - the C compiler driver that links kernels.so -*- C++ -*-===//
//
// Private to Target/LLVMCPU.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "initc/Target/LLVMCPU/TargetArchitecture.h"
#include "initc/Target/LLVMCPU/TargetOptions.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringSet.h"

#include <optional>
#include <string>

namespace initc::target {

/// The C compiler driver that links the object into a shared library for `architecture`: the
/// --linker, else the first of the architecture's drivers on PATH.
std::optional<std::string> findLinker(const TargetOptions &options,
                                      const TargetArchitecture &architecture, std::string &error);

/// Symbols the object needs from outside: the linker would reject them (-z defs), but this
/// message names the cause. Compiler helpers (`__truncsfhf2`, ...) come from libgcc.
mlir::LogicalResult checkObjectImports(llvm::StringRef objectPath,
                                       const llvm::StringSet<> &kernelNames, std::string &error);

/// Runs `linker` with `args`, its output kept in `logPath` and reported on failure.
mlir::LogicalResult runLinker(llvm::StringRef linker, llvm::ArrayRef<std::string> args,
                              const std::string &logPath, std::string &error);

} // namespace initc::target
