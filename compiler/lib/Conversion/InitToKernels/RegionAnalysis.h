//===- RegionAnalysis.h - what a region allows on vectors ---===//
//
// Private to InitToKernels: see SliceKernel.cpp for how the kernel is built.
//
//===----------------------------------------------------------------------===//
#ifndef INITC_CONVERSION_INITTOKERNELS_REGIONANALYSIS_H
#define INITC_CONVERSION_INITTOKERNELS_REGIONANALYSIS_H

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

/// Whether every op of `region` is an arith or math op on scalars, so that it can be evaluated
/// on vectors by giving each result a vector type.
bool isVectorizable(Block &region);

/// One pair of the last Philox round's words, as the region computes them (rng::philox): the
/// even word is the low half of (product >> 32) ^ previous ^ key and the odd word that of
/// product, so the 64-bit product ^ (previous << 32) ^ (key << 32) holds the odd word in its low
/// half and the even one in its high half.
struct WordPair {
  Value product, previous, key;
};

/// A region whose value depends on its element only through the element's Philox word, an
/// elementwise function of it (uniform, truncated normal: not Box-Muller, which takes both words
/// of a pair): the vector code can then keep the words of a pair side by side, as the last round
/// leaves them, and evaluate the function on both at once.
struct WordFunction {
  Operation *word;                    // select(index & 2, select(index & 1, x3, x2), ..x1, x0)
  std::array<WordPair, 2> pairs;      // (x0, x1) and (x2, x3)
  llvm::DenseSet<Operation *> ofWord; // the ops after it, the region's value among them
};

/// The word function of `region` (of a parameter of rank `rank`), if it is one.
std::optional<WordFunction> findWordFunction(Block &region, int64_t rank);

/// Whether `op` is `index >> k` with k >= 2: the same for the four elements of a block, which
/// differ in the index's two low bits only.
bool isBlockIndex(Operation &op, Value index);

/// The region's arguments that the four lanes of a block share: every one but the index and
/// the column (of a parameter of rank `rank`).
llvm::DenseSet<Value> argumentsSharedByLanes(Block &region, int64_t rank);

/// Whether the four lanes of a block share `op`'s results: the block index (isBlockIndex) and
/// every op whose operands are all in `shared` (the region's arguments but the index and the
/// column, and the results of the shared ops before `op`).
bool isSharedByLanes(Operation &op, Value index, const llvm::DenseSet<Value> &shared);

/// The first stage of a region for a software-pipelined loop (KernelBody::groupLoop): the ops
/// that the lanes share and that depend on the block (the Philox rounds), and those of their
/// results that the rest of the region reads, which an iteration computes for the next one.
struct BlockStage {
  llvm::DenseSet<Operation *> ops;
  SmallVector<Value> carried; // in the region's order
};

/// The block stage of `region` (of a parameter of rank `rank`), if it has one and the rest of
/// the region can take its results from a previous iteration: not with a lazy select, whose
/// branches would split the stages.
std::optional<BlockStage> findBlockStage(Block &region, int64_t rank);

} // namespace initc::slice_kernel

#endif // INITC_CONVERSION_INITTOKERNELS_REGIONANALYSIS_H
