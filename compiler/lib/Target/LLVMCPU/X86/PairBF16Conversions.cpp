//===- PairBF16Conversions.cpp - 32 bf16 conversions in one instruction ---===//
//
// bf16 kernels convert four 16-lane vectors of samples per group of blocks and interleave them
// into element order. vcvtne2ps2bf16 converts two vectors into one register in one instruction
// (the backend only knows the one-source vcvtneps2bf16): with the pairing shuffle after it, a
// group costs two conversions and two word permutes, fewer instructions than f32's transpose.
//
//===----------------------------------------------------------------------===//
#include "initc/Target/LLVMCPU/X86/PairBF16Conversions.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/CodeGen/TargetSubtargetInfo.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicsX86.h"

#include <numeric>

using namespace llvm;

namespace initc::target {

namespace {

bool isVectorOf(Type *type, unsigned lanes, bool (Type::*is)() const) {
  auto *vector = dyn_cast<FixedVectorType>(type);
  return vector && vector->getNumElements() == lanes && (vector->getElementType()->*is)();
}

} // namespace

PreservedAnalyses PairBF16ConversionsPass::run(Function &function, FunctionAnalysisManager &) {
  if (!machine->getSubtargetImpl(function)->checkFeatures("+avx512bf16"))
    return PreservedAnalyses::all();
  // A conversion of 16 lanes, to be taken with another.
  auto half = [](Value *value) -> FPTruncInst * {
    auto *trunc = dyn_cast<FPTruncInst>(value);
    return trunc && isVectorOf(trunc->getSrcTy(), 16, &Type::isFloatTy) &&
                   isVectorOf(trunc->getDestTy(), 16, &Type::isBFloatTy)
               ? trunc
               : nullptr;
  };
  SmallVector<Instruction *> pairs;
  for (Instruction &inst : instructions(function)) {
    if (auto *trunc = dyn_cast<FPTruncInst>(&inst);
        trunc && isVectorOf(trunc->getSrcTy(), 32, &Type::isFloatTy) &&
        isVectorOf(trunc->getDestTy(), 32, &Type::isBFloatTy))
      pairs.push_back(trunc); // fptrunc <32 x float>
    else if (auto *shuffle = dyn_cast<ShuffleVectorInst>(&inst);
             shuffle && half(shuffle->getOperand(0)) && half(shuffle->getOperand(1)))
      pairs.push_back(shuffle); // shufflevector (fptrunc <16 x float>), (fptrunc <16 x float>)
  }
  // Operands the rewrites may leave unused; one conversion can feed several shuffles.
  SmallSetVector<Instruction *, 16> maybeDead;
  for (Instruction *pair : pairs) {
    IRBuilder<> b(pair);
    // The 32 floats as two halves, and the order of their conversions in the result.
    Value *low, *high;
    SmallVector<int> order(32);
    std::iota(order.begin(), order.end(), 0);
    auto *shuffle = dyn_cast<ShuffleVectorInst>(pair->getOperand(0));
    if (isa<ShuffleVectorInst>(pair)) {
      shuffle = cast<ShuffleVectorInst>(pair);
      auto *first = half(shuffle->getOperand(0)), *second = half(shuffle->getOperand(1));
      low = first->getOperand(0);
      high = second->getOperand(0);
      order.assign(shuffle->getShuffleMask().begin(), shuffle->getShuffleMask().end());
      maybeDead.insert(first);
      maybeDead.insert(second);
    } else if (shuffle && isVectorOf(shuffle->getOperand(0)->getType(), 16, &Type::isFloatTy)) {
      // InstCombine moves a shuffle of two vectors ahead of their conversion.
      low = shuffle->getOperand(0);
      high = shuffle->getOperand(1);
      order.assign(shuffle->getShuffleMask().begin(), shuffle->getShuffleMask().end());
      maybeDead.insert(shuffle);
    } else {
      SmallVector<int> lowHalf(16), highHalf(16);
      std::iota(lowHalf.begin(), lowHalf.end(), 0);
      std::iota(highHalf.begin(), highHalf.end(), 16);
      low = b.CreateShuffleVector(pair->getOperand(0), lowHalf);
      high = b.CreateShuffleVector(pair->getOperand(0), highHalf);
    }
    // The intrinsic's result holds its second operand's conversion in lanes 0-15.
    Value *converted =
        b.CreateIntrinsic(Intrinsic::x86_avx512bf16_cvtne2ps2bf16_512, {}, {high, low});
    Value *result = b.CreateShuffleVector(converted, order, pair->getName());
    pair->replaceAllUsesWith(result);
    pair->eraseFromParent();
  }
  for (Instruction *inst : maybeDead)
    if (inst->use_empty())
      inst->eraseFromParent();
  if (pairs.empty())
    return PreservedAnalyses::all();
  PreservedAnalyses kept;
  kept.preserveSet<CFGAnalyses>();
  return kept;
}

} // namespace initc::target
