// Lowering a module of kernel functions through MLIR's LLVM path to a shared object (kernels.so).
//
// The kernels follow the C ABI of initrt::KernelFn (runtime/include/initrt/program.h); how that
// ABI is written in MLIR, which dialects may appear and what the produced library exports is
// specified in ir-spec/lowering.md.
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
class raw_pwrite_stream;
} // namespace llvm

namespace initc::target {

struct TargetOptions {
  // Kernels carrying `initc.target_cpu` (init-partition's targets option) are compiled for that
  // CPU; the others, and the target machine, for `cpu`.
  std::string cpu = "x86-64-v3";   // portable default with AVX2; "native" resolves to the host
  std::string features;            // extra "+feature,-feature" list, optional
  unsigned optLevel = 3;           // 0..3
  std::string linker;              // empty: find `cc` then `c++` then `gcc` on PATH
  unsigned threads = 0;            // optimization/codegen threads; 0: all hardware threads
};

/// The CPU name the kernels are compiled for: `options.cpu`, with "native" resolved to the host
/// CPU. Recorded in program.json as `targetCpu`.
std::string resolveTargetCpu(const TargetOptions &options);

/// The instruction-set extensions (initrt::detectableCpuExtensions(), LLVM's names) that code
/// compiled for `cpu` ("native" allowed) with `options.features` may use; prog/init runs it only
/// on a CPU with all of them. Extensions the runtime cannot detect are turned off in such code.
std::optional<std::vector<std::string>> cpuExtensions(llvm::StringRef cpu,
                                                      const TargetOptions &options,
                                                      std::string &error);

/// The number of vector registers code for `cpu` ("native" allowed) may use: 32 with AVX-512,
/// else 16. Fails with a message for a CPU LLVM does not know.
std::optional<unsigned> vectorRegisters(llvm::StringRef cpu, const TargetOptions &options,
                                        std::string &error);

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

/// Lowers, translates, optimizes, emits an object file and links it into a shared library at
/// `soPath` (written atomically: a temporary in the same directory, then rename). The library
/// exports exactly the module's public functions, with default visibility, and depends on no
/// other library. Large modules are split into partitions that are optimized and compiled on
/// `options.threads` threads; the partitions do not depend on the thread count, so the library's
/// bytes do not either. Returns a failure with a message on any error.
mlir::LogicalResult emitSharedObject(mlir::ModuleOp module, llvm::StringRef soPath,
                                     const TargetOptions &options, std::string &error);

} // namespace initc::target
