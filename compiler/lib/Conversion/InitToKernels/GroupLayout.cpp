//===- GroupLayout.cpp - how a group of blocks reaches element order ---===//
#include "GroupLayout.h"

namespace initc::slice_kernel {

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

} // namespace initc::slice_kernel
