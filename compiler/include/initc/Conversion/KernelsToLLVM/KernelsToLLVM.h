//===- KernelsToLLVM.h - kernel functions to the LLVM dialect ---*- C++ -*-===//
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace initc {

/// Whether code for `cpu` converts f32 to bf16 in one instruction; nullopt (with `error` set)
/// for a CPU the target does not know.
using BF16ConverterQuery =
    llvm::function_ref<std::optional<bool>(llvm::StringRef cpu, std::string &error)>;

/// Lowers `module` (func/arith/math/scf/cf/memref/vector/index/ub/llvm ops) in place to the LLVM
/// dialect. Private functions get internal linkage; public ones stay external (the kernels).
/// bf16 conversions become integer ops (rule 8), but in kernels for CPUs (`initc.target_cpu`,
/// else `defaultCpu`) that `convertsBF16` where random::kNoNaNOrSubnormalAttr marks them.
mlir::LogicalResult lowerKernelsToLLVM(mlir::ModuleOp module, llvm::StringRef defaultCpu,
                                       BF16ConverterQuery convertsBF16, std::string &error);

} // namespace initc
