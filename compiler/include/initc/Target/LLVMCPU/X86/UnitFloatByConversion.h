// An LLVM IR pass run last in the optimization pipeline: a unit float (rng.md rule 3) scaled by a
// constant becomes one integer conversion and the multiply. See ir-spec/lowering.md.
#pragma once

#include "llvm/IR/PassManager.h"
#include "llvm/Target/TargetMachine.h"

namespace initc::target {

/// In functions whose subtarget has AVX-512 (an unsigned i32 -> f32 conversion instruction),
/// rewrites each `c * U(x)` with `U(x) = bitcast((x >> 9) | 0x3f800000) - (1 - 2^-24)` (as
/// compiler/lib/Random builds it) and `c` a constant, as
///
///   (c * 2^-32) * uitofp((x & 0xfffffe00) | 0x100)
///
/// The integer is `(2 (x >> 9) + 1) * 2^8`, 24 significant bits, so the conversion is exact, and
/// so is `c * 2^-32` where it is rewritten: both products are the same real number, rounded once.
/// A logic op and a conversion take the place of a shift, an or and a subtraction: two of the
/// three ran on the vector pipes that a Zen 5 shares between shifts, float adds and
/// conversions, and the conversion takes one.
struct UnitFloatByConversionPass : llvm::PassInfoMixin<UnitFloatByConversionPass> {
  explicit UnitFloatByConversionPass(const llvm::TargetMachine &machine) : machine(&machine) {}
  llvm::PreservedAnalyses run(llvm::Function &function, llvm::FunctionAnalysisManager &);
  const llvm::TargetMachine *machine;
};

} // namespace initc::target
