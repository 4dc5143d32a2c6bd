//===- ApplySharding.cpp - mesh and shardings from --mesh / --shard -------===//
#include "initc/Transforms/Passes.h"
#include "initc/Transforms/Sharding.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/JSON.h"

namespace initc {
#define GEN_PASS_DEF_APPLYSHARDING
#include "initc/Transforms/Passes.h.inc"
} // namespace initc

using namespace mlir;
using namespace initc;
using namespace initc::init;

namespace {
struct ApplyShardingPass : initc::impl::ApplyShardingBase<ApplyShardingPass> {
  using ApplyShardingBase::ApplyShardingBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshSpec spec;
    std::string error;
    if (mesh.empty()) {
      // Keep the module's mesh, if any; without one there is nothing to shard over.
      auto meshes = llvm::to_vector(module.getOps<mesh::MeshOp>());
      if (meshes.empty()) {
        if (!shard.empty() && shard != "replicated") {
          module.emitError("--shard needs a mesh: pass --mesh, e.g. --mesh dp=2,tp=2");
          return signalPassFailure();
        }
        return;
      }
      spec.shape.assign(meshes[0].getShape().begin(), meshes[0].getShape().end());
      for (auto &n : getMeshAxisNames(meshes[0]))
        spec.axisNames.push_back(n);
    } else if (failed(parseMeshSpec(mesh, spec, error))) {
      module.emitError("--mesh: ") << error;
      return signalPassFailure();
    }
    if (shard.empty()) {
      if (!mesh.empty()) { // a mesh alone would be dropped: say how to use it
        module.emitError("--mesh needs --shard: pass a preset (replicated, fsdp, tp, fsdp+tp, "
                         "torchtitan, megatron, maxtext) or "
                         "a JSON rules file");
        return signalPassFailure();
      }
      return; // validation of existing shardings is the verifier's job
    }

    auto rules = ShardingRules::load(shard, spec, error);
    if (!rules) {
      module.emitError("--shard: ") << error;
      return signalPassFailure();
    }

    // Replace the module's meshes with the requested one.
    OpBuilder builder(module.getBodyRegion());
    for (auto old : llvm::make_early_inc_range(module.getOps<mesh::MeshOp>()))
      old.erase();
    builder.setInsertionPointToStart(module.getBody());
    if (auto seed = llvm::to_vector(module.getOps<SeedOp>()); !seed.empty())
      builder.setInsertionPointAfter(seed.front());
    auto meshOp = builder.create<mesh::MeshOp>(module.getLoc(), "mesh", spec.shape);
    SmallVector<Attribute> names;
    for (auto &n : spec.axisNames)
      names.push_back(builder.getStringAttr(n));
    meshOp->setAttr(InitDialect::kAxisNamesAttr, builder.getArrayAttr(names));
    auto meshRef = FlatSymbolRefAttr::get(meshOp.getSymNameAttr());
    const int stageAxis = rules->stageAxis();
    if (stageAxis >= 0)
      meshOp->setAttr(InitDialect::kStageAxisAttr, builder.getStringAttr(spec.axisNames[stageAxis]));
    // The head counts of an imported model: Megatron's fused attention splits by them.
    int64_t heads = 0, kvHeads = 0;
    if (auto text = module->getAttrOfType<StringAttr>(InitDialect::kHfConfigAttr)) {
      llvm::Expected<llvm::json::Value> config = llvm::json::parse(text.getValue());
      if (!config) {
        llvm::consumeError(config.takeError()); // the verifier rejects such a module
      } else if (const llvm::json::Object *object = config->getAsObject()) {
        heads = object->getInteger("num_attention_heads").value_or(0);
        kvHeads = object->getInteger("num_key_value_heads").value_or(heads);
      }
    }
    std::vector<ParamOp> untied;
    std::vector<ParamShape> shapes;
    std::vector<int64_t> rankBytes; // of each untied parameter's largest shard

    for (ParamOp param : module.getOps<ParamOp>()) {
      if (auto tied = param.getTiedToAttr()) {
        // shares the storage, and so the sharding, of the parameter it is tied to
        rules->noteTied(param.getSymName(), tied.getValue());
        continue;
      }
      ParamShape shape;
      shape.name = param.getSymName().str();
      shape.buffer = param.getBuffer();
      shape.shape.assign(param.getTensorType().getShape().begin(),
                         param.getTensorType().getShape().end());
      if (auto axes = param.getAxes())
        for (Attribute a : *axes)
          shape.axes.push_back(cast<StringAttr>(a).getValue().str());
      if (llvm::is_contained(shape.axes, "kv_heads"))
        shape.heads = kvHeads;
      else if (llvm::is_contained(shape.axes, "heads"))
        shape.heads = heads;
      untied.push_back(param);
      shapes.push_back(shape);
      DimAxes split;
      if (failed(rules->apply(shape, split, error))) {
        param.emitError() << error;
        return signalPassFailure();
      }
      int64_t bytes = (param.getTensorType().getElementTypeBitWidth() + 7) / 8;
      for (size_t d = 0; d < shape.shape.size(); ++d) {
        int64_t parts = 1;
        for (int axis : split[d])
          parts *= spec.shape[axis];
        bytes *= (shape.shape[d] + parts - 1) / parts;
      }
      rankBytes.push_back(bytes);
      // Trailing unsplit dims are left out, as the mesh dialect prints them, but one is kept:
      // LLVM 19's parser rejects the empty list `#mesh.shard<@mesh, []>` its printer writes.
      while (split.size() > 1 && split.back().empty())
        split.pop_back();
      if (split.empty())
        split.emplace_back(); // a scalar
      SmallVector<SmallVector<mesh::MeshAxis>> axes;
      for (auto &dim : split)
        axes.push_back(SmallVector<mesh::MeshAxis>(dim.begin(), dim.end()));
      param.setShardingAttr(mesh::MeshShardingAttr::get(&getContext(), meshRef, axes));
    }
    if (stageAxis >= 0) {
      std::vector<int64_t> stages;
      if (failed(rules->assignStages(shapes, rankBytes, stages, error))) {
        module.emitError("--shard: ") << error;
        return signalPassFailure();
      }
      for (size_t i = 0; i < untied.size(); ++i)
        if (stages[i] >= 0)
          untied[i].setStageAttr(builder.getI64IntegerAttr(stages[i]));
    }
    if (failed(rules->checkAllRulesUsed(error))) {
      module.emitError() << error;
      return signalPassFailure();
    }
    if (std::string warning = rules->presetWarning(); !warning.empty())
      module.emitWarning() << warning;
  }
};
} // namespace
