//===- RegionAnalysis.cpp - what a region allows on vectors ---===//
#include "RegionAnalysis.h"

namespace initc::slice_kernel {

bool isVectorizable(Block &region) {
  for (Operation &op : region.without_terminator()) {
    if (!isa<arith::ArithDialect, math::MathDialect>(op.getDialect()) || op.getNumRegions())
      return false;
    auto scalar = [](Value v) { return v.getType().isIntOrFloat(); };
    if (!llvm::all_of(op.getOperands(), scalar) || !llvm::all_of(op.getResults(), scalar))
      return false;
  }
  return true;
}

std::optional<WordFunction> findWordFunction(Block &region, int64_t rank) {
  Value index = region.getArgument(0);
  auto isConstant = [](Value v, int64_t expected) {
    APInt value;
    return matchPattern(v, m_ConstantInt(&value)) && value == expected;
  };
  // cond = (index & bit) != 0
  auto testsIndexBit = [&](Value cond, int64_t bit) {
    auto cmp = cond.getDefiningOp<arith::CmpIOp>();
    if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::ne || !isConstant(cmp.getRhs(), 0))
      return false;
    auto mask = cmp.getLhs().getDefiningOp<arith::AndIOp>();
    return mask && mask.getLhs() == index && isConstant(mask.getRhs(), bit);
  };
  auto lowHalfOf = [](Value word) -> Value {
    auto trunc = word.getDefiningOp<arith::TruncIOp>();
    if (!trunc || !trunc.getType().isInteger(32) || !trunc.getIn().getType().isInteger(64))
      return {};
    return trunc.getIn();
  };
  auto pairOf = [&](Value even, Value odd) -> std::optional<WordPair> {
    Value high = lowHalfOf(even), product = lowHalfOf(odd);
    auto outer = high ? high.getDefiningOp<arith::XOrIOp>() : nullptr;
    if (!product || !outer)
      return std::nullopt;
    for (unsigned o = 0; o < 2; ++o) {
      auto inner = outer->getOperand(o).getDefiningOp<arith::XOrIOp>();
      for (unsigned i = 0; inner && i < 2; ++i) {
        auto shift = inner->getOperand(i).getDefiningOp<arith::ShRUIOp>();
        if (shift && shift.getLhs() == product && isConstant(shift.getRhs(), 32))
          return WordPair{product, inner->getOperand(1 - i), outer->getOperand(1 - o)};
      }
    }
    return std::nullopt;
  };
  std::optional<WordFunction> found;
  llvm::DenseSet<Operation *> selection; // the word's selects and lane tests
  for (Operation &op : region.without_terminator()) {
    auto select = dyn_cast<arith::SelectOp>(op);
    if (!select || !testsIndexBit(select.getCondition(), 2))
      continue;
    auto low = select.getFalseValue().getDefiningOp<arith::SelectOp>();
    auto high = select.getTrueValue().getDefiningOp<arith::SelectOp>();
    if (found || !low || !high || !testsIndexBit(low.getCondition(), 1) ||
        !testsIndexBit(high.getCondition(), 1))
      return std::nullopt;
    auto first = pairOf(low.getFalseValue(), low.getTrueValue());
    auto second = pairOf(high.getFalseValue(), high.getTrueValue());
    if (!first || !second)
      return std::nullopt;
    found = WordFunction{select, {*first, *second}, {}};
    for (Operation *part : {select.getOperation(), low.getOperation(), high.getOperation()})
      for (Value operand : part->getOperands())
        if (Operation *def = operand.getDefiningOp(); def && isa<arith::CmpIOp>(def)) {
          selection.insert(def);
          selection.insert(def->getOperand(0).getDefiningOp());
        }
    selection.insert(select);
    selection.insert(low);
    selection.insert(high);
  }
  if (!found)
    return std::nullopt;
  // Every other op reads the index or the column only through the word, and every op after
  // the word reads nothing else but constants.
  llvm::DenseSet<Value> perElement = {index, region.getArgument(rank)};
  for (Operation &op : region.without_terminator()) {
    bool readsElement = llvm::any_of(op.getOperands(), [&](Value v) {
      return perElement.contains(v) || v == found->word->getResult(0);
    });
    bool blockOnly = isBlockIndex(op, index);
    if (selection.contains(&op))
      perElement.insert(op.getResults().begin(), op.getResults().end());
    if (!readsElement || blockOnly || selection.contains(&op))
      continue;
    bool wordOnly = llvm::all_of(op.getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return v == found->word->getResult(0) ||
             (def && (found->ofWord.contains(def) || isa<arith::ConstantOp>(def)));
    });
    if (!wordOnly || op.getNumRegions())
      return std::nullopt;
    found->ofWord.insert(&op);
    perElement.insert(op.getResults().begin(), op.getResults().end());
  }
  Value value = cast<YieldOp>(region.getTerminator()).getValue();
  Operation *def = value.getDefiningOp();
  if (value != found->word->getResult(0) && !(def && found->ofWord.contains(def)))
    return std::nullopt;
  return found;
}

bool isBlockIndex(Operation &op, Value index) {
  auto shift = dyn_cast<arith::ShRUIOp>(op);
  IntegerAttr amount;
  return shift && shift.getLhs() == index && matchPattern(shift.getRhs(), m_Constant(&amount)) &&
         amount.getInt() >= 2;
}

llvm::DenseSet<Value> argumentsSharedByLanes(Block &region, int64_t rank) {
  llvm::DenseSet<Value> shared;
  for (BlockArgument arg : region.getArguments())
    if (arg.getArgNumber() != 0 && arg.getArgNumber() != unsigned(rank))
      shared.insert(arg);
  return shared;
}

bool isSharedByLanes(Operation &op, Value index, const llvm::DenseSet<Value> &shared) {
  return isBlockIndex(op, index) ||
         llvm::all_of(op.getOperands(), [&](Value v) { return shared.contains(v); });
}

std::optional<BlockStage> findBlockStage(Block &region, int64_t rank) {
  Value index = region.getArgument(0);
  llvm::DenseSet<Value> shared = argumentsSharedByLanes(region, rank), ofBlock;
  BlockStage stage;
  for (Operation &op : region.without_terminator()) {
    if (op.hasAttr(random::kRarelyFalseAttr))
      return std::nullopt;
    if (!isSharedByLanes(op, index, shared))
      continue;
    shared.insert(op.getResults().begin(), op.getResults().end());
    if (isBlockIndex(op, index) ||
        llvm::any_of(op.getOperands(), [&](Value v) { return ofBlock.contains(v); })) {
      stage.ops.insert(&op);
      ofBlock.insert(op.getResults().begin(), op.getResults().end());
    }
  }
  for (Operation &op : region.without_terminator())
    if (stage.ops.contains(&op))
      for (Value result : op.getResults())
        if (llvm::any_of(result.getUsers(),
                         [&](Operation *user) { return !stage.ops.contains(user); }))
          stage.carried.push_back(result);
  if (stage.carried.empty())
    return std::nullopt;
  return stage;
}

} // namespace initc::slice_kernel
