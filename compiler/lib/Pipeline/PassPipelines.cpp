//===- PassPipelines.cpp - the compile stages as pass pipelines -----------===//
#include "initc/Pipeline/PassPipelines.h"
#include "initc/Conversion/Passes.h"
#include "initc/Pipeline/Pipeline.h"
#include "initc/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
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
/// The partitioned stage for CPUs named as `initc compile --target-cpu` names them: the targets
/// come from the CPUs and the module as runPipeline derives them (kernelTargets, then
/// partitionStageOptions, which needs the module as this stage sees it), then init-partition
/// runs with them.
class PartitionForTargetCpus
    : public PassWrapper<PartitionForTargetCpus, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PartitionForTargetCpus)

  explicit PartitionForTargetCpus(std::vector<std::string> cpus) : cpus(std::move(cpus)) {}
  StringRef getArgument() const override { return "init-partition-for-target-cpus"; }
  StringRef getDescription() const override {
    return "init-partition, for the targets initc compile derives from its --target-cpu";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    createPartition()->getDependentDialects(registry);
  }

  void runOnOperation() override {
    target::TargetOptions targetOptions;
    targetOptions.cpu = targetCpuName(cpus.back()); // as initc compile: the most portable
    PipelineOptions pipeline;
    std::string error;
    if (failed(kernelTargets(cpus, targetOptions, pipeline, error))) {
      getOperation().emitError() << "target-cpu: " << error;
      return signalPassFailure();
    }
    OpPassManager partition(ModuleOp::getOperationName());
    addStagePasses(partition, Stage::Partitioned, partitionStageOptions(getOperation(), pipeline));
    if (failed(runPipeline(partition, getOperation())))
      signalPassFailure();
  }

private:
  std::vector<std::string> cpus;
};

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
  ListOption<std::string> targetCpus{
      *this, "target-cpu",
      llvm::cl::desc("initc compile's --target-cpu: CPUs (best first) from which init-partition's "
                     "targets and bf16-converting-cpus are derived as initc compile derives "
                     "them; replaces those two options")};

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
          for (int stage = (int)Stage::Sharded; stage <= last; ++stage) {
            if (stage == (int)Stage::Partitioned && !options.targetCpus.empty())
              pm.addPass(std::make_unique<PartitionForTargetCpus>(
                  std::vector<std::string>(options.targetCpus.begin(), options.targetCpus.end())));
            else
              addStagePasses(pm, (Stage)stage, stageOptions);
          }
        });
  }
}
