//===- UnitFloatByConversion.cpp - scaled unit floats by one conversion ---===//
//
// Uniform and truncated normal samples start from `width * U(x)`, U built from the word's high
// 23 bits as the mantissa of a float in [1, 2) minus (1 - 2^-24) (compiler/lib/Random): a
// shift, an or and a subtraction before the multiply. With AVX-512's unsigned conversion the
// same product is a logic op, a conversion and the multiply by a rescaled constant.
//
//===----------------------------------------------------------------------===//
#include "initc/Target/LLVMCPU/X86/UnitFloatByConversion.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/CodeGen/TargetSubtargetInfo.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/PatternMatch.h"
#include "llvm/Transforms/Utils/Local.h"

#include <optional>

using namespace llvm;
using namespace llvm::PatternMatch;

namespace initc::target {

namespace {

/// The word `x` if `inst` is `U(x)`: bitcast((x >> 9) | 0x3f800000) - (1 - 2^-24), the
/// subtraction as InstCombine leaves it (an add of the negated constant) or as built.
Value *unitFloatWord(Instruction &inst) {
  if (!inst.getType()->getScalarType()->isFloatTy())
    return nullptr;
  const float offset = 1.0f - 0x1p-24f;
  Value *bits = nullptr, *word = nullptr;
  if (!match(&inst, m_FAdd(m_Value(bits), m_SpecificFP(-offset))) &&
      !match(&inst, m_FSub(m_Value(bits), m_SpecificFP(offset))))
    return nullptr;
  if (!match(bits,
             m_BitCast(m_Or(m_LShr(m_Value(word), m_SpecificInt(9)), m_SpecificInt(0x3f800000)))))
    return nullptr;
  return word->getType()->getScalarType()->isIntegerTy(32) ? word : nullptr;
}

/// `c * 2^-32` if `multiply` is `c * unit` (either order) with `c` a constant for which that
/// scaling is exact: finite or infinite, and not losing bits to underflow.
std::optional<APFloat> rescaledFactor(User *multiply, Value *unit) {
  const APFloat *factor = nullptr;
  if (!match(multiply, m_c_FMul(m_Specific(unit), m_APFloat(factor))) || factor->isNaN())
    return std::nullopt;
  APFloat rescaled = scalbn(*factor, -32, APFloat::rmNearestTiesToEven);
  if (!scalbn(rescaled, 32, APFloat::rmNearestTiesToEven).bitwiseIsEqual(*factor))
    return std::nullopt;
  return rescaled;
}

} // namespace

PreservedAnalyses UnitFloatByConversionPass::run(Function &function, FunctionAnalysisManager &) {
  if (!machine->getSubtargetImpl(function)->checkFeatures("+avx512f"))
    return PreservedAnalyses::all();
  // Only unit floats whose every use is a multiply by such a constant: otherwise the shift and
  // the subtraction would stay, and the conversion be added to them.
  SmallVector<std::pair<Instruction *, Value *>> units;
  for (Instruction &inst : instructions(function))
    if (Value *word = unitFloatWord(inst);
        word && !inst.use_empty() &&
        all_of(inst.users(), [&](User *user) { return rescaledFactor(user, &inst).has_value(); }))
      units.emplace_back(&inst, word);
  for (auto [unit, word] : units) {
    IRBuilder<> b(unit);
    Type *wordType = word->getType();
    // (x & 0xfffffe00) | 0x100 = (2 (x >> 9) + 1) * 2^8.
    Value *odd = b.CreateOr(b.CreateAnd(word, ConstantInt::get(wordType, 0xfffffe00u)),
                            ConstantInt::get(wordType, 0x100u));
    Value *scaled = b.CreateUIToFP(odd, unit->getType(), unit->getName() + ".scaled");
    for (User *user : make_early_inc_range(unit->users())) {
      auto *multiply = cast<Instruction>(user);
      Constant *factor = ConstantFP::get(unit->getType(), *rescaledFactor(multiply, unit));
      b.SetInsertPoint(multiply);
      Value *product = b.CreateFMul(factor, scaled, multiply->getName());
      multiply->replaceAllUsesWith(product);
      multiply->eraseFromParent();
    }
    RecursivelyDeleteTriviallyDeadInstructions(unit);
  }
  if (units.empty())
    return PreservedAnalyses::all();
  PreservedAnalyses kept;
  kept.preserveSet<CFGAnalyses>();
  return kept;
}

} // namespace initc::target
