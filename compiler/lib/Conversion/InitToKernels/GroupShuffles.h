//===- GroupShuffles.h - a group of blocks put in element order ---===//
//
// Private to InitToKernels: see SliceKernel.cpp for how the kernel is built.
//
//===----------------------------------------------------------------------===//
#ifndef INITC_CONVERSION_INITTOKERNELS_GROUPSHUFFLES_H
#define INITC_CONVERSION_INITTOKERNELS_GROUPSHUFFLES_H

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

/// The shuffles that put the values of a group of blocks into element order for its store, as
/// its GroupLayout says.
class GroupShuffles {
public:
  GroupShuffles(OpBuilder &b, Location loc, const GroupLayout &layout, Type element,
                int64_t vectorBlocks, bool convertsBF16)
      : b(b), loc(loc), layout(layout), element(element), vectorBlocks(vectorBlocks),
        convertsBF16(convertsBF16) {}

  /// The four lanes of a group (one vector each, as integers of the stored width) in element
  /// order, as one vector. `wide`: with ConvertPairs, the f32 values each lane converts.
  Value lanesInOrder(ArrayRef<Value> lanes, ArrayRef<Value> wide) {
    switch (layout.storeShuffle) {
    case StoreShuffle::TransposeWords:
      return transposeWords(lanes);
    case StoreShuffle::PermuteHalves:
      return permuteHalves(lanes);
    case StoreShuffle::ConvertPairs:
      return convertPairs(wide);
    case StoreShuffle::PairHalves:
      return converted() ? joinConverted(lanes) : pairHalves(lanes);
    case StoreShuffle::Interleave: {
      Value even = interleave(lanes[0], lanes[2]);
      Value odd = interleave(lanes[1], lanes[3]);
      return interleave(even, odd);
    }
    }
    llvm_unreachable("a StoreShuffle without its shuffles");
  }

  /// Both pairs of each block of a group (a word function's value on the group's two vectors
  /// of pairs, x1 x0 and x3 x2 of a block at its position; for 16-bit elements, the value the
  /// conversion takes) in element order, as stored: in one piece, or for 16-bit elements one
  /// per conversion instruction (a vcvtps2ph of 16 lanes, which stores its ymm itself where
  /// joining two for a zmm store takes a vinsertf64x4, uniform f16 3-7% faster on a Zen 5; a
  /// vcvtne2ps2bf16 of 32, PairBF16Conversions.cpp).
  SmallVector<Value, 4> pairsInOrder(Value x10, Value x32) {
    const int64_t count = 4 * vectorBlocks, perConversion = element.isF16() ? count / 4 : count / 2;
    SmallVector<Value, 4> pieces;
    if (layout.convertLast && element.isBF16() && !convertsBF16) {
      // Rule 8's rounding (the conversion is marked: no NaN case) on the pairs as they are:
      // it leaves each bf16 in its word's high half, so interleaving the pairs and taking
      // the high halves is one word shuffle of the two.
      const int64_t n = 2 * vectorBlocks;
      random::BF16Operand operand = random::bf16OperandOf(layout.conversion);
      auto halvesOf = [&](Value x) {
        return b.create<vector::BitCastOp>(loc, VectorType::get({2 * n}, b.getI16Type()),
                                           random::emitRoundToBF16Words(b, loc, x, operand));
      };
      Value halves10 = halvesOf(x10), halves32 = halvesOf(x32);
      SmallVector<int64_t> highHalves; // interleavePairs' order, of the words' high halves
      for (int64_t position : layout.pairPositions)
        for (int64_t word : blockWords(position))
          highHalves.push_back(2 * word + 1);
      for (int64_t from = 0; from < count; from += perConversion)
        pieces.push_back(b.create<vector::BitCastOp>(
            loc, VectorType::get({perConversion}, element),
            shuffle(halves10, halves32, ArrayRef(highHalves).slice(from, perConversion))));
      return pieces;
    }
    Value all = interleavePairs(x10, x32);
    if (!layout.convertLast)
      return {all};
    all = b.create<vector::BitCastOp>(loc, VectorType::get({count}, b.getF32Type()), all);
    for (int64_t from = 0; from < count; from += perConversion) {
      SmallVector<int64_t> mask(perConversion);
      std::iota(mask.begin(), mask.end(), from);
      Value wide = shuffle(all, all, mask);
      Operation *converted = b.clone(*layout.conversion);
      converted->setOperand(0, wide);
      converted->getResult(0).setType(VectorType::get({perConversion}, element));
      pieces.push_back(converted->getResult(0));
    }
    return pieces;
  }

private:
  Value shuffle(Value x, Value y, ArrayRef<int64_t> mask) {
    return b.create<vector::ShuffleOp>(loc, x, y, mask);
  }
  static SmallVector<int64_t> iota(int64_t count) {
    SmallVector<int64_t> mask(count);
    std::iota(mask.begin(), mask.end(), 0);
    return mask;
  }
  // [x y]
  Value concat(Value x, Value y) {
    return shuffle(x, y, iota(2 * cast<VectorType>(x.getType()).getNumElements()));
  }
  // [a0 b0 a1 b1 ...]
  Value interleave(Value x, Value y) {
    int64_t n = cast<VectorType>(x.getType()).getNumElements();
    SmallVector<int64_t> mask;
    for (int64_t k = 0; k < n; ++k)
      mask.append({k, n + k});
    return shuffle(x, y, mask);
  }
  // Within each 128-bit lane L of two vectors of vectorBlocks 32-bit words (4L + k):
  // [x0 y0 x1 y1] and [x2 y2 x3 y3] (unpckl*, unpckh*), and the same on pairs of words.
  Value withinLanes(Value x, Value y, std::array<int64_t, 4> pattern) {
    SmallVector<int64_t> mask;
    for (int64_t lane = 0; lane < vectorBlocks / 4; ++lane)
      for (int64_t k : pattern)
        mask.push_back(k + 4 * lane);
    return shuffle(x, y, mask);
  }
  Value low(Value x, Value y) {
    const int64_t n = vectorBlocks; // an index into y
    return withinLanes(x, y, {0, n, 1, n + 1});
  }
  Value high(Value x, Value y) {
    const int64_t n = vectorBlocks;
    return withinLanes(x, y, {2, n + 2, 3, n + 3});
  }
  // Lanes that are a conversion instruction's: f16 lanes whatever the region's last op (x86
  // has no f16 arithmetic before AVX512-FP16, so LLVM computes f16 in f32 and converts), bf16
  // lanes where the CPU converts in one instruction. Elsewhere a marked bf16 conversion is
  // rule 8's integer rounding once lowered, whose shifts the widening path (pairHalves)
  // cancels (uniform bf16 1.5% faster than narrowing each lane, on x86-64-v4 code on a Zen 5).
  bool converted() const { return element.isF16() || (layout.conversion && convertsBF16); }
  // The four lanes of 8 or 16 blocks of 32-bit elements (one ymm or zmm each, position 4L + k
  // holding block (vectorBlocks / 4) k + L) in element order, by the 4x4 transpose within
  // 128-bit lanes: 8 shuffles that x86 has as single instructions (unpcklps/unpckhps,
  // unpcklpd/unpckhpd), the k-th result blocks (vectorBlocks / 4) k and up. Given the
  // interleave at once, LLVM 19 builds each ymm of it from four sources, 44 instructions
  // (vpermps, vblendps and index loads) where AVX-512's two-source vpermt2ps is missing, and
  // each zmm from two vpermt2ps and a masked move.
  Value transposeWords(ArrayRef<Value> lanes) {
    const int64_t n = vectorBlocks;
    auto lowPairs = [&](Value x, Value y) { return withinLanes(x, y, {0, 1, n, n + 1}); };
    auto highPairs = [&](Value x, Value y) { return withinLanes(x, y, {2, 3, n + 2, n + 3}); };
    Value t0 = low(lanes[0], lanes[1]);
    Value t1 = high(lanes[0], lanes[1]);
    Value t2 = low(lanes[2], lanes[3]);
    Value t3 = high(lanes[2], lanes[3]);
    Value u0 = lowPairs(t0, t2), u1 = highPairs(t0, t2);
    Value u2 = lowPairs(t1, t3), u3 = highPairs(t1, t3);
    Value firstHalf = concat(u0, u1);
    Value secondHalf = concat(u2, u3);
    return concat(firstHalf, secondHalf);
  }
  // The four lanes of 8 blocks of 16-bit elements (one xmm each, as an f16 conversion leaves
  // them) in element order: the lanes paired into ymm [l0 | l2] and [l1 | l3], 16-bit unpacks
  // within 128-bit halves, and one dword permute each: 6 instructions, where widening the
  // lanes to 32-bit words (pairHalves) takes 12 on the two shuffle pipes.
  Value permuteHalves(ArrayRef<Value> lanes) {
    Value evenLanes = concat(lanes[0], lanes[2]);
    Value oddLanes = concat(lanes[1], lanes[3]);
    // [l0_0 l1_0 .. l0_3 l1_3 | l2_0 l3_0 .. l2_3 l3_3] and the same for elements 4 to 7
    Value low =
        shuffle(evenLanes, oddLanes, {0, 16, 1, 17, 2, 18, 3, 19, 8, 24, 9, 25, 10, 26, 11, 27});
    Value high =
        shuffle(evenLanes, oddLanes, {4, 20, 5, 21, 6, 22, 7, 23, 12, 28, 13, 29, 14, 30, 15, 31});
    auto words = VectorType::get({8}, b.getI32Type());
    auto blocksInOrder = [&](Value halves) {
      Value pairs = b.create<vector::BitCastOp>(loc, words, halves);
      return shuffle(pairs, pairs, {0, 4, 1, 5, 2, 6, 3, 7});
    };
    return concat(blocksInOrder(low), blocksInOrder(high));
  }
  // The bf16 lanes of 16 blocks (ConvertPairs) in element order from the f32 lanes they
  // convert: two lanes interleaved within 128-bit lanes (unpcklps, unpckhps), the two results
  // converted together (vcvtne2ps2bf16, PairBF16Conversions.cpp: dwords of both elements of a
  // position), and the dwords of the two pairs interleaved within 128-bit lanes (punpckldq,
  // punpckhdq). 6 shuffles on single 128-bit lanes and 2 conversions per 64 elements, where
  // two-source word permutes (vpermt2w) are slow on Zen 5 and the f32 transpose takes 8.
  Value convertPairs(ArrayRef<Value> wide) {
    const int64_t n = vectorBlocks;
    auto convert = [&](Value x) -> Value {
      Operation *copy = b.clone(*layout.conversion);
      copy->setOperand(0, x);
      copy->getResult(0).setType(VectorType::get({n}, element));
      return copy->getResult(0);
    };
    auto words = VectorType::get({n}, b.getI32Type());
    auto pairs = [&](Value x, Value y) -> Value {
      Value both = concat(convert(low(x, y)), convert(high(x, y)));
      return b.create<vector::BitCastOp>(loc, words, both);
    };
    Value first = pairs(wide[0], wide[1]), second = pairs(wide[2], wide[3]);
    Value ordered = concat(low(first, second), high(first, second));
    return b.create<vector::BitCastOp>(loc, VectorType::get({4 * n}, b.getI16Type()), ordered);
  }
  // Lanes a conversion made, joined as [l0 | l1] and [l2 | l3] (where the CPU converts to bf16
  // in one instruction, each join is one vcvtne2ps2bf16; ConvertPairs orders 16 blocks with
  // cheaper shuffles), then element order in one shuffle (two vpermt2w). For f16 this is 4
  // instructions an iteration fewer than widening the lanes to words (pairHalves); on an AMD
  // EPYC Zen 5 the two measured alike, within the runs' noise.
  Value joinConverted(ArrayRef<Value> lanes) {
    SmallVector<int64_t> position(vectorBlocks), order;
    for (int64_t p = 0; p < vectorBlocks; ++p)
      position[layout.blockOrder[p]] = p;
    for (int64_t block = 0; block < vectorBlocks; ++block)
      for (int64_t lane = 0; lane < 4; ++lane)
        order.push_back(lane * vectorBlocks + position[block]);
    Value first = concat(lanes[0], lanes[1]);
    Value second = concat(lanes[2], lanes[3]);
    return shuffle(first, second, order);
  }
  // Two 16-bit elements of a block per 32-bit word (the first in the low half), then the words
  // of the two pairs interleaved: LLVM sees that a bf16 rounding's `>> 16` and `<< 16` cancel,
  // and no 16-bit shuffle or narrowing remains. With 8 blocks in the order 0 1 4 5 | 2 3 6 7,
  // the interleave within 128-bit halves is element order.
  Value pairHalves(ArrayRef<Value> lanes) {
    auto vectorOfI32 = VectorType::get({vectorBlocks}, b.getI32Type());
    Value sixteen = b.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(vectorOfI32, b.getI32IntegerAttr(16)));
    auto pair = [&](Value low, Value high) -> Value {
      Value first = b.create<arith::ExtUIOp>(loc, vectorOfI32, low);
      Value second = b.create<arith::ExtUIOp>(loc, vectorOfI32, high);
      second = b.create<arith::ShLIOp>(loc, second, sixteen);
      return b.create<arith::OrIOp>(loc, first, second);
    };
    Value first = pair(lanes[0], lanes[1]);
    Value second = pair(lanes[2], lanes[3]);
    if (vectorBlocks != 8)
      return interleave(first, second);
    Value blocks03 = shuffle(first, second, {0, 8, 1, 9, 4, 12, 5, 13});
    Value blocks47 = shuffle(first, second, {2, 10, 3, 11, 6, 14, 7, 15});
    return concat(blocks03, blocks47);
  }
  // The four words of the block at `position`, in element order, as indices into the two
  // vectors of pairs [x10 | x32] (x0 in the high half of its 64-bit lane).
  std::array<int64_t, 4> blockWords(int64_t position) const {
    const int64_t n = 2 * vectorBlocks;
    return {2 * position + 1, 2 * position, n + 2 * position + 1, n + 2 * position};
  }
  // A group's two vectors of pairs of 32-bit elements (x1 x0 and x3 x2 of a block, at its
  // position) in element order, a register's worth at a time: [x0 x1 x2 x3] of the blocks
  // in pairPositions order (shufps: two elements of each source within a 128-bit lane).
  Value interleavePairs(Value x10, Value x32) {
    const int64_t n = 2 * vectorBlocks, perPiece = vectorBlocks / 4;
    auto elements = VectorType::get({n}, b.getI32Type());
    x10 = b.create<vector::BitCastOp>(loc, elements, x10);
    x32 = b.create<vector::BitCastOp>(loc, elements, x32);
    SmallVector<Value, 4> pieces;
    for (int64_t from = 0; from < vectorBlocks; from += perPiece) {
      SmallVector<int64_t> mask;
      for (int64_t position : ArrayRef(layout.pairPositions).slice(from, perPiece))
        llvm::append_range(mask, blockWords(position));
      pieces.push_back(shuffle(x10, x32, mask));
    }
    while (pieces.size() > 1) {
      SmallVector<Value, 4> joined;
      for (size_t k = 0; k < pieces.size(); k += 2)
        joined.push_back(concat(pieces[k], pieces[k + 1]));
      pieces = std::move(joined);
    }
    return pieces.front();
  }

  OpBuilder &b;
  Location loc;
  const GroupLayout &layout;
  Type element;
  int64_t vectorBlocks;
  bool convertsBF16;
};

} // namespace initc::slice_kernel

#endif // INITC_CONVERSION_INITTOKERNELS_GROUPSHUFFLES_H
