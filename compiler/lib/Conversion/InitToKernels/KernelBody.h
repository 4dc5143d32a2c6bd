//===- KernelBody.h - the loops of one kernel ---===//
//
// Private to InitToKernels: see SliceKernel.cpp for how the kernel is built.
//
//===----------------------------------------------------------------------===//
#ifndef INITC_CONVERSION_INITTOKERNELS_KERNELBODY_H
#define INITC_CONVERSION_INITTOKERNELS_KERNELBODY_H

#include "GroupEvaluation.h"
#include "GroupShuffles.h"
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

/// Where one group of vectorBlocks blocks lies: its blocks' global indices, the region's
/// arguments for every dim but the last (one vector each), the last dim's argument for a lane
/// given the lane's linear indices, and the local index of the group's first element.
struct GroupPlace {
  Value blocks;
  SmallVector<Value> leading;
  std::function<Value(Value)> last;
  Value localIndex;
  // If set, the group stores only its elements of local indices [storeFrom, storeTo): a group
  // that holds the partial blocks at a row's ends or the blocks left after the iterations.
  Value storeFrom, storeTo;
};

/// One row of the range, as the row loop's body sees it (a row: all dims but the last fixed).
struct Row {
  Value start;                    // the local index of its first element
  SmallVector<Value> globalIndex; // its global index along every dim but the last
  Value base;                     // the global linear index of its column 0
  Value colLo, colHi;             // the columns of the range in it
  Value lin0, lin1;               // their global linear indices
};

/// Where a vector lane of an iteration across rows lies from the iteration's first block: a
/// lane l blocks after it is q0 = l / rowBlocks rows and r0 = l % rowBlocks blocks from the
/// iteration's first column; `blocks` is l + q0 * skip, the lane's block before any wrap.
struct LaneOffsets {
  Value q0, r0, blocks;
};

/// What the iterations across rows share (KernelBody::emitAcrossRows).
struct AcrossRows {
  Value rowBlocks, globalRowBlocks;  // blocks per row of the slice and of the parameter
  Value colBlockOffset;              // the slice's first column, in blocks
  Value rowBlocksVector, skipVector; // splats: skip is the blocks of a global row not in the slice
  SmallVector<LaneOffsets, kMaxGroups> offsets; // one per group
};

/// The body of one kernel: it reads the slice's shapes and the region's keys, and builds the
/// loops over rows, iterations and masked ends, and the groups of blocks they evaluate (with
/// GroupEvaluation) and store in element order (with GroupShuffles).
class KernelBody {
public:
  KernelBody(func::FuncOp func, ElementwiseOp fused, const VectorLoop &loop, bool convertsBF16);
  void build();

private:
  Value cst(int64_t v) { return b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(v)); }
  Value load(Value base, int64_t index) {
    Value p = b.create<LLVM::GEPOp>(loc, ptr, i64, base, ArrayRef<LLVM::GEPArg>{(int32_t)index});
    return b.create<LLVM::LoadOp>(loc, i64, p);
  }
  VectorType vectorOf(Type t) { return VectorType::get({vectorBlocks}, t); }
  Value splat(Value scalar) {
    return b.create<vector::BroadcastOp>(loc, vectorOf(scalar.getType()), scalar);
  }
  Value i64s(int64_t v) {
    return b.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(vectorOf(b.getI64Type()), b.getI64IntegerAttr(v)));
  }
  // The blocks first, first + 1, ..., first + vectorBlocks - 1 in the layout's blockOrder
  Value steps(int64_t first) {
    SmallVector<int64_t> values =
        llvm::map_to_vector(layout.blockOrder, [&](int64_t k) { return first + k; });
    return b.create<arith::ConstantOp>(loc, b.getI64VectorAttr(values));
  }

  Value valueAt(Value linear, ArrayRef<Value> indices);
  SmallVector<IRMapping, 4 * kMaxGroups> laneArguments(ArrayRef<GroupPlace> places);
  void storeGroups(ArrayRef<GroupPlace> places);
  void storeEvaluated(GroupEvaluation &evaluation, ArrayRef<GroupPlace> places);
  // Whether the loop of `groups` groups an iteration is software-pipelined (groupLoop): the
  // main loop of a pipelined shape, when the region has a block stage.
  bool pipelines(int64_t groups) const { return blockStage && groups == groupCount; }
  Value lanesInOrder(GroupEvaluation &evaluation, GroupShuffles &shuffles, int64_t group);
  SmallVector<Value, 4> pairsInOrder(GroupEvaluation &evaluation, GroupShuffles &shuffles,
                                     int64_t group);
  void store(Value piece, Value index, const GroupPlace &place);

  void emitRows(Value rangeBegin, Value rangeEnd);
  Row beginRow(Value index, Value rangeBegin, Value rangeEnd);
  void emitRowOnVectors(const Row &row);
  void emitRowByElements(const Row &row);
  Value localOf(const Row &row, Value linear);
  GroupPlace placeInRow(const Row &row, Value firstBlock, int64_t group);
  Value groupLoop(const Row &row, Value from, Value to, int64_t groups);
  Value evaluateInRow(const Row &row, Value col, Value linear);
  Value addressInRow(const Row &row, Value col);
  void scalarLoop(const Row &row, Value from, Value to);

  Value spansRows(Value rowBlocks, Value globalRowBlocks, Value iteration);
  void emitAcrossRows(Value rowBlocks, Value globalRowBlocks, Value iteration);
  SmallVector<GroupPlace, kMaxGroups> iterationPlaces(const AcrossRows &across, Value block,
                                                      Value row, Value col);
  Value mul32(Value x, Value y);
  Value rowsIn(Value x, Value m, Value twenty) {
    return b.create<arith::ShRUIOp>(loc, mul32(x, m), twenty);
  }

  OpBuilder b;
  Location loc;
  Type ptr, i64;
  Value out, begin, end; // the kernel's output and range of local indices
  Block &region;         // the fused op's body: one element's value
  int64_t rank;
  // Per dim, as loaded: the parameter's shape, the slice's offset and shape, and the global
  // row-major strides; then the region's trailing arguments (its Philox keys).
  SmallVector<Value> gshape, off, lshape, gstride, kernelArgs;
  Value one, zero, two, rowLength;
  Type element, storeType; // i1 is stored as i8
  bool vectorizable;
  int64_t groupCount, vectorBlocks;
  bool pipelined;
  bool convertsBF16;
  GroupLayout layout;
  std::optional<BlockStage> blockStage; // when the main loop is software-pipelined
  Block *entryBlock;                    // where the pipelined loop's stack slots are
};

} // namespace initc::slice_kernel

#endif // INITC_CONVERSION_INITTOKERNELS_KERNELBODY_H
