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

} // namespace initc::slice_kernel

#endif // INITC_CONVERSION_INITTOKERNELS_REGIONANALYSIS_H
