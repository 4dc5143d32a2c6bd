//===- GroupLayout.h - how a group of blocks reaches element order ---===//
//
// Private to InitToKernels: see SliceKernel.cpp for how the kernel is built.
//
//===----------------------------------------------------------------------===//
#ifndef INITC_CONVERSION_INITTOKERNELS_GROUPLAYOUT_H
#define INITC_CONVERSION_INITTOKERNELS_GROUPLAYOUT_H

#include "RegionAnalysis.h"
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

/// How the vector code puts the four lanes of a group of blocks into element order.
enum class StoreShuffle {
  Interleave,     // any element type and width: interleaves of interleaves
  TransposeWords, // 32-bit, 8 or 16 blocks: 4x4 transposes within 128-bit lanes
  PermuteHalves,  // f16, 8 blocks: 16-bit unpacks within 128-bit halves and a dword permute
  PairHalves,     // 16-bit: 32-bit words of two elements each, interleaved
  ConvertPairs,   // bf16 by a conversion instruction, 16 blocks: f32 pairs, converted, interleaved
};

/// How the vector code lays out a group of blocks: how its four lanes (one vector each) reach
/// element order for its store, and the order in which a vector's lanes hold the group's blocks
/// so that few shuffles get them there. Each lane computes what its block's elements need
/// whatever that order is; the store covers the same elements.
struct GroupLayout {
  StoreShuffle storeShuffle = StoreShuffle::Interleave;
  SmallVector<int64_t> blockOrder;          // the block at each position of a vector
  arith::TruncFOp conversion;               // the region's value, if a conversion
  std::optional<WordFunction> wordFunction; // evaluated on pairs of words, if set
  bool convertLast = false;                 // the word function's conversion, after the pairs
  SmallVector<int64_t> pairPositions;       // with a word function, positions in store order
};


/// `storeType`: the type `element` is stored as (i8 for i1).
GroupLayout planGroupLayout(Block &region, int64_t rank, Type element, Type storeType,
                            int64_t vectorBlocks, bool convertsBF16, bool vectorizable);

} // namespace initc::slice_kernel

#endif // INITC_CONVERSION_INITTOKERNELS_GROUPLAYOUT_H
