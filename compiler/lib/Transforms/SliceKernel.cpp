//===- SliceKernel.cpp - a recipe's native kernel over any slice ----------===//
//
// A kernel computes elements [begin, end) of one slice, in local row-major order. It walks the
// slice row by row (a row: all dims but the last fixed) so the inner loop is a plain counted loop
// over the last dim that LLVM vectorizes; each element's global index is offset + local index,
// and its linear index is taken in the global shape, so every rank computes the same value for
// the same element. The ABI is initrt::KernelFn (runtime/include/initrt/program.h).
//
// One Philox block gives four consecutive elements (ir-spec/rng.md rule 2), so the inner loop runs
// over whole blocks of the linear index, evaluating the region for the four elements of a block in
// one iteration: LLVM sees the four Philox evaluations are the same and keeps one. The main loop
// takes 8 blocks at a time on explicit vectors (each op of the region given a vector<8> type, one
// vector per lane of a block, the four interleaved into one store; what depends on the block
// alone, such as the Philox rounds, is built once for the four), so the vector width does not
// depend on LLVM's cost model (ir-spec/lowering.md says why); with AVX-512 it takes 16 blocks
// (vector<16>: zmm floats) and several such groups, cloned op by op so that their independent
// dependency chains interleave (the `targets` option, one kernel per CPU). A region that is a
// function of its element's Philox word alone (uniform, truncated normal) runs on two vectors of
// twice the width instead, the words of two elements side by side as the last Philox round
// leaves them (WordFunction). The partial blocks at either end of a row and the blocks left
// after the iterations run in groups whose masked stores write only the row's elements (a
// region that cannot run on vectors: a scalar block loop that LLVM may vectorize, and scalar
// loops for the partial blocks). A 2-D slice whose rows are whole blocks but shorter than a few
// iterations runs the same vector code across rows instead (ir-spec/lowering.md). A select marked
// rarely false (erfinv's tail branch) computes its false operand on vectors only in iterations
// where some lane takes it. The region's trailing arguments (Philox keys) are read from the
// kernel's `args`, so parameters that differ only in their keys share a kernel.
//
// In this file: findWordFunction recognizes a word function; planGroupLayout decides, once per
// kernel, how a group of blocks reaches element order; GroupEvaluation clones the region onto
// the vectors of an iteration's groups; GroupShuffles puts each group's values in element
// order; KernelBody builds the loops over rows, iterations and masked ends around them.
//
//===----------------------------------------------------------------------===//
#include "initc/Transforms/SliceKernel.h"

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

using namespace mlir;
using namespace initc;
using namespace initc::init;

namespace {

/// Whether every op of `region` is an arith or math op on scalars, so that it can be evaluated
/// on vectors by giving each result a vector type.
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
    IntegerAttr amount; // index >> 2 and more: the same for the four elements of a block
    auto shift = dyn_cast<arith::ShRUIOp>(op);
    bool blockOnly = shift && shift.getLhs() == index &&
                     matchPattern(shift.getRhs(), m_Constant(&amount)) && amount.getInt() >= 2;
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
                            int64_t vectorBlocks, bool convertsBF16, bool vectorizable) {
  GroupLayout layout;
  unsigned storeBits = storeType.getIntOrFloatBitWidth();
  StoreShuffle &storeShuffle = layout.storeShuffle;
  if ((vectorBlocks == 8 || vectorBlocks == 16) && storeBits == 32)
    storeShuffle = StoreShuffle::TransposeWords;
  else if (vectorBlocks == 8 && element.isF16())
    storeShuffle = StoreShuffle::PermuteHalves;
  else if (storeBits == 16 && llvm::sys::IsLittleEndianHost)
    storeShuffle = StoreShuffle::PairHalves;
  auto conversion =
      cast<YieldOp>(region.getTerminator()).getValue().getDefiningOp<arith::TruncFOp>();
  layout.conversion = conversion;
  if (storeShuffle == StoreShuffle::PairHalves && vectorBlocks == 16 && convertsBF16 &&
      conversion && element.isBF16() && conversion->hasAttr(random::kNoNaNOrSubnormalAttr))
    storeShuffle = StoreShuffle::ConvertPairs;
  SmallVector<int64_t> &blockOrder = layout.blockOrder;
  blockOrder.resize(vectorBlocks);
  std::iota(blockOrder.begin(), blockOrder.end(), 0);
  if (storeShuffle == StoreShuffle::ConvertPairs) {
    // Dword j of a converted pair of lanes holds the two elements of position pairPosition(j)
    // (below); the final interleave puts dwords 4L, 4L + 1 of two such vectors into 128-bit
    // lane L of the first store and 4L + 2, 4L + 3 into that of the second, so those positions
    // hold blocks 2L, 2L + 1 and 8 + 2L, 9 + 2L.
    const int64_t n = vectorBlocks;
    auto pairPosition = [&](int64_t j) {
      int64_t half = j < n / 2 ? 0 : 1, k = j - half * n / 2;
      return 4 * (k / 2) + 2 * half + k % 2;
    };
    for (int64_t lane = 0; lane < n / 4; ++lane)
      for (int64_t i = 0; i < 2; ++i) {
        blockOrder[pairPosition(4 * lane + i)] = 2 * lane + i;
        blockOrder[pairPosition(4 * lane + 2 + i)] = n / 2 + 2 * lane + i;
      }
  } else if (storeShuffle == StoreShuffle::TransposeWords) {
    // Position 4L + k (128-bit lane L, word k) holds block (vectorBlocks / 4) k + L.
    for (int64_t position = 0; position < vectorBlocks; ++position)
      blockOrder[position] = position % 4 * (vectorBlocks / 4) + position / 4;
  } else if (storeShuffle == StoreShuffle::PairHalves && vectorBlocks == 8)
    blockOrder = {0, 1, 4, 5, 2, 3, 6, 7};
  // Where the region is an elementwise function of its element's Philox word (WordFunction)
  // and its elements are 32-bit, f16, or bf16 from a conversion marked never NaN nor subnormal
  // (by AVX512-BF16's instruction, or rule 8's integer rounding without it), each group
  // evaluates the function on two vectors of twice the width: x1, x0 of each block in one
  // 64-bit lane, as the last Philox round's product leaves them, and x3, x2. The words need no
  // narrowing shuffles into 32-bit vectors, and the two pairs of a block go into element order
  // by one in-lane shuffle (shufps) per register stored, where four lanes take a 4x4 transpose:
  // on AVX-512, 28 fewer instructions an iteration of the uniform f32 loop (507 to 479). 16-bit
  // elements are put in order as f32, then converted; bf16 rounded in integer ops is rounded
  // first and put in order by the word shuffle that takes its high halves.
  std::optional<WordFunction> &wordFunction = layout.wordFunction;
  bool convertsPairs =
      conversion && conversion.getIn().getType().isF32() &&
      (element.isF16() || (element.isBF16() && conversion->hasAttr(random::kNoNaNOrSubnormalAttr)));
  if ((vectorBlocks == 8 || vectorBlocks == 16) && vectorizable && llvm::sys::IsLittleEndianHost &&
      (storeBits == 32 || convertsPairs))
    wordFunction = findWordFunction(region, rank);
  layout.convertLast = wordFunction && storeBits == 16;
  // The shuffles take the two pairs of the block in the low 64 bits of each 128-bit lane of a
  // register's worth (half a group), then those of the high 64 bits: the blocks' positions in
  // the vectors in that order.
  SmallVector<int64_t> &pairPositions = layout.pairPositions;
  if (wordFunction) {
    const int64_t half = vectorBlocks / 2;
    for (int64_t reg = 0; reg < 2; ++reg)
      for (int64_t high = 0; high < 2; ++high)
        for (int64_t lane = 0; lane < half / 2; ++lane)
          pairPositions.push_back(reg * half + 2 * lane + high);
    for (auto [block, position] : llvm::enumerate(pairPositions))
      blockOrder[position] = block;
  }
  return layout;
}

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
  KernelBody(func::FuncOp func, ElementwiseOp fused, int64_t groupCount, int64_t vectorBlocks,
             bool convertsBF16);
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
  void storeGroups(ArrayRef<GroupPlace> places);
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
  bool convertsBF16;
  GroupLayout layout;
};

KernelBody::KernelBody(func::FuncOp func, ElementwiseOp fused, int64_t groupCount,
                       int64_t vectorBlocks, bool convertsBF16)
    : b(OpBuilder::atBlockBegin(&func.getBody().front())), loc(func.getLoc()),
      ptr(LLVM::LLVMPointerType::get(func.getContext())), i64(b.getI64Type()),
      out(func.getArgument(0)), begin(func.getArgument(4)), end(func.getArgument(5)),
      region(fused.getBody().front()), rank(fused.getType().getRank()),
      element(fused.getType().getElementType()),
      storeType(element.isInteger(1) ? b.getI8Type() : element),
      vectorizable(storeType.isIntOrFloat() && isVectorizable(region)), groupCount(groupCount),
      vectorBlocks(vectorBlocks), convertsBF16(convertsBF16),
      layout(planGroupLayout(region, rank, element, storeType, vectorBlocks, convertsBF16,
                             vectorizable)) {
  Value gshapePtr = func.getArgument(1), offPtr = func.getArgument(2),
        lshapePtr = func.getArgument(3), argsPtr = func.getArgument(6);
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

// Evaluates the region for the 4 * vectorBlocks elements of each group in `places` on vectors
// (GroupEvaluation), puts the four lanes of each group in element order (GroupShuffles) and
// stores them.
void KernelBody::storeGroups(ArrayRef<GroupPlace> places) {
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
  GroupEvaluation evaluation(b, loc, region, rank, layout, vectorBlocks, std::move(mappings));
  evaluation.run();
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
  auto loop = b.create<scf::ForOp>(loc, from, end, step);
  OpBuilder::InsertionGuard inner(b);
  b.setInsertionPointToStart(loop.getBody());
  SmallVector<GroupPlace, kMaxGroups> places;
  for (int64_t group = 0; group < groups; ++group)
    places.push_back(placeInRow(row, loop.getInductionVar(), group));
  storeGroups(places);
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

} // namespace

func::FuncOp initc::buildKernel(OpBuilder &builder, Location loc, StringRef name,
                                ElementwiseOp fused, int64_t groupCount, int64_t vectorBlocks,
                                bool convertsBF16) {
  MLIRContext *ctx = builder.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Type i64 = builder.getI64Type();
  auto funcType = builder.getFunctionType({ptr, ptr, ptr, ptr, i64, i64, ptr}, {});
  auto func = builder.create<func::FuncOp>(loc, name, funcType);
  func->setAttr("initc.kernel", builder.getUnitAttr());
  // The runtime's promises (ir-spec/lowering.md): `out` overlaps no input array and no pointer
  // is kept, so LLVM vectorizes without run-time alias checks.
  for (unsigned arg : {0u, 1u, 2u, 3u, 6u}) {
    func.setArgAttr(arg, LLVM::LLVMDialect::getNoAliasAttrName(), builder.getUnitAttr());
    func.setArgAttr(arg, LLVM::LLVMDialect::getNoCaptureAttrName(), builder.getUnitAttr());
    if (arg != 0)
      func.setArgAttr(arg, LLVM::LLVMDialect::getReadonlyAttrName(), builder.getUnitAttr());
  }
  func.addEntryBlock();
  KernelBody(func, fused, groupCount, vectorBlocks, convertsBF16).build();
  return func;
}
