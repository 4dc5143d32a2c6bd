//===- Pipeline.h - from an init module to a program directory --*- C++ -*-===//
//
// The compile pipeline as named stages (what `initc compile --emit=mlir --stage=NAME` prints),
// and the rank table the runtime reads (initrt::Program, runtime/include/initrt/program.h).
//
//===----------------------------------------------------------------------===//
#ifndef INITC_PIPELINE_PIPELINE_H
#define INITC_PIPELINE_PIPELINE_H

#include "initc/Target/SharedObject.h"
#include "initrt/program.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace initc {

/// The stages, in order. Each names the IR after it.
enum class Stage { Input, Sharded, Canonical, DeadInitsEliminated, Fused, Partitioned, LLVM };
llvm::ArrayRef<llvm::StringRef> stageNames(); // "input", "sharded", ...
bool parseStage(llvm::StringRef name, Stage &stage);

struct PipelineOptions {
  std::string mesh;   // `dp=2,tp=2`; empty keeps the module's mesh
  std::string shard;  // preset or rules file; empty keeps the module's shardings
  bool printTiming = false;
};

/// Reads and verifies a module (syntax, op verifiers, and the model-level checks), reporting
/// errors with file and line through the context's diagnostics.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(mlir::MLIRContext &context, llvm::StringRef path);

/// Runs the stages up to and including `last`.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, const PipelineOptions &options,
                                Stage last);

/// The rank table of a sharded (or partitioned) module: mesh, parameters, shardings, kernels.
/// Tied parameters become aliases of the parameter they are tied to.
mlir::LogicalResult buildProgram(mlir::ModuleOp module, llvm::StringRef modelName,
                                 initrt::Program &program, std::string &error);

/// Moves the kernels of a partitioned module into a module of their own, for the target.
mlir::OwningOpRef<mlir::ModuleOp> extractKernels(mlir::ModuleOp module);

/// Writes a complete program directory at `dir` (kernels.so, program.json, the `init` runtime
/// copied from `runtimePath`), built under a temporary name next to it and renamed into place.
mlir::LogicalResult writeProgramDir(mlir::ModuleOp partitioned, llvm::StringRef modelName,
                                    llvm::StringRef dir, llvm::StringRef runtimePath,
                                    const target::TargetOptions &targetOptions,
                                    initrt::Program &program, std::string &error);

} // namespace initc

#endif // INITC_PIPELINE_PIPELINE_H
