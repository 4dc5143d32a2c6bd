// The LLVM IR pipeline of the kernels: the LLVM dialect, LLVM IR, optimized, machine code.
//
// Strict floating point and the CPU set on every function: see ir-spec/lowering.md.
#pragma once

#include "initc/Target/LLVMCPU/TargetOptions.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class raw_pwrite_stream;
} // namespace llvm

namespace initc::target {

/// Lowers `module` (func/arith/math/scf/cf/memref/vector/index/ub/llvm ops) in place to the LLVM
/// dialect. Private functions get internal linkage; public ones stay external (the kernels).
/// bf16 conversions become integer ops (rule 8), but for CPUs (`initc.target_cpu`, else
/// `options.cpu`) with AVX512-BF16 where random::kNoNaNOrSubnormalAttr marks them.
mlir::LogicalResult lowerToLLVMDialect(mlir::ModuleOp module, const TargetOptions &options,
                                       std::string &error);

/// Lowers `module` to the LLVM dialect if it is not already, translates it to LLVM IR in `ctx`,
/// and optimizes it at `options.optLevel` for the target: triple, data layout, target-cpu and
/// target-features are set on the module and every function before the pipeline runs, so that
/// the vectorizers see the real vector width. Fast-math flags are stripped; only defined external
/// functions stay external. Fails if the optimized module still calls a function it does not
/// define (kernels must be self-contained: no libm, no libc).
std::unique_ptr<llvm::Module> translateAndOptimize(mlir::ModuleOp module, llvm::LLVMContext &ctx,
                                                   const TargetOptions &options,
                                                   std::string &error);

enum class CodeFileKind { Assembly, Object };

/// Emits machine code for an optimized module (from translateAndOptimize with the same options)
/// as assembly text or an ELF object, with strict floating point (no FMA contraction).
mlir::LogicalResult emitMachineCode(llvm::Module &module, const TargetOptions &options,
                                    CodeFileKind kind, llvm::raw_pwrite_stream &os,
                                    std::string &error);

} // namespace initc::target
