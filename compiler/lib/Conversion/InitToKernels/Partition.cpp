//===- Partition.cpp - one native kernel per recipe and target CPU --------===//
//
// init-partition gives every parameter whose value the compiler computes a kernel: one per
// distinct recipe (the same ops, constants, element type and rank; Philox keys are arguments
// and extents are read at run time), built for each target CPU of the `targets` option
// (SliceKernel.cpp), so that any rank of any mesh runs the same code on its own slice. An
// orthogonal parameter gets the kernel of its N(0, 1) source matrix, which the runtime factors.
//
//===----------------------------------------------------------------------===//
#include "CanonicalNaN.h"
#include "initc/Conversion/InitToKernels/SliceKernel.h"
#include "initc/Conversion/Passes.h"
#include "initc/Random/Expand.h"
#include "initrt/base/rng.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/StringSet.h"

namespace initc {
#define GEN_PASS_DEF_PARTITION
#include "initc/Conversion/Passes.h.inc"
} // namespace initc

using namespace mlir;
using namespace initc;
using namespace initc::init;

namespace {

/// The source of an orthogonal parameter (strategy redundant): its N(0, 1) matrix as f32, drawn
/// by the RNG contract at global indices with the op's stream. The runtime computes it for the
/// whole tensor, factors it and keeps its slice (program.json "transform": "orthogonal").
ElementwiseOp buildOrthogonalSource(OrthogonalOp op, uint64_t seed, StringRef paramName) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  RankedTensorType type = op.getType();
  auto f32Type = RankedTensorType::get(type.getShape(), b.getF32Type());
  auto k = initrt::rng::deriveKey(seed, std::string_view(paramName.data(), paramName.size()),
                                  (uint64_t)op.getStream());
  // The key is a kernel argument, as init-fuse-elementwise passes keys.
  int64_t key = (int64_t)(((uint64_t)k.k1 << 32) | k.k0);
  auto source = b.create<ElementwiseOp>(loc, f32Type, b.getDenseI64ArrayAttr({key}));
  Block *block = b.createBlock(&source.getBody());
  for (int64_t d = 0; d <= type.getRank() + 1; ++d)
    block->addArgument(b.getI64Type(), loc);
  b.setInsertionPointToStart(block);
  Value sample = random::emitNormal(b, loc, block->getArgument(0),
                                    block->getArgument(type.getRank() + 1), 0.0, 1.0);
  b.create<YieldOp>(loc, sample);
  return source;
}

/// One entry of the pass's `targets` option: `CPU`, `CPU:GROUPS` or `CPU:GROUPSxBLOCKS`, either
/// shape followed by `p` for a software-pipelined loop.
struct KernelTarget {
  std::string cpu;
  VectorLoop loop;
  std::string suffix; // appended to the kernel name; empty for the first target
  bool convertsBF16 = false; // listed in bf16-converting-cpus
};

/// The kernels made so far, by recipe: a fused op's region, element type and rank (its
/// extents are read at run time, its keys are arguments). A hash of the ops narrows the search
/// and structural equivalence decides, so that a model of many parameters is not printed op by
/// op to compare them.
class KernelRecipes {
public:
  KernelRecipes() = default;
  KernelRecipes(const KernelRecipes &) = delete;
  KernelRecipes &operator=(const KernelRecipes &) = delete;
  ~KernelRecipes() {
    for (Recipe &recipe : recipes)
      recipe.op->erase();
  }

  /// The name of the kernel of `fused`'s recipe (its `args` removed), to be set by the caller
  /// when empty: the recipe is new.
  std::string &kernelOf(ElementwiseOp fused) {
    SmallVector<size_t> &candidates = byHash[hashOf(fused)];
    for (size_t index : candidates)
      if (same(recipes[index].op, fused))
        return recipes[index].kernel;
    candidates.push_back(recipes.size());
    recipes.push_back({cast<ElementwiseOp>(fused->clone()), ""}); // kept while the original goes
    return recipes.back().kernel;
  }

private:
  struct Recipe {
    ElementwiseOp op;
    std::string kernel;
  };

  static unsigned hashOf(ElementwiseOp fused) {
    RankedTensorType type = fused.getType();
    llvm::hash_code hash =
        llvm::hash_combine(type.getElementType(), type.getRank(), fused->getAttrDictionary());
    fused.getBody().walk([&](Operation *op) {
      hash = llvm::hash_combine(
          hash, OperationEquivalence::computeHash(op, OperationEquivalence::ignoreHashValue,
                                                  OperationEquivalence::ignoreHashValue,
                                                  OperationEquivalence::IgnoreLocations));
    });
    return unsigned(size_t(hash));
  }

  static bool same(ElementwiseOp a, ElementwiseOp b) {
    RankedTensorType ta = a.getType(), tb = b.getType();
    return ta.getElementType() == tb.getElementType() && ta.getRank() == tb.getRank() &&
           a->getAttrDictionary() == b->getAttrDictionary() &&
           OperationEquivalence::isRegionEquivalentTo(&a.getBody(), &b.getBody(),
                                                      OperationEquivalence::IgnoreLocations);
  }

  SmallVector<Recipe> recipes;
  llvm::DenseMap<unsigned, SmallVector<size_t>> byHash;
};

struct PartitionPass : initc::impl::PartitionBase<PartitionPass> {
  using PartitionBase::PartitionBase;

  LogicalResult parseTargets(SmallVectorImpl<KernelTarget> &out) {
    llvm::StringSet<> cpus, suffixes;
    for (const std::string &entry : targets) {
      auto [cpu, shape] = StringRef(entry).split(':');
      KernelTarget target;
      target.loop.pipelined = shape.consume_back("p");
      auto [count, blocks] = shape.split('x');
      target.cpu = cpu.str();
      target.convertsBF16 = llvm::is_contained(bf16ConvertingCpus, target.cpu);
      bool emptyShape = StringRef(entry).contains(':') && count.empty(); // "CPU:" or "CPU:x16"
      int64_t &groups = target.loop.groups;
      bool badGroups = emptyShape || (!count.empty() && (count.getAsInteger(10, groups) ||
                                                         groups < 1 || groups > kMaxGroups));
      bool badBlocks = shape.contains('x') &&
                       (blocks.getAsInteger(10, target.loop.vectorBlocks) ||
                        (target.loop.vectorBlocks != kDefaultVectorBlocks &&
                         target.loop.vectorBlocks != kMaxVectorBlocks));
      if (cpu.empty() || badGroups || badBlocks)
        return getOperation().emitError()
               << "init-partition: target '" << entry
               << "' is not CPU, CPU:GROUPS or CPU:GROUPSxBLOCKS (then p for a software-pipelined "
                  "loop) with GROUPS in 1.."
               << kMaxGroups << " and BLOCKS " << kDefaultVectorBlocks << " or "
               << kMaxVectorBlocks;
      if (!out.empty()) {
        target.suffix = ".";
        for (char c : target.cpu)
          target.suffix += llvm::isAlnum(c) ? c : '_';
      }
      if (!cpus.insert(target.cpu).second || !suffixes.insert(target.suffix).second)
        return getOperation().emitError()
               << "init-partition: target '" << target.cpu << "' is listed twice";
      out.push_back(std::move(target));
    }
    for (const std::string &cpu : bf16ConvertingCpus)
      if (!cpus.contains(cpu))
        return getOperation().emitError()
               << "init-partition: bf16-converting-cpus names '" << cpu
               << "', which is not one of the targets' CPUs";
    if (out.empty())
      out.push_back(KernelTarget{});
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<KernelTarget> kernelTargets;
    if (failed(parseTargets(kernelTargets)))
      return signalPassFailure();
    uint64_t seed = getModelSeed(module);
    OpBuilder builder(module.getBodyRegion());
    builder.setInsertionPointToEnd(module.getBody());
    // Identical recipes (same ops, constants, rank and element type; keys aside) share a kernel.
    KernelRecipes recipes;
    int64_t next = 0;
    // Parameters computed like another take its kernel once it has one.
    SmallVector<std::pair<ParamOp, ElementwiseLikeOp>> likeOthers;
    for (ParamOp param : llvm::to_vector(module.getOps<ParamOp>())) {
      Value yielded = param.getYieldedValue();
      if (!yielded)
        continue;
      // Loaded values need no kernel: the parameter keeps its init.load, and the runtime reads
      // each rank's slice of the file it names.
      if (yielded.getDefiningOp<LoadOp>())
        continue;
      if (auto like = yielded.getDefiningOp<ElementwiseLikeOp>()) {
        likeOthers.push_back({param, like});
        continue;
      }
      auto fused = yielded.getDefiningOp<ElementwiseOp>();
      if (auto orthogonal = yielded.getDefiningOp<OrthogonalOp>()) {
        fused = buildOrthogonalSource(orthogonal, seed, param.getSymName());
        param->setAttr("initc.transform", StringAttr::get(&getContext(), "orthogonal"));
        param->setAttr("initc.gain", orthogonal.getGainAttr());
      }
      if (!fused) {
        Operation *op = yielded.getDefiningOp();
        param.emitError() << "'" << (op ? op->getName().getStringRef() : StringRef("argument"))
                          << "' has no native lowering yet; only elementwise recipes (after "
                             "init-fuse-elementwise) can be partitioned";
        return signalPassFailure();
      }
      // The key values are kernel arguments and the extents are read from the shape arrays:
      // neither is part of the recipe.
      DenseI64ArrayAttr args = fused.getArgsAttr();
      fused.removeArgsAttr();
      std::string &kernelName = recipes.kernelOf(fused);
      if (kernelName.empty()) {
        // A name no symbol of the module has yet (a hand-written function may be called
        // initc_kernel_0), for the kernel and each of its target variants.
        auto taken = [&](const std::string &name) {
          return llvm::any_of(kernelTargets, [&](const KernelTarget &target) {
            return SymbolTable::lookupSymbolIn(module, name + target.suffix) != nullptr;
          });
        };
        do
          kernelName = "initc_kernel_" + std::to_string(next++);
        while (taken(kernelName));
        slice_kernel::canonicalizeStoredNaN(fused.getBody().front());
        for (const KernelTarget &target : kernelTargets) {
          func::FuncOp kernel =
              buildKernel(builder, fused.getLoc(), kernelName + target.suffix, fused, target.loop,
                          target.convertsBF16);
          if (!target.cpu.empty())
            kernel->setAttr("initc.target_cpu", builder.getStringAttr(target.cpu));
        }
      }
      param.setKernelAttr(FlatSymbolRefAttr::get(&getContext(), kernelName));
      if (args)
        param.setKernelArgsAttr(args);
      clearBody(param);
    }
    if (!likeOthers.empty()) {
      SymbolTable symbols(module);
      for (auto [param, like] : likeOthers) {
        // The verifier saw to it that `like` is a parameter that yielded an init.elementwise.
        auto source = symbols.lookup<ParamOp>(like.getLike());
        param.setKernelAttr(source.getKernelAttr());
        if (DenseI64ArrayAttr args = like.getArgsAttr())
          param.setKernelArgsAttr(args);
        clearBody(param);
      }
    }
    numKernels += next;
  }

  static void clearBody(ParamOp param) {
    param.getBody().dropAllReferences();
    param.getBody().getBlocks().clear();
  }

  Statistic numKernels{this, "kernels", "native kernels created"};
};
} // namespace
