//===- LoadFromBase.cpp - take the parameters a base checkpoint has -------===//
#include "initc/Support/DType.h"
#include "initc/Transforms/Passes.h"
#include "initrt/base/base_checkpoint.h"

#include "llvm/ADT/StringSet.h"

namespace initc {
#define GEN_PASS_DEF_LOADFROMBASE
#include "initc/Transforms/Passes.h.inc"
} // namespace initc

using namespace mlir;
using namespace initc;
using namespace initc::init;

namespace {

// Up to three names, quoted, and how many there are in all: for messages.
std::string someOf(llvm::ArrayRef<std::string> names) {
  std::string text;
  for (size_t i = 0; i < std::min<size_t>(names.size(), 3); ++i)
    text += (i ? ", '" : "'") + names[i] + "'";
  return text + (names.size() > 3 ? ", ..." : "");
}

} // namespace

LogicalResult initc::loadFromBase(ModuleOp module, llvm::StringRef file, BaseLoadSummary &summary) {
  summary = BaseLoadSummary();
  // Diagnostics at locations, not on ops: initc-opt would print the op (the whole module) too.
  if (file.empty())
    return emitError(module.getLoc()) << "init-load-from-base: no file: pass file=BASE.safetensors";
  initrt::BaseFiles files;
  std::string error;
  std::optional<std::vector<std::string>> names = files.tensorNames(file.str(), error);
  if (!names)
    return emitError(module.getLoc()) << error;
  if (names->empty())
    return emitError(module.getLoc()) << file << " holds no tensors";
  llvm::StringSet<> inBase;
  for (const std::string &name : *names)
    inBase.insert(name);
  // The names tied to each parameter: a base may hold a tied tensor under any of them.
  llvm::StringMap<SmallVector<ParamOp>> tiedTo;
  for (ParamOp param : module.getOps<ParamOp>())
    if (auto target = param.getTiedToAttr())
      tiedTo[target.getValue()].push_back(param);

  // A fused parameter whose region others share (init.elementwise_like): replacing its body
  // would take their region away.
  llvm::StringMap<StringRef> sharedBy;
  module.walk([&](ElementwiseLikeOp like) {
    sharedBy.try_emplace(like.getLike(), like->getParentOfType<ParamOp>().getSymName());
  });

  llvm::StringSet<> taken; // tensors of the base that a parameter loads, or that are said apart
  for (ParamOp param : llvm::to_vector(module.getOps<ParamOp>())) {
    if (param.getTiedTo())
      continue;
    StringRef name = param.getSymName();
    // Not part of a checkpoint: computed, as transformers' from_pretrained does.
    if (param.getNonpersistent()) {
      summary.computed.push_back(name.str());
      if (inBase.contains(name)) {
        taken.insert(name);
        emitWarning(param.getLoc()) << file << "'s '" << name
                                    << "' is not loaded: the model computes its non-persistent "
                                       "buffers";
      }
      continue;
    }
    // Its own name first, then a name tied to it (lm_head.weight for a tied embedding).
    StringRef source = inBase.contains(name) ? name : StringRef();
    for (ParamOp tied : tiedTo.lookup(name)) {
      StringRef alias = tied.getSymName();
      if (!inBase.contains(alias))
        continue;
      if (source.empty()) {
        source = alias;
        continue;
      }
      taken.insert(alias);
      emitWarning(tied.getLoc()) << "the model ties '" << alias << "' to '" << name << "', so "
                                 << file << "'s own '" << alias << "' is not loaded: '" << name
                                 << "' takes the base's '" << source
                                 << "' (untie them in the model to keep both)";
    }
    if (source.empty()) {
      summary.computed.push_back(name.str());
      continue;
    }
    taken.insert(source);
    if (param.getKernelAttr())
      return emitError(param.getLoc())
             << "init-load-from-base: the parameter is already partitioned; load from the base "
                "before init-partition";
    if (auto follower = sharedBy.find(name); follower != sharedBy.end())
      return emitError(param.getLoc())
             << "init-load-from-base: '" << follower->second << "' shares the fused region of '"
             << name << "' (init.elementwise_like); load from the base before "
             << "init-fuse-elementwise";
    RankedTensorType type = param.getTensorType();
    std::optional<initrt::BaseTensor> tensor = files.find(file.str(), source.str(), error);
    initrt::DType dtype;
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    if (tensor && !dtypeOf(type.getElementType(), dtype))
      return emitError(param.getLoc())
             << "parameter '" << name << "' has the element type " << type.getElementType()
             << ", which no safetensors dtype init.load reads matches";
    if (!tensor || !initrt::checkBaseTensor(*tensor, name.str(), dtype, shape, error))
      return emitError(param.getLoc()) << error;
    // The recipe goes; the parameter's name, type, axes and sharding stay.
    Block &body =
        param.getBody().empty() ? param.getBody().emplaceBlock() : param.getBody().front();
    body.dropAllReferences();
    body.clear();
    OpBuilder builder = OpBuilder::atBlockEnd(&body);
    auto load = builder.create<LoadOp>(param.getLoc(), type, file, source);
    builder.create<YieldOp>(param.getLoc(), load.getResult());
    summary.loaded.push_back(name.str());
  }
  for (const std::string &name : *names)
    if (!taken.contains(name))
      summary.unused.push_back(name);
  // Said of the model as a whole, at its first parameter: a parsed module's own location is
  // line 0 of its file.
  auto params = module.getOps<ParamOp>();
  Location where = params.empty() ? module.getLoc() : (*params.begin()).getLoc();
  if (summary.loaded.empty())
    return emitError(where) << file << " has none of the model's parameters: its tensors are "
                            << someOf(*names) << ", the model's " << someOf(summary.computed)
                            << "; is it a checkpoint of this model?";
  if (!summary.unused.empty())
    emitWarning(where) << file << " has " << summary.unused.size() << " tensor"
                       << (summary.unused.size() == 1 ? "" : "s") << " the model does not ("
                       << someOf(summary.unused) << "): they are not loaded";
  return success();
}

namespace {
struct LoadFromBasePass : initc::impl::LoadFromBaseBase<LoadFromBasePass> {
  using LoadFromBaseBase::LoadFromBaseBase;
  void runOnOperation() override {
    BaseLoadSummary summary;
    if (failed(loadFromBase(getOperation(), file, summary)))
      return signalPassFailure();
    numLoaded += summary.loaded.size();
  }
  Statistic numLoaded{this, "loaded", "parameters that load their values"};
};
} // namespace
