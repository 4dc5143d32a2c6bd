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
  /// What an evaluation clones: the whole region, or one stage of a software-pipelined loop
  /// (KernelBody::groupLoop): the block stage (its ops and the shared ops they read) for the
  /// next iteration, or the rest of the region, its reads of the block stage carried in.
  enum class Part { Whole, BlockStage, LaneStage };

  /// `mappings`: four per group, one per lane of its blocks, holding the region's arguments.
  GroupEvaluation(OpBuilder &b, Location loc, Block &region, int64_t rank,
                  const GroupLayout &layout, int64_t vectorBlocks,
                  SmallVector<IRMapping, 4 * kMaxGroups> mappings, Part part = Part::Whole,
                  const BlockStage *stage = nullptr)
      : b(b), loc(loc), region(region), rank(rank), wordFunction(layout.wordFunction),
        convertLast(layout.convertLast), conversion(layout.conversion), vectorBlocks(vectorBlocks),
        groups(mappings.size() / 4), laneWidth(wordFunction ? 2 * vectorBlocks : vectorBlocks),
        mappings(std::move(mappings)), pairMappings(wordFunction ? 2 * groups : 0),
        laneMappings(wordFunction ? pairMappings : this->mappings), part(part), stage(stage) {
    assert((part == Part::Whole || (stage && !wordFunction)) && "a stage needs a block stage");
  }

  /// Clones the region's ops onto the vectors.
  void run() {
    for (Operation *op : plan())
      emit(*op);
  }

  /// Clones the ops of `first` and `second` (of the same iteration or of two) in one stream, in
  /// proportion to the vectors each op is cloned for, so that the stream alternates between the
  /// two evaluations' independent chains: a software-pipelined loop's block stage for the next
  /// iteration then fills the latency of this iteration's float transform.
  static void interleave(GroupEvaluation &first, GroupEvaluation &second) {
    SmallVector<Operation *> firstOps = first.plan(), secondOps = second.plan();
    auto total = [](GroupEvaluation &e, ArrayRef<Operation *> ops) {
      int64_t sum = 0;
      for (Operation *op : ops)
        sum += e.clones(*op);
      return std::max<int64_t>(sum, 1);
    };
    int64_t firstTotal = total(first, firstOps), secondTotal = total(second, secondOps);
    int64_t firstDone = 0, secondDone = 0;
    size_t i = 0, j = 0;
    while (i < firstOps.size() || j < secondOps.size()) {
      // The one behind, as a fraction of its own work.
      if (j == secondOps.size() ||
          (i < firstOps.size() && firstDone * secondTotal <= secondDone * firstTotal)) {
        firstDone += first.clones(*firstOps[i]);
        first.emit(*firstOps[i++]);
      } else {
        secondDone += second.clones(*secondOps[j]);
        second.emit(*secondOps[j++]);
      }
    }
  }

  /// The lane stage's reads of the block stage, from `slots` (group by group, in the block
  /// stage's order: what a previous iteration's carried() stored), each loaded where its first
  /// reader is cloned, so that it is not live across the whole iteration.
  void carryIn(ArrayRef<Value> slots) {
    assert(part == Part::LaneStage && slots.size() == groups * stage->carried.size());
    slotsIn.assign(slots.begin(), slots.end());
  }
  /// The block stage's results that the lane stage reads, group by group.
  SmallVector<Value> carried() {
    assert(part == Part::BlockStage);
    SmallVector<Value> values;
    for (int64_t group = 0; group < groups; ++group)
      for (Value carried : stage->carried)
        values.push_back(mappings[group * 4].lookup(carried));
    return values;
  }

  /// The values of lane `lane` (0-3) of the blocks of group `group`.
  IRMapping &lane(int64_t group, int64_t lane) { return mappings[group * 4 + lane]; }
  /// With a word function, its values on pair `k` (0: x1 x0, 1: x3 x2) of group `group`.
  IRMapping &pair(int64_t group, int64_t k) { return pairMappings[group * 2 + k]; }

private:
  // The ops this evaluation clones, in the region's order (a lazy select's deferred ops are
  // cloned by the select); finds what the lanes share and what each lazy select defers.
  SmallVector<Operation *> plan() {
    // Shared by a group's four lanes: every argument but the index and the column, and the
    // ops of those alone (isSharedByLanes).
    shared = argumentsSharedByLanes(region, rank);
    for (Operation &op : region.without_terminator())
      if (isShared(op))
        shared.insert(op.getResults().begin(), op.getResults().end());
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
    SmallVector<Operation *> ops;
    for (Operation &op : region.without_terminator()) {
      if (deferredFor.count(&op))
        continue;
      bool ofBlockStage = stage && stage->ops.contains(&op);
      // The block stage takes the shared ops its ops read; the lane stage, the other shared
      // ops again (constants and splats of the keys, which LLVM hoists out of the loop).
      if ((part == Part::BlockStage && !isShared(op)) || (part == Part::LaneStage && ofBlockStage))
        continue;
      ops.push_back(&op);
    }
    return ops;
  }
  void emit(Operation &op) {
    if (isLazySelect(op))
      emitLazySelect(cast<arith::SelectOp>(op));
    else
      cloneForAll(op);
  }
  // The vectors `op` is cloned for in a group, as interleave weighs it (constants cost nothing).
  int64_t clones(Operation &op) {
    if (isa<arith::ConstantOp>(op))
      return 0;
    return isShared(op) ? 1 : 4;
  }

  VectorType laneVectorOf(Type t) const { return VectorType::get({laneWidth}, t); }
  bool isShared(Operation &op) { return isSharedByLanes(op, region.getArgument(0), shared); }
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
    for (int64_t group = 0; group < groups; ++group) {
      if (!slotsIn.empty())
        loadCarried(op, group);
      for (int64_t lane = 0; lane < (once ? 1 : 4); ++lane)
        cloneAs(op, mappings[group * 4 + lane], vectorBlocks);
      if (once)
        for (int64_t lane = 1; lane < 4; ++lane)
          for (Value result : op.getResults())
            mappings[group * 4 + lane].map(result, mappings[group * 4].lookup(result));
    }
  }
  // Loads the block stage's values that `op` reads in group `group` and that are not loaded yet.
  void loadCarried(Operation &op, int64_t group) {
    for (Value operand : op.getOperands()) {
      auto *found = llvm::find(stage->carried, operand);
      if (found == stage->carried.end() || mappings[group * 4].contains(operand))
        continue;
      Value slot = slotsIn[group * stage->carried.size() + (found - stage->carried.begin())];
      auto type = VectorType::get({vectorBlocks}, operand.getType());
      Value loaded = b.create<LLVM::LoadOp>(loc, type, slot, /*alignment=*/0, /*isVolatile=*/true);
      for (int64_t lane = 0; lane < 4; ++lane)
        mappings[group * 4 + lane].map(operand, loaded);
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
  Part part;
  const BlockStage *stage;      // with a stage's part
  SmallVector<Value> slotsIn;   // the lane stage's carried values, in memory
};

} // namespace initc::slice_kernel

#endif // INITC_CONVERSION_INITTOKERNELS_GROUPEVALUATION_H
