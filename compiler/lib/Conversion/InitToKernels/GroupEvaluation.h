//===- GroupEvaluation.h - the region on the vectors of an iteration ---===//
//
// Private to InitToKernels: see SliceKernel.cpp for how the kernel is built.
//
//===----------------------------------------------------------------------===//
#ifndef INITC_CONVERSION_INITTOKERNELS_GROUPEVALUATION_H
#define INITC_CONVERSION_INITTOKERNELS_GROUPEVALUATION_H

#include "GroupLayout.h"
#include "initc/Conversion/InitToKernels/SliceKernel.h"

#include "initc/Random/Expand.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/SwapByteOrder.h"

#include <array>
#include <functional>
#include <numeric>

namespace initc::slice_kernel {
using namespace mlir;
using namespace initc::init;

/// The region evaluated on vectors for the groups of blocks of one iteration: one vector per
/// lane of a block and group, each op of the region given a vector type (with a word function,
/// the word's ops on each group's two vectors of pairs instead). Every op is elementwise, so each
/// vector lane computes exactly what the scalar code computes for its element. The region is
/// cloned op by op across all of the vectors, so that the instruction stream alternates between
/// independent dependency chains (out-of-order cores dispatch in order into small schedulers:
/// one long chain at a time leaves them waiting on latency).
class GroupEvaluation {
public:
  /// `mappings`: four per group, one per lane of its blocks, holding the region's arguments.
  GroupEvaluation(OpBuilder &b, Location loc, Block &region, int64_t rank,
                  const GroupLayout &layout, int64_t vectorBlocks,
                  SmallVector<IRMapping, 4 * kMaxGroups> mappings)
      : b(b), loc(loc), region(region), rank(rank), wordFunction(layout.wordFunction),
        convertLast(layout.convertLast), conversion(layout.conversion), vectorBlocks(vectorBlocks),
        groups(mappings.size() / 4), laneWidth(wordFunction ? 2 * vectorBlocks : vectorBlocks),
        mappings(std::move(mappings)), pairMappings(wordFunction ? 2 * groups : 0),
        laneMappings(wordFunction ? pairMappings : this->mappings) {}

  /// Clones the region's ops onto the vectors.
  void run() {
    // Shared by a group's four lanes: every argument but the index and the column (`shared`).
    for (BlockArgument arg : region.getArguments())
      if (arg.getArgNumber() != 0 && arg.getArgNumber() != unsigned(rank))
        shared.insert(arg);
    // The ops each lazy select defers (isLazySelect), found from each select upwards.
    for (Operation &select : region.without_terminator()) {
      if (!isLazySelect(select))
        continue;
      for (Operation *op = select.getPrevNode(); op; op = op->getPrevNode()) {
        if (op->use_empty() || isa<arith::ConstantOp>(op) || isLazySelect(*op))
          continue;
        bool forThisSelect = llvm::all_of(op->getUses(), [&](OpOperand &use) {
          Operation *user = use.getOwner();
          return (user == &select && use.getOperandNumber() == 2) ||
                 deferredFor.lookup(user) == &select;
        });
        if (forThisSelect)
          deferredFor[op] = &select;
      }
    }
    for (Operation &op : region.without_terminator()) {
      if (deferredFor.count(&op))
        continue;
      if (isLazySelect(op))
        emitLazySelect(cast<arith::SelectOp>(op));
      else
        cloneForAll(op);
    }
  }

  /// The values of lane `lane` (0-3) of the blocks of group `group`.
  IRMapping &lane(int64_t group, int64_t lane) { return mappings[group * 4 + lane]; }
  /// With a word function, its values on pair `k` (0: x1 x0, 1: x3 x2) of group `group`.
  IRMapping &pair(int64_t group, int64_t k) { return pairMappings[group * 2 + k]; }

private:
  VectorType laneVectorOf(Type t) const { return VectorType::get({laneWidth}, t); }
  bool isShared(Operation &op) {
    if (auto shift = dyn_cast<arith::ShRUIOp>(op)) {
      IntegerAttr amount;
      if (shift.getLhs() == region.getArgument(0) &&
          matchPattern(shift.getRhs(), m_Constant(&amount)) && amount.getInt() >= 2)
        return true;
    }
    return llvm::all_of(op.getOperands(), [&](Value v) { return shared.contains(v); });
  }
  // `op` on vectors of `width`, its operands and results in `mapping`.
  void cloneAs(Operation &op, IRMapping &mapping, int64_t width) {
    auto vectorOfWidth = [&](Type t) { return VectorType::get({width}, t); };
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      mapping.map(
          constant.getResult(),
          b.create<arith::ConstantOp>(
              loc, DenseElementsAttr::get(vectorOfWidth(constant.getType()), constant.getValue())));
      return;
    }
    Operation *clone = b.clone(op, mapping);
    clone->removeAttr(random::kRarelyFalseAttr);
    for (Value result : clone->getResults())
      result.setType(vectorOfWidth(result.getType()));
  }
  // The word's pairs of each group from its last Philox round (WordPair): product ^
  // (previous << 32) ^ (key << 32), whose 32-bit halves are x1 (x3) and x0 (x2). The shifts
  // are shuffles: LLVM makes a shift of a product a 64-bit multiply.
  void mapWordPairs() {
    const int64_t n = vectorBlocks;
    auto words = VectorType::get({2 * n}, b.getI32Type());
    SmallVector<int64_t> lowToHigh;
    for (int64_t k = 0; k < n; ++k)
      lowToHigh.append({2 * n, 2 * k});
    Value zeros =
        b.create<arith::ConstantOp>(loc, DenseElementsAttr::get(words, b.getI32IntegerAttr(0)));
    for (int64_t group = 0; group < groups; ++group) {
      IRMapping &blocks = mappings[group * 4];
      auto up = [&](Value v) -> Value {
        Value low = b.create<vector::BitCastOp>(loc, words, blocks.lookup(v));
        Value high = b.create<vector::ShuffleOp>(loc, low, zeros, lowToHigh);
        return b.create<vector::BitCastOp>(loc, VectorType::get({vectorBlocks}, b.getI64Type()),
                                           high);
      };
      for (auto [k, pair] : llvm::enumerate(wordFunction->pairs)) {
        Value previous = up(pair.previous), key = up(pair.key);
        Value words64 = b.create<arith::XOrIOp>(
            loc, b.create<arith::XOrIOp>(loc, blocks.lookup(pair.product), previous), key);
        pairMappings[group * 2 + k].map(wordFunction->word->getResult(0),
                                        b.create<vector::BitCastOp>(loc, words, words64));
      }
    }
  }
  // Clones `op` for every lane and group (once per group when shared).
  void cloneForAll(Operation &op) {
    if (convertLast && &op == conversion.getOperation())
      return; // converted after the interleave
    // The word's ops on the pairs; the constants they read as pair-wide vectors too, made
    // where the constant stands (never inside a lazy select's branch) so every use sees them.
    bool ofWord = wordFunction && wordFunction->ofWord.contains(&op);
    if (ofWord) {
      for (IRMapping &mapping : pairMappings)
        cloneAs(op, mapping, laneWidth);
      return;
    }
    if (wordFunction && isa<arith::ConstantOp>(op) &&
        llvm::any_of(op.getUsers(),
                     [&](Operation *user) { return wordFunction->ofWord.contains(user); })) {
      cloneAs(op, pairMappings.front(), laneWidth);
      for (IRMapping &mapping : llvm::drop_begin(pairMappings))
        mapping.map(op.getResult(0), pairMappings.front().lookup(op.getResult(0)));
    }
    if (wordFunction && &op == wordFunction->word)
      return mapWordPairs();
    bool once = isShared(op);
    if (wordFunction && !once)
      return; // how the word is selected: replaced by its pairs
    if (once)
      shared.insert(op.getResults().begin(), op.getResults().end());
    for (int64_t group = 0; group < groups; ++group) {
      for (int64_t lane = 0; lane < (once ? 1 : 4); ++lane)
        cloneAs(op, mappings[group * 4 + lane], vectorBlocks);
      if (once)
        for (int64_t lane = 1; lane < 4; ++lane)
          for (Value result : op.getResults())
            mappings[group * 4 + lane].map(result, mappings[group * 4].lookup(result));
    }
  }
  // A select marked rarely false runs the ops only its false operand needs (erfinv's tail
  // branch: a sqrt and a degree-8 polynomial) after a test that some lane of the iteration
  // takes it, for each vector one of whose lanes does. An op is deferred for the select when
  // every use is that select's false operand or an op deferred for it; constants are not (they
  // cost nothing and may have other uses).
  static bool isLazySelect(Operation &op) {
    return isa<arith::SelectOp>(op) && op.hasAttr(random::kRarelyFalseAttr);
  }
  // The ops deferred for `select`, in order, then the select.
  SmallVector<Operation *> deferredOps(arith::SelectOp select) {
    SmallVector<Operation *> ops;
    for (Operation &op : region.without_terminator())
      if (deferredFor.lookup(&op) == select)
        ops.push_back(&op);
    ops.push_back(select);
    return ops;
  }
  // Whether cloneForAll clones `op` for each vector of laneMappings (not once per group).
  bool clonedPerVector(Operation *op) {
    return wordFunction ? wordFunction->ofWord.contains(op) : !isShared(*op);
  }
  void emitLazySelect(arith::SelectOp select) {
    // scf.if (every lane's condition holds) { the true operands } else { for each vector,
    // scf.if (its lanes' conditions hold) { its true operand } else { its deferred ops and
    // select } }, one result per vector: in an iteration where some lane takes the false
    // operand, most vectors still do not.
    Value allTrue;
    for (IRMapping &mapping : laneMappings) {
      Value condition = mapping.lookup(select.getCondition());
      allTrue = allTrue ? b.create<arith::AndIOp>(loc, allTrue, condition).getResult() : condition;
    }
    auto ifAllTrue = [&](Value conditions, int64_t results) {
      Value all = b.create<vector::ReductionOp>(loc, vector::CombiningKind::AND, conditions);
      SmallVector<Type> types(results, laneVectorOf(select.getType()));
      return b.create<scf::IfOp>(loc, types, all, /*withElseRegion=*/true);
    };
    auto lazy = ifAllTrue(allTrue, laneMappings.size());
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(lazy.thenBlock());
      b.create<scf::YieldOp>(loc, llvm::map_to_vector(laneMappings, [&](IRMapping &mapping) {
                               return mapping.lookup(select.getTrueValue());
                             }));
      b.setInsertionPointToStart(lazy.elseBlock());
      SmallVector<Operation *> ops = deferredOps(select);
      if (!llvm::all_of(ops, [&](Operation *op) { return clonedPerVector(op); })) {
        // Some are computed once for a group: for all of it, without the vectors' tests.
        for (Operation *op : ops)
          cloneForAll(*op);
      } else {
        for (IRMapping &mapping : laneMappings) {
          auto vectorLazy = ifAllTrue(mapping.lookup(select.getCondition()), 1);
          OpBuilder::InsertionGuard vectorGuard(b);
          b.setInsertionPointToStart(vectorLazy.thenBlock());
          b.create<scf::YieldOp>(loc, mapping.lookup(select.getTrueValue()));
          b.setInsertionPointToStart(vectorLazy.elseBlock());
          for (Operation *op : ops)
            cloneAs(*op, mapping, laneWidth);
          b.create<scf::YieldOp>(loc, mapping.lookup(select.getResult()));
          mapping.map(select.getResult(), vectorLazy.getResult(0));
        }
      }
      b.create<scf::YieldOp>(loc, llvm::map_to_vector(laneMappings, [&](IRMapping &mapping) {
                               return mapping.lookup(select.getResult());
                             }));
    }
    for (auto [mapping, result] : llvm::zip(laneMappings, lazy.getResults()))
      mapping.map(select.getResult(), result);
  }

  OpBuilder &b;
  Location loc;
  Block &region;
  int64_t rank;
  const std::optional<WordFunction> &wordFunction;
  bool convertLast;
  arith::TruncFOp conversion;
  int64_t vectorBlocks, groups;
  // With a word function, the ops of the word are evaluated on its pairs instead: two
  // mappings per group, for vectors of twice the width.
  int64_t laneWidth;
  SmallVector<IRMapping, 4 * kMaxGroups> mappings, pairMappings;
  SmallVectorImpl<IRMapping> &laneMappings; // those the word's ops are cloned for
  // What the four lanes of a group share: the block index (`index >> 2`: the lanes differ
  // in the index's two low bits only), the other arguments but the column, and every op of
  // those alone, such as the Philox rounds. Such ops are cloned once per group, so each
  // block's Philox is computed once. (Cloned per lane, LLVM trims each copy to the words its
  // lane uses before it merges the copies, and the trimmed last rounds stay: 12 extra
  // 64-bit multiplies per 32 blocks.)
  llvm::DenseSet<Value> shared;
  llvm::DenseMap<Operation *, Operation *> deferredFor; // lazy selects' ops, by select
};

} // namespace initc::slice_kernel

#endif // INITC_CONVERSION_INITTOKERNELS_GROUPEVALUATION_H
