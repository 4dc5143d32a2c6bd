//===- HighWordsByShuffle.cpp - i64 >> 32 as a word shuffle ---------------===//
//
// The Philox rounds keep each 32-bit word in the low half of an i64 lane and take the high word
// of a 32x32 -> 64-bit product with `>> 32`, whose high half nothing reads (compiler/lib/Random):
// two shifts a round per vector of blocks. A Zen 5 shifts vectors on two of its four vector
// pipes, which the float adds and f16 conversions also take; a word shuffle moving each high word
// down runs on any of the four.
//
//===----------------------------------------------------------------------===//
#include "initc/Target/LLVMCPU/X86/HighWordsByShuffle.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/DemandedBits.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PatternMatch.h"

using namespace llvm;

namespace initc::target {

namespace {

/// Whether `inst` is `lshr <N x i64> %x, splat(32)`.
bool isHighWordShift(Instruction &inst) {
  using namespace PatternMatch;
  auto *type = dyn_cast<FixedVectorType>(inst.getType());
  return type && type->getElementType()->isIntegerTy(64) &&
         match(&inst, m_LShr(m_Value(), m_SpecificInt(32)));
}

} // namespace

Value *highWordsByShuffle(IRBuilderBase &b, Value *x, const Twine &name) {
  auto *type = cast<FixedVectorType>(x->getType());
  unsigned lanes = type->getNumElements();
  // The high word into both words of its lane: one `vpshufd`, and no word left undefined.
  SmallVector<int> highWords;
  for (unsigned k = 0; k < lanes; ++k)
    highWords.append({int(2 * k + 1), int(2 * k + 1)});
  auto *words = FixedVectorType::get(b.getInt32Ty(), 2 * lanes);
  Value *moved = b.CreateShuffleVector(b.CreateBitCast(x, words), highWords);
  return b.CreateBitCast(moved, type, name);
}

PreservedAnalyses HighWordsByShufflePass::run(Function &function,
                                              FunctionAnalysisManager &analyses) {
  // The high half of an i64 is the odd i32 word only on little-endian targets.
  if (!function.getParent()->getDataLayout().isLittleEndian())
    return PreservedAnalyses::all();
  DemandedBits &demanded = analyses.getResult<DemandedBitsAnalysis>(function);
  SmallVector<Instruction *> shifts;
  for (Instruction &inst : instructions(function))
    if (isHighWordShift(inst) && demanded.getDemandedBits(&inst).getActiveBits() <= 32)
      shifts.push_back(&inst);
  // Each rewrite keeps the bits its users read, so every value computed from it keeps the bits
  // its own users read: the rewrites may be made together.
  for (Instruction *shift : shifts) {
    IRBuilder<> b(shift);
    shift->replaceAllUsesWith(highWordsByShuffle(b, shift->getOperand(0), shift->getName()));
    shift->eraseFromParent();
  }
  if (shifts.empty())
    return PreservedAnalyses::all();
  PreservedAnalyses kept;
  kept.preserveSet<CFGAnalyses>();
  return kept;
}

} // namespace initc::target
