//===- Pipeline.h - from an init module to a program directory --*- C++ -*-===//
//
// The compile pipeline as named stages (what `initc compile --emit=mlir --stage=NAME` prints),
// and the rank table the runtime reads (initrt::Program, runtime/include/initrt/program.h).
//
//===----------------------------------------------------------------------===//
#ifndef INITC_PIPELINE_PIPELINE_H
#define INITC_PIPELINE_PIPELINE_H

#include "initc/Pipeline/PassPipelines.h"
#include "initc/Pipeline/ProgramDirectory.h"
#include "initc/Target/LLVMCPU/LibraryBuilder.h"
#include "initrt/base/program.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace initc {

struct PipelineOptions {
  std::string mesh;   // `dp=2,tp=2`; empty keeps the module's mesh
  std::string shard;  // preset or rules file; empty keeps the module's shardings
  /// The first stage to run: the module holds the IR after the stage before it.
  Stage first = Stage::Input;
  /// With a scope, each stage's passes are timed in a scope of it named after the stage.
  mlir::TimingScope *timing = nullptr;
  /// init-partition's targets: `CPU:GROUPSxBLOCKS` per CPU each kernel is built for, best first
  /// (kernelTargets() makes them); empty: one kernel per recipe for TargetOptions::cpu.
  std::vector<std::string> kernelTargets;
  /// The CPUs of kernelTargets that convert f32 to bf16 in one instruction (AVX512-BF16), by
  /// whatever name: init-partition orders their bf16 lanes around that instruction.
  std::vector<std::string> bf16ConvertingCpus;
};

/// The CPU of a `--target-cpu` entry: `CPU` or `CPU:GROUPS[xBLOCKS]`.
inline std::string targetCpuName(llvm::StringRef entry) { return entry.split(':').first.str(); }

/// Sets `pipeline`'s init-partition targets for `cpus` (best first, "native" allowed): several
/// block groups per iteration (independent chains to hide latency), three of 16 blocks with
/// AVX-512's 32 vector registers, else two of 8; an entry `CPU:GROUPS[xBLOCKS]` keeps its own.
/// Also lists those of them with AVX512-BF16 (bf16ConvertingCpus). Fails with a message for an
/// unknown CPU or one listed twice.
mlir::LogicalResult kernelTargets(llvm::ArrayRef<std::string> cpus,
                                  const target::TargetOptions &options,
                                  PipelineOptions &pipeline, std::string &error);

/// The partitioned stage's options for `module` as that stage sees it (which variants are worth
/// building depends on it): pipeline's kernelTargets without a CPU+avx512bf16 one when no kernel
/// converts a sample to bf16 by that instruction, and those of its bf16ConvertingCpus still
/// targeted.
StageOptions partitionStageOptions(mlir::ModuleOp module, const PipelineOptions &pipeline);

/// Reads and verifies a module (syntax, op verifiers, and the model-level checks), reporting
/// errors with file and line through the context's diagnostics. A file that cannot be read or
/// is not IR text at all (binary, JSON) sets `error` instead, with what to pass.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(mlir::MLIRContext &context, llvm::StringRef path,
                                            std::string &error);

/// Runs the stages from options.first up to and including `last`. The input stage checks the
/// tensors init.load reads, where their files are.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, const PipelineOptions &options,
                                Stage last);

/// The rank table of a sharded (or partitioned) module: mesh, parameters, shardings, kernels.
/// Tied parameters become aliases of the parameter they are tied to.
mlir::LogicalResult buildProgram(mlir::ModuleOp module, llvm::StringRef modelName,
                                 initrt::Program &program, std::string &error);

} // namespace initc

#endif // INITC_PIPELINE_PIPELINE_H
