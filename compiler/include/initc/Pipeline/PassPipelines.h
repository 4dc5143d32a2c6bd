//===- PassPipelines.h - the compile stages as pass pipelines ---*- C++ -*-===//
//
// Each stage of `initc compile` (what `--emit=mlir --stage=NAME` prints) is a named pass
// pipeline: initc-opt runs `--init-pipeline-NAME`, the stages from the input up to NAME, and
// runPipeline (Pipeline.h) builds its stages from the same functions.
//
//===----------------------------------------------------------------------===//
#ifndef INITC_PIPELINE_PASSPIPELINES_H
#define INITC_PIPELINE_PASSPIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace initc {

/// The stages, in order. Each names the IR after it.
enum class Stage { Input, Sharded, Canonical, DeadInitsEliminated, Fused, Partitioned, LLVM };
llvm::ArrayRef<llvm::StringRef> stageNames(); // "input", "sharded", ...
bool parseStage(llvm::StringRef name, Stage &stage);

/// What the stages' passes take: init-apply-sharding's mesh and shard, init-partition's
/// targets and bf16-converting-cpus (their flags' meanings).
struct StageOptions {
  std::string mesh, shard;
  std::vector<std::string> targets, bf16ConvertingCpus;
};

/// Adds the passes of `stage` alone to `pm`: none for input (runPipeline checks its base
/// checkpoints) and llvm (the target's).
void addStagePasses(mlir::OpPassManager &pm, Stage stage, const StageOptions &options);

/// Registers `--init-pipeline-NAME` for every stage from sharded to partitioned.
void registerStagePipelines();

} // namespace initc

#endif // INITC_PIPELINE_PASSPIPELINES_H
