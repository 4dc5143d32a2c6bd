//===- KernelBody.cpp - the loops of one kernel ---===//
#include "KernelBody.h"

#include "initc/Conversion/InitToKernels/KernelABI.h"

namespace initc::slice_kernel {

KernelBody::KernelBody(func::FuncOp func, ElementwiseOp fused, const VectorLoop &loop,
                       bool convertsBF16)
    : b(OpBuilder::atBlockBegin(&func.getBody().front())), loc(func.getLoc()),
      ptr(LLVM::LLVMPointerType::get(func.getContext())), i64(b.getI64Type()),
      out(func.getArgument(kKernelOut)), begin(func.getArgument(kKernelBegin)),
      end(func.getArgument(kKernelEnd)),
      region(fused.getBody().front()), rank(fused.getType().getRank()),
      element(fused.getType().getElementType()),
      storeType(element.isInteger(1) ? b.getI8Type() : element),
      vectorizable(storeType.isIntOrFloat() && isVectorizable(region)), groupCount(loop.groups),
      vectorBlocks(loop.vectorBlocks), pipelined(loop.pipelined), convertsBF16(convertsBF16),
      layout(planGroupLayout(region, rank, element, storeType, vectorBlocks, convertsBF16,
                             vectorizable)) {
  entryBlock = &func.getBody().front();
  if (pipelined && vectorizable && !layout.wordFunction)
    blockStage = findBlockStage(region, rank);
  Value gshapePtr = func.getArgument(kKernelGlobalShape),
        offPtr = func.getArgument(kKernelOffset),
        lshapePtr = func.getArgument(kKernelLocalShape),
        argsPtr = func.getArgument(kKernelArgs);
  for (int64_t d = 0; d < rank; ++d) {
    gshape.push_back(load(gshapePtr, d));
    off.push_back(load(offPtr, d));
    lshape.push_back(load(lshapePtr, d));
  }
  for (unsigned a = rank + 1; a < region.getNumArguments(); ++a)
    kernelArgs.push_back(load(argsPtr, a - (rank + 1)));
  // A rank-0 tensor is one row of one element.
  one = cst(1);
  zero = cst(0);
  rowLength = rank ? b.create<arith::MaxSIOp>(loc, lshape.back(), one).getResult() : one;
  // Global strides (row-major).
  gstride.resize(rank);
  Value stride = one;
  for (int64_t d = rank - 1; d >= 0; --d) {
    gstride[d] = stride;
    stride = b.create<arith::MulIOp>(loc, stride, gshape[d]);
  }
  two = cst(2);
}

// The element at global linear index `linear` and global index `indices` (one per dim), as its
// stored type: the region cloned on scalars.
Value KernelBody::valueAt(Value linear, ArrayRef<Value> indices) {
  IRMapping mapping;
  mapping.map(region.getArgument(0), linear);
  for (int64_t d = 0; d < rank; ++d)
    mapping.map(region.getArgument(d + 1), indices[d]);
  for (auto [a, value] : llvm::enumerate(kernelArgs))
    mapping.map(region.getArgument(rank + 1 + a), value);
  for (Operation &op : region.without_terminator())
    b.clone(op, mapping);
  Value value = mapping.lookup(cast<YieldOp>(region.getTerminator()).getValue());
  if (element.isInteger(1))
    value = b.create<arith::ExtUIOp>(loc, b.getI8Type(), value);
  return value;
}

// The region's arguments for the four lanes of each group in `places`, four mappings a group.
SmallVector<IRMapping, 4 * kMaxGroups> KernelBody::laneArguments(ArrayRef<GroupPlace> places) {
  int64_t groups = places.size();
  SmallVector<Value> keys = llvm::map_to_vector(kernelArgs, [&](Value key) { return splat(key); });
  SmallVector<IRMapping, 4 * kMaxGroups> mappings(4 * groups);
  for (int64_t group = 0; group < groups; ++group) {
    const GroupPlace &place = places[group];
    Value first = b.create<arith::ShLIOp>(loc, place.blocks, i64s(2));
    for (int64_t lane = 0; lane < 4; ++lane) {
      // `or`, not `add`: LLVM then knows `linear >> 2` is the block for every lane.
      Value linear = lane ? b.create<arith::OrIOp>(loc, first, i64s(lane)).getResult() : first;
      IRMapping &mapping = mappings[group * 4 + lane];
      mapping.map(region.getArgument(0), linear);
      for (int64_t d = 0; d + 1 < rank; ++d)
        mapping.map(region.getArgument(d + 1), place.leading[d]);
      if (rank)
        mapping.map(region.getArgument(rank), place.last(linear));
      for (auto [a, value] : llvm::enumerate(keys))
        mapping.map(region.getArgument(rank + 1 + a), value);
    }
  }
  return mappings;
}

// Evaluates the region for the 4 * vectorBlocks elements of each group in `places` on vectors
// (GroupEvaluation), puts the four lanes of each group in element order (GroupShuffles) and
// stores them.
void KernelBody::storeGroups(ArrayRef<GroupPlace> places) {
  GroupEvaluation evaluation(b, loc, region, rank, layout, vectorBlocks, laneArguments(places));
  evaluation.run();
  storeEvaluated(evaluation, places);
}

// Stores the groups in `places` that `evaluation` evaluated.
void KernelBody::storeEvaluated(GroupEvaluation &evaluation, ArrayRef<GroupPlace> places) {
  int64_t groups = places.size();
  GroupShuffles shuffles(b, loc, layout, element, vectorBlocks, convertsBF16);
  for (int64_t group = 0; group < groups; ++group) {
    SmallVector<Value, 4> pieces;
    if (layout.wordFunction)
      pieces = pairsInOrder(evaluation, shuffles, group);
    else
      pieces.push_back(lanesInOrder(evaluation, shuffles, group));
    Value index = places[group].localIndex;
    for (auto [k, piece] : llvm::enumerate(pieces)) {
      if (k)
        index = b.create<arith::AddIOp>(
            loc, index, cst(cast<VectorType>(pieces[k - 1].getType()).getNumElements()));
      store(piece, index, places[group]);
    }
  }
}

// The four lanes of each block of a group in element order, as stored.
Value KernelBody::lanesInOrder(GroupEvaluation &evaluation, GroupShuffles &shuffles,
                               int64_t group) {
  SmallVector<Value, 4> lanes;
  // Shuffle integers: every element type has an integer of its width.
  Type bits = b.getIntegerType(storeType.getIntOrFloatBitWidth());
  for (int64_t lane = 0; lane < 4; ++lane) {
    Value value =
        evaluation.lane(group, lane).lookup(cast<YieldOp>(region.getTerminator()).getValue());
    if (element.isInteger(1))
      value = b.create<arith::ExtUIOp>(loc, vectorOf(bits), value);
    else if (value.getType() != vectorOf(bits))
      value = b.create<arith::BitcastOp>(loc, vectorOf(bits), value);
    lanes.push_back(value);
  }
  if (layout.storeShuffle != StoreShuffle::ConvertPairs)
    return shuffles.lanesInOrder(lanes, {});
  SmallVector<Value, 4> wide;
  for (int64_t lane = 0; lane < 4; ++lane)
    wide.push_back(evaluation.lane(group, lane)
                       .lookup(layout.conversion.getResult())
                       .getDefiningOp<arith::TruncFOp>()
                       .getIn());
  Value all = shuffles.lanesInOrder(lanes, wide);
  for (Value lane : lanes) // the bf16 lanes, unused: converted again in pairs
    if (Operation *bitcast = lane.getDefiningOp(); bitcast && bitcast->use_empty()) {
      Operation *single = bitcast->getOperand(0).getDefiningOp();
      bitcast->erase();
      if (single && single->use_empty())
        single->erase();
    }
  return all;
}

// A word function's value on both vectors of pairs of a group (the value its conversion takes,
// where that comes last), in element order.
SmallVector<Value, 4> KernelBody::pairsInOrder(GroupEvaluation &evaluation, GroupShuffles &shuffles,
                                               int64_t group) {
  Value value = cast<YieldOp>(region.getTerminator()).getValue();
  if (layout.convertLast)
    value = layout.conversion.getIn();
  return shuffles.pairsInOrder(evaluation.pair(group, 0).lookup(value),
                               evaluation.pair(group, 1).lookup(value));
}

// Stores `piece` (elements in order, as stored) from local index `index`: whole, or masked to
// the place's [storeFrom, storeTo).
void KernelBody::store(Value piece, Value index, const GroupPlace &place) {
  unsigned align = std::max(1u, storeType.getIntOrFloatBitWidth() / 8);
  Value address = b.create<LLVM::GEPOp>(loc, ptr, storeType, out, ValueRange{index});
  if (!place.storeFrom) {
    b.create<LLVM::StoreOp>(loc, piece, address, align);
    return;
  }
  // A masked store of the piece's elements (as stored) whose local index is in range; the
  // others are not written (nor read: masked lanes do not fault).
  auto pieceType = cast<VectorType>(piece.getType());
  int64_t count = pieceType.getNumElements() * pieceType.getElementTypeBitWidth() /
                  storeType.getIntOrFloatBitWidth();
  // As integers: a masked store of bf16 lanes is legalized through f32 and back on CPUs without
  // bf16 conversions (a call of a helper libgcc does not have).
  auto elements = VectorType::get({count}, b.getIntegerType(storeType.getIntOrFloatBitWidth()));
  Value stored = pieceType == elements ? piece : b.create<vector::BitCastOp>(loc, elements, piece);
  Type i32 = b.getI32Type();
  auto offsetIn = [&](Value local) -> Value {
    Value offset = b.create<arith::SubIOp>(loc, local, index);
    offset = b.create<arith::MinSIOp>(loc, b.create<arith::MaxSIOp>(loc, offset, zero).getResult(),
                                      cst(count));
    Value narrow = b.create<arith::TruncIOp>(loc, i32, offset);
    return b.create<vector::BroadcastOp>(loc, VectorType::get({count}, i32), narrow);
  };
  SmallVector<int32_t> positions(count);
  std::iota(positions.begin(), positions.end(), 0);
  Value position = b.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(VectorType::get({count}, i32), ArrayRef(positions)));
  Value after =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, position, offsetIn(place.storeFrom));
  Value before =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, position, offsetIn(place.storeTo));
  Value mask = b.create<arith::AndIOp>(loc, after, before);
  b.create<LLVM::MaskedStoreOp>(loc, stored, address, mask, align);
}

// Elements [rangeBegin, rangeEnd) row by row: when vectorizable, all on vectors (whole groups,
// and masked groups for the partial blocks and the blocks left over); otherwise the partial
// blocks at either end of a row one element at a time and the whole blocks one by one in a loop
// LLVM may vectorize.
void KernelBody::emitRows(Value rangeBegin, Value rangeEnd) {
  Value rowBegin = b.create<arith::DivUIOp>(loc, rangeBegin, rowLength);
  Value rowEnd = b.create<arith::DivUIOp>(
      loc, b.create<arith::AddIOp>(loc, rangeEnd, b.create<arith::SubIOp>(loc, rowLength, one)),
      rowLength);
  auto rows = b.create<scf::ForOp>(loc, rowBegin, rowEnd, one);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(rows.getBody());
  Row row = beginRow(rows.getInductionVar(), rangeBegin, rangeEnd);
  if (vectorizable)
    emitRowOnVectors(row);
  else
    emitRowByElements(row);
}

// Local row `index` of the slice, where the range [rangeBegin, rangeEnd) crosses it.
Row KernelBody::beginRow(Value index, Value rangeBegin, Value rangeEnd) {
  Row row;
  row.start = b.create<arith::MulIOp>(loc, index, rowLength);
  row.colLo =
      b.create<arith::MaxSIOp>(loc, b.create<arith::SubIOp>(loc, rangeBegin, row.start), zero);
  row.colHi =
      b.create<arith::MinSIOp>(loc, b.create<arith::SubIOp>(loc, rangeEnd, row.start), rowLength);
  row.globalIndex.resize(rank);
  Value base = zero, rest = index;
  for (int64_t d = rank - 2; d >= 0; --d) {
    Value local = b.create<arith::RemUIOp>(loc, rest, lshape[d]);
    rest = b.create<arith::DivUIOp>(loc, rest, lshape[d]);
    row.globalIndex[d] = b.create<arith::AddIOp>(loc, local, off[d]);
    base = b.create<arith::AddIOp>(loc, base,
                                   b.create<arith::MulIOp>(loc, row.globalIndex[d], gstride[d]));
  }
  if (rank)
    base = b.create<arith::AddIOp>(loc, base, off.back());
  row.base = base;
  row.lin0 = b.create<arith::AddIOp>(loc, base, row.colLo);
  row.lin1 = b.create<arith::AddIOp>(loc, base, row.colHi);
  return row;
}

// The row on vectors only: a group from the block holding the first element when that is not a
// block's first (its elements before the row masked off), whole iterations of groupCount groups,
// then of one group (a row of 512 blocks leaves 32 to them after 10 iterations of 3 groups of
// 16), and one group for the fewer than 16 blocks left and the last partial block. A masked store
// costs what a store does on AVX-512; one at a time, the row's partial blocks and the blocks left
// took 10-25% of the time of rows 682 wide.
void KernelBody::emitRowOnVectors(const Row &row) {
  auto partialGroup = [&](Value from, Value to) {
    auto any =
        b.create<scf::IfOp>(loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, from, to),
                            /*withElseRegion=*/false);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(any.thenBlock());
    GroupPlace place = placeInRow(row, b.create<arith::ShRUIOp>(loc, from, two), 0);
    place.storeFrom = localOf(row, from);
    place.storeTo = localOf(row, to);
    storeGroups({place});
  };
  Value firstBlock = b.create<arith::ShRUIOp>(loc, row.lin0, two);
  Value wholeEnd = b.create<arith::ShRUIOp>(loc, row.lin1, two);
  Value headTo = b.create<arith::SelectOp>(
      loc,
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne,
                              b.create<arith::AndIOp>(loc, row.lin0, cst(3)), zero),
      b.create<arith::MinUIOp>(
          loc, row.lin1,
          b.create<arith::ShLIOp>(loc, b.create<arith::AddIOp>(loc, firstBlock, cst(vectorBlocks)),
                                  two)),
      row.lin0);
  partialGroup(row.lin0, headTo);
  Value mainFrom = b.create<arith::MinUIOp>(
      loc, b.create<arith::ShRUIOp>(loc, b.create<arith::AddIOp>(loc, headTo, cst(3)), two),
      wholeEnd);
  Value vectorEnd = groupLoop(row, mainFrom, wholeEnd, groupCount);
  if (groupCount > 1)
    vectorEnd = groupLoop(row, vectorEnd, wholeEnd, 1);
  partialGroup(b.create<arith::MaxUIOp>(loc, b.create<arith::ShLIOp>(loc, vectorEnd, two), headTo),
               row.lin1);
}

// The local index of the row's element at global linear index `linear`.
Value KernelBody::localOf(const Row &row, Value linear) {
  return b.create<arith::AddIOp>(loc, row.start, b.create<arith::SubIOp>(loc, linear, row.base));
}

// The group of vectorBlocks blocks from block `firstBlock` of the row, as group `group` of an
// iteration.
GroupPlace KernelBody::placeInRow(const Row &row, Value firstBlock, int64_t group) {
  GroupPlace place;
  place.blocks = b.create<arith::AddIOp>(loc, splat(firstBlock), steps(group * vectorBlocks));
  for (int64_t d = 0; d + 1 < rank; ++d)
    place.leading.push_back(splat(row.globalIndex[d]));
  Value baseVector = splat(row.base), offLast = rank ? splat(off.back()) : Value();
  place.last = [this, baseVector, offLast](Value linear) -> Value {
    return b.create<arith::AddIOp>(loc, offLast, b.create<arith::SubIOp>(loc, linear, baseVector));
  };
  Value firstElement = b.create<arith::ShLIOp>(
      loc, b.create<arith::AddIOp>(loc, firstBlock, cst(group * vectorBlocks)), two);
  place.localIndex = localOf(row, firstElement);
  return place;
}

// Iterations of `groups` groups of vectorBlocks blocks on vectors from block `from` while they
// fit before block `to`; returns where they end.
Value KernelBody::groupLoop(const Row &row, Value from, Value to, int64_t groups) {
  Value step = cst(vectorBlocks * groups);
  Value count = b.create<arith::SubIOp>(loc, to, from);
  Value whole = b.create<arith::DivUIOp>(loc, count, step);
  Value end = b.create<arith::AddIOp>(loc, from, b.create<arith::MulIOp>(loc, whole, step));
  if (!pipelines(groups)) {
    auto loop = b.create<scf::ForOp>(loc, from, end, step);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<GroupPlace, kMaxGroups> places;
    for (int64_t group = 0; group < groups; ++group)
      places.push_back(placeInRow(row, loop.getInductionVar(), group));
    storeGroups(places);
    return end;
  }
  // Software-pipelined (ir-spec/lowering.md): each iteration computes the next one's block
  // stage (its Philox rounds), interleaved with its own float transforms, whose latency the
  // block stage's independent integer ops fill; the first iteration's block stage comes before
  // the loop, and the last one's is computed and dropped (Philox of blocks past the loop, which
  // nothing stores). The carried values go through the stack, volatile so that LLVM keeps them
  // there: each is stored once and loaded where the transform first reads it (carried in
  // registers, as the loop's iteration arguments, the loop was slower than not pipelined).
  auto any = b.create<scf::IfOp>(
      loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, from, end),
      /*withElseRegion=*/false);
  OpBuilder::InsertionGuard inner(b);
  b.setInsertionPointToStart(any.thenBlock());
  using Part = GroupEvaluation::Part;
  auto evaluationAt = [&](Value firstBlock, Part part,
                          SmallVector<GroupPlace, kMaxGroups> &places) {
    places.clear();
    for (int64_t group = 0; group < groups; ++group)
      places.push_back(placeInRow(row, firstBlock, group));
    return std::make_unique<GroupEvaluation>(b, loc, region, rank, layout, vectorBlocks,
                                             laneArguments(places), part, &*blockStage);
  };
  SmallVector<Value> slots;
  {
    OpBuilder entry = OpBuilder::atBlockBegin(entryBlock);
    Value one32 = entry.create<LLVM::ConstantOp>(loc, entry.getI32Type(), int64_t(1));
    for (int64_t group = 0; group < groups; ++group)
      for (Value carried : blockStage->carried)
        slots.push_back(entry.create<LLVM::AllocaOp>(loc, ptr, vectorOf(carried.getType()), one32,
                                                     /*alignment=*/32));
  }
  auto storeCarried = [&](GroupEvaluation &stage) {
    for (auto [value, slot] : llvm::zip_equal(stage.carried(), slots))
      b.create<LLVM::StoreOp>(loc, value, slot, /*alignment=*/0, /*isVolatile=*/true);
  };
  SmallVector<GroupPlace, kMaxGroups> places, nextPlaces;
  std::unique_ptr<GroupEvaluation> stage = evaluationAt(from, Part::BlockStage, nextPlaces);
  stage->run();
  storeCarried(*stage);
  auto loop = b.create<scf::ForOp>(loc, from, end, step);
  b.setInsertionPointToStart(loop.getBody());
  Value iteration = loop.getInductionVar();
  std::unique_ptr<GroupEvaluation> lanes = evaluationAt(iteration, Part::LaneStage, places);
  lanes->carryIn(slots);
  stage = evaluationAt(b.create<arith::AddIOp>(loc, iteration, step), Part::BlockStage, nextPlaces);
  GroupEvaluation::interleave(*stage, *lanes);
  storeEvaluated(*lanes, places);
  storeCarried(*stage); // after every load of this iteration's values
  return end;
}

// Without vectors: the head, the whole blocks one by one in a loop LLVM may vectorize, and the
// tail.
void KernelBody::emitRowByElements(const Row &row) {
  // Whole Philox blocks [blockBegin, blockEnd) of [lin0, lin1); the columns before and after
  // them (fewer than 4 each) are the head [colLo, headEnd) and the tail [tailBegin, colHi).
  Value blockBegin =
      b.create<arith::ShRUIOp>(loc, b.create<arith::AddIOp>(loc, row.lin0, cst(3)), two);
  Value blockEnd =
      b.create<arith::MaxUIOp>(loc, b.create<arith::ShRUIOp>(loc, row.lin1, two), blockBegin);
  Value four = cst(4);
  Value headEnd = b.create<arith::MinSIOp>(
      loc, row.colHi,
      b.create<arith::SubIOp>(loc, b.create<arith::MulIOp>(loc, blockBegin, four), row.base));
  Value tailBegin = b.create<arith::MaxSIOp>(
      loc, headEnd,
      b.create<arith::SubIOp>(loc, b.create<arith::MulIOp>(loc, blockEnd, four), row.base));
  scalarLoop(row, row.colLo, headEnd);
  {
    auto blocks = b.create<scf::ForOp>(loc, blockBegin, blockEnd, one);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(blocks.getBody());
    Value first = b.create<arith::ShLIOp>(loc, blocks.getInductionVar(), two);
    SmallVector<Value, 4> values, cols;
    for (int64_t lane = 0; lane < 4; ++lane) {
      // `or`, not `add`: LLVM then knows `linear >> 2` is the block for every lane.
      Value linear = lane ? b.create<arith::OrIOp>(loc, first, cst(lane)).getResult() : first;
      cols.push_back(b.create<arith::SubIOp>(loc, linear, row.base));
      values.push_back(evaluateInRow(row, cols.back(), linear));
    }
    if (storeType.isIntOrFloat() && storeType.getIntOrFloatBitWidth() == 16 &&
        llvm::sys::IsLittleEndianHost) {
      // Two 16-bit elements per 32-bit store (the first in the low half): the vectorizer sizes
      // its vectors by the stored type, and 16-bit stores would make it widen the i64 Philox
      // arithmetic to 16 lanes (4 ymm registers a value, spilling) instead of 8.
      Type i16 = b.getI16Type(), i32 = b.getI32Type();
      Value sixteen = b.create<arith::ConstantOp>(loc, b.getI32IntegerAttr(16));
      auto word = [&](Value v) -> Value {
        if (v.getType() != i16)
          v = b.create<arith::BitcastOp>(loc, i16, v);
        return b.create<arith::ExtUIOp>(loc, i32, v);
      };
      for (int64_t pair = 0; pair < 4; pair += 2) {
        Value packed = b.create<arith::OrIOp>(
            loc, word(values[pair]), b.create<arith::ShLIOp>(loc, word(values[pair + 1]), sixteen));
        b.create<LLVM::StoreOp>(loc, packed, addressInRow(row, cols[pair]), /*alignment=*/2);
      }
    } else {
      for (int64_t lane = 0; lane < 4; ++lane)
        b.create<LLVM::StoreOp>(loc, values[lane], addressInRow(row, cols[lane]));
    }
  }
  scalarLoop(row, tailBegin, row.colHi);
}

// The element at column `col` of the row, global linear index `linear`, as its stored type.
Value KernelBody::evaluateInRow(const Row &row, Value col, Value linear) {
  SmallVector<Value> indices = row.globalIndex;
  if (rank)
    indices.back() = b.create<arith::AddIOp>(loc, off.back(), col);
  return valueAt(linear, indices);
}

Value KernelBody::addressInRow(const Row &row, Value col) {
  Value localIndex = b.create<arith::AddIOp>(loc, row.start, col);
  return b.create<LLVM::GEPOp>(loc, ptr, storeType, out, ValueRange{localIndex});
}

// Columns [from, to) of the row one element at a time.
void KernelBody::scalarLoop(const Row &row, Value from, Value to) {
  auto cols = b.create<scf::ForOp>(loc, from, to, one);
  OpBuilder::InsertionGuard inner(b);
  b.setInsertionPointToStart(cols.getBody());
  Value col = cols.getInductionVar();
  Value linear = b.create<arith::AddIOp>(loc, row.base, col);
  Value value = evaluateInRow(row, col, linear);
  b.create<LLVM::StoreOp>(loc, value, addressInRow(row, col));
}

// Short rows (a 2-D slice split finely along its last dim, e.g. 32 columns of a 16384-wide
// weight over dp=512) leave the per-row vector loop idle: its blocks would run one by one. When
// every row is whole Philox blocks (the global and local row lengths and the column offset are
// multiples of 4), the slice's blocks are consecutive in local memory, so the main loop's
// vectors can take them in local order across rows, each vector lane computing its block's row
// from the block's place in the slice. Used where rows are shorter than 8 iterations and not a
// whole number of them (and global rows have fewer than 2^32 blocks, so that the row
// arithmetic stays 32-bit).
void KernelBody::build() {
  int64_t perIteration = groupCount * vectorBlocks;
  if (!vectorizable || rank != 2) {
    emitRows(begin, end);
  } else {
    Value rowBlocks = b.create<arith::ShRUIOp>(loc, lshape[1], two);
    Value globalRowBlocks = b.create<arith::ShRUIOp>(loc, gshape[1], two);
    Value iteration = cst(perIteration);
    auto choice = b.create<scf::IfOp>(loc, spansRows(rowBlocks, globalRowBlocks, iteration),
                                      /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(choice.elseBlock());
    emitRows(begin, end);
    b.setInsertionPointToStart(choice.thenBlock());
    emitAcrossRows(rowBlocks, globalRowBlocks, iteration);
  }
  b.create<func::ReturnOp>(loc);
}

// Whether the slice runs across rows (above).
Value KernelBody::spansRows(Value rowBlocks, Value globalRowBlocks, Value iteration) {
  using arith::CmpIPredicate;
  auto cmp = [&](CmpIPredicate p, Value x, Value y) {
    return b.create<arith::CmpIOp>(loc, p, x, y).getResult();
  };
  auto both = [&](Value x, Value y) { return b.create<arith::AndIOp>(loc, x, y).getResult(); };
  auto wholeBlocks = [&](Value v) {
    return cmp(CmpIPredicate::eq, b.create<arith::AndIOp>(loc, v, cst(3)), zero);
  };
  int64_t perIteration = groupCount * vectorBlocks;
  return both(
      both(wholeBlocks(lshape[1]), both(wholeBlocks(off[1]), wholeBlocks(gshape[1]))),
      both(both(cmp(CmpIPredicate::uge, rowBlocks, one),
                cmp(CmpIPredicate::ult, rowBlocks, cst(8 * perIteration))),
           both(cmp(CmpIPredicate::ne, b.create<arith::RemUIOp>(loc, rowBlocks, iteration), zero),
                cmp(CmpIPredicate::ult, globalRowBlocks, cst(int64_t(1) << 32)))));
}

// The range [begin, end) of a 2-D slice across rows: the elements before the first whole block
// one at a time, whole iterations of groupCount groups, then one iteration whose masked stores
// write only the elements left.
void KernelBody::emitAcrossRows(Value rowBlocks, Value globalRowBlocks, Value iteration) {
  Value blockBegin =
      b.create<arith::ShRUIOp>(loc, b.create<arith::AddIOp>(loc, begin, cst(3)), two);
  Value blockEnd =
      b.create<arith::MaxUIOp>(loc, b.create<arith::ShRUIOp>(loc, end, two), blockBegin);
  Value count = b.create<arith::SubIOp>(loc, blockEnd, blockBegin);
  Value vectorEnd = b.create<arith::AddIOp>(
      loc, blockBegin,
      b.create<arith::MulIOp>(loc, b.create<arith::DivUIOp>(loc, count, iteration), iteration));
  Value headEnd = b.create<arith::MinUIOp>(loc, b.create<arith::ShLIOp>(loc, blockBegin, two), end);
  // The elements before the vector loop's first whole block (fewer than 4), one at a time.
  {
    auto elements = b.create<scf::ForOp>(loc, begin, headEnd, one);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(elements.getBody());
    Value local = elements.getInductionVar();
    Value globalRow =
        b.create<arith::AddIOp>(loc, b.create<arith::DivUIOp>(loc, local, lshape[1]), off[0]);
    Value globalCol =
        b.create<arith::AddIOp>(loc, b.create<arith::RemUIOp>(loc, local, lshape[1]), off[1]);
    Value linear =
        b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, globalRow, gshape[1]), globalCol);
    Value value = valueAt(linear, {globalRow, globalCol});
    b.create<LLVM::StoreOp>(loc, value,
                            b.create<LLVM::GEPOp>(loc, ptr, storeType, out, ValueRange{local}));
  }
  // x / rowBlocks as (x * m) >> 20 with m = ceil(2^20 / rowBlocks): exact while
  // x * (m * rowBlocks - 2^20) < 2^20, which x < 9 * perIteration <= 576 and
  // rowBlocks < 8 * perIteration <= 512 guarantee.
  static_assert(9 * kMaxGroups * kMaxVectorBlocks * 8 * kMaxGroups * kMaxVectorBlocks < (1 << 20),
                "the row division by multiplication is exact");
  Value magic = b.create<arith::DivUIOp>(
      loc, b.create<arith::AddIOp>(loc, cst(1 << 20), b.create<arith::SubIOp>(loc, rowBlocks, one)),
      rowBlocks);
  AcrossRows across;
  across.rowBlocks = rowBlocks;
  across.globalRowBlocks = globalRowBlocks;
  across.colBlockOffset = b.create<arith::ShRUIOp>(loc, off[1], two);
  Value skip = b.create<arith::SubIOp>(loc, globalRowBlocks, rowBlocks);
  Value firstRow = b.create<arith::DivUIOp>(loc, blockBegin, rowBlocks);
  Value firstCol = b.create<arith::RemUIOp>(loc, blockBegin, rowBlocks);
  // A lane's offsets once per call; in an iteration, the lane wraps one row further where
  // col + r0 >= rowBlocks (col, r0 < rowBlocks), a compare and a masked add instead of a
  // division per lane.
  across.rowBlocksVector = splat(rowBlocks);
  across.skipVector = splat(skip);
  {
    Value magicVector = splat(magic), twenty = i64s(20);
    for (int64_t group = 0; group < groupCount; ++group) {
      Value l = steps(group * vectorBlocks);
      Value q0 = rowsIn(l, magicVector, twenty);
      Value r0 = b.create<arith::SubIOp>(loc, l, mul32(q0, across.rowBlocksVector));
      Value blocks = b.create<arith::AddIOp>(loc, l, mul32(q0, across.skipVector));
      across.offsets.push_back({q0, r0, blocks});
    }
  }
  auto loop =
      b.create<scf::ForOp>(loc, blockBegin, vectorEnd, iteration, ValueRange{firstRow, firstCol});
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(loop.getBody());
    Value row = loop.getRegionIterArgs()[0], col = loop.getRegionIterArgs()[1];
    storeGroups(iterationPlaces(across, loop.getInductionVar(), row, col));
    Value next = b.create<arith::AddIOp>(loc, col, iteration);
    Value wrapped = rowsIn(next, magic, cst(20));
    b.create<scf::YieldOp>(
        loc, ValueRange{b.create<arith::AddIOp>(loc, row, wrapped),
                        b.create<arith::SubIOp>(loc, next,
                                                b.create<arith::MulIOp>(loc, wrapped, rowBlocks))});
  }
  // The elements after the last whole iteration (fewer than 4 * perIteration): one more
  // iteration whose masked stores write only them (one at a time, the 64 after a 512 x 32
  // slice's 85 iterations took 4% of its time).
  Value tailBegin =
      b.create<arith::MaxUIOp>(loc, b.create<arith::ShLIOp>(loc, vectorEnd, two), headEnd);
  auto tail = b.create<scf::IfOp>(
      loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, tailBegin, end).getResult(),
      /*withElseRegion=*/false);
  OpBuilder::InsertionGuard inner(b);
  b.setInsertionPointToStart(tail.thenBlock());
  SmallVector<GroupPlace, kMaxGroups> places =
      iterationPlaces(across, vectorEnd, loop.getResult(0), loop.getResult(1));
  for (GroupPlace &place : places) {
    place.storeFrom = tailBegin;
    place.storeTo = end;
  }
  storeGroups(places);
}

// Products of factors below 2^32 on vectors, said so (masks the code generator drops), so that
// they are one 32x32->64 multiply (vpmuludq), not a 64-bit one (3 uops or more).
Value KernelBody::mul32(Value x, Value y) {
  auto low = [&](Value v) -> Value {
    if (!isa<VectorType>(v.getType()))
      return v;
    return b.create<arith::AndIOp>(loc, v, i64s(0xffffffffLL));
  };
  return b.create<arith::MulIOp>(loc, low(x), low(y));
}

// The groups of the iteration from `block`, column block `col` of local row `row`.
SmallVector<GroupPlace, kMaxGroups> KernelBody::iterationPlaces(const AcrossRows &across,
                                                                Value block, Value row, Value col) {
  Value globalRow = b.create<arith::AddIOp>(loc, row, off[0]);
  Value rowStartBlock = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, globalRow, across.globalRowBlocks), across.colBlockOffset);
  Value firstBlock = splat(b.create<arith::AddIOp>(loc, rowStartBlock, col));
  Value firstColBlock = splat(b.create<arith::AddIOp>(loc, col, across.colBlockOffset));
  Value wrapAt = splat(b.create<arith::SubIOp>(loc, across.rowBlocks, col));
  Value noVector = i64s(0), oneVector = i64s(1);
  SmallVector<GroupPlace, kMaxGroups> places;
  for (int64_t group = 0; group < groupCount; ++group) {
    const LaneOffsets &lane = across.offsets[group];
    GroupPlace place;
    // Signed: both are below 2^31, and AVX2 compares signed 64-bit lanes in one instruction.
    Value wraps = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, lane.r0, wrapAt);
    auto ifWraps = [&](Value v) -> Value {
      return b.create<arith::SelectOp>(loc, wraps, v, noVector);
    };
    place.blocks = b.create<arith::AddIOp>(
        loc, b.create<arith::AddIOp>(loc, firstBlock, lane.blocks), ifWraps(across.skipVector));
    Value q = b.create<arith::AddIOp>(loc, lane.q0, ifWraps(oneVector));
    place.leading.push_back(b.create<arith::AddIOp>(loc, splat(globalRow), q));
    Value colBlock = b.create<arith::SubIOp>(
        loc, b.create<arith::AddIOp>(loc, firstColBlock, lane.r0), ifWraps(across.rowBlocksVector));
    Value firstColumn = b.create<arith::ShLIOp>(loc, colBlock, i64s(2));
    place.last = [this, firstColumn](Value linear) -> Value {
      return b.create<arith::OrIOp>(loc, firstColumn,
                                    b.create<arith::AndIOp>(loc, linear, i64s(3)));
    };
    place.localIndex = b.create<arith::ShLIOp>(
        loc, b.create<arith::AddIOp>(loc, block, cst(group * vectorBlocks)), two);
    places.push_back(std::move(place));
  }
  return places;
}

} // namespace initc::slice_kernel
