//===- EliminateDeadInits.cpp - drop values that never reach a parameter --===//
#include "initc/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace initc {
#define GEN_PASS_DEF_ELIMINATEDEADINITS
#include "initc/Transforms/Passes.h.inc"
} // namespace initc

using namespace mlir;
using namespace initc;
using namespace initc::init;

namespace {
struct EliminateDeadInitsPass : initc::impl::EliminateDeadInitsBase<EliminateDeadInitsPass> {
  void runOnOperation() override {
    // Folding first: a select whose mask is a constant, x * 1 and friends forward one operand
    // and leave the other side dead.
    RewritePatternSet patterns(&getContext());
    for (auto *dialect : getContext().getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : getContext().getRegisteredOperations())
      if (op.getDialect().getNamespace() == "init")
        op.getCanonicalizationPatterns(patterns, &getContext());
    FrozenRewritePatternSet frozen(std::move(patterns));

    int64_t erased = 0;
    for (ParamOp param : getOperation().getOps<ParamOp>()) {
      if (param.getBody().empty())
        continue;
      // Stream ids are attributes, so dropping an op never shifts another op's random values.
      (void)applyPatternsAndFoldGreedily(param.getBody(), frozen);
      Block &block = param.getBody().front();
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block))) {
        if (op.hasTrait<OpTrait::IsTerminator>())
          continue;
        if (op.use_empty() && isMemoryEffectFree(&op)) {
          op.erase();
          ++erased;
        }
      }
    }
    numErased += erased;
  }

  Statistic numErased{this, "erased-ops", "initialization ops whose values were never used"};
};
} // namespace
