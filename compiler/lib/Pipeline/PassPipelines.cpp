//===- PassPipelines.cpp - the compile stages as pass pipelines -----------===//
#include "initc/Pipeline/PassPipelines.h"
#include "initc/Conversion/Passes.h"
#include "initc/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace initc;

llvm::ArrayRef<llvm::StringRef> initc::stageNames() {
  static const llvm::StringRef names[] = {"input", "sharded",     "canonical", "dead-inits",
                                          "fused", "partitioned", "llvm"};
  return names;
}

bool initc::parseStage(llvm::StringRef name, Stage &stage) {
  auto names = stageNames();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) {
      stage = (Stage)i;
      return true;
    }
  return false;
}

void initc::addStagePasses(OpPassManager &pm, Stage stage, const StageOptions &options) {
  switch (stage) {
  case Stage::Input:
  case Stage::LLVM:
    return;
  case Stage::Sharded: {
    ApplyShardingOptions sharding;
    sharding.mesh = options.mesh;
    sharding.shard = options.shard;
    pm.addPass(createApplySharding(sharding));
    return;
  }
  case Stage::Canonical:
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    return;
  case Stage::DeadInitsEliminated:
    pm.addPass(createEliminateDeadInits());
    return;
  case Stage::Fused:
    pm.addPass(createFuseElementwise());
    return;
  case Stage::Partitioned: {
    PartitionOptions partition;
    partition.targets = options.targets;
    partition.bf16ConvertingCpus = options.bf16ConvertingCpus;
    pm.addPass(createPartition(partition));
    return;
  }
  }
}

namespace {
/// The command-line form of StageOptions.
struct StagePipelineOptions : public PassPipelineOptions<StagePipelineOptions> {
  Option<std::string> mesh{*this, "mesh",
                           llvm::cl::desc("init-apply-sharding's mesh (`dp=2,tp=2`); empty "
                                          "keeps the module's")};
  Option<std::string> shard{*this, "shard",
                            llvm::cl::desc("init-apply-sharding's preset or rules file; empty "
                                           "keeps the module's shardings")};
  ListOption<std::string> targets{*this, "targets", llvm::cl::desc("init-partition's targets")};
  ListOption<std::string> bf16ConvertingCpus{
      *this, "bf16-converting-cpus", llvm::cl::desc("init-partition's bf16-converting-cpus")};

  StageOptions toStageOptions() const {
    return {mesh, shard, {targets.begin(), targets.end()},
            {bf16ConvertingCpus.begin(), bf16ConvertingCpus.end()}};
  }
};
} // namespace

void initc::registerStagePipelines() {
  for (int last = (int)Stage::Sharded; last <= (int)Stage::Partitioned; ++last) {
    std::string name = ("init-pipeline-" + stageNames()[last]).str();
    std::string description =
        ("the stages of `initc compile` up to " + stageNames()[last] +
         " (what --emit=mlir --stage=" + stageNames()[last] + " prints)")
            .str();
    PassPipelineRegistration<StagePipelineOptions>(
        name, description, [last](OpPassManager &pm, const StagePipelineOptions &options) {
          StageOptions stageOptions = options.toStageOptions();
          for (int stage = (int)Stage::Sharded; stage <= last; ++stage)
            addStagePasses(pm, (Stage)stage, stageOptions);
        });
  }
}
