// An LLVM IR pass run last in the optimization pipeline: f32 -> bf16 conversions of 32 lanes
// become AVX512-BF16's two-source conversion. See ir-spec/lowering.md.
#pragma once

#include "llvm/IR/PassManager.h"
#include "llvm/Target/TargetMachine.h"

namespace initc::target {

/// In functions whose subtarget has AVX512-BF16, rewrites each `fptrunc <32 x float> %x to
/// <32 x bfloat>` as `llvm.x86.avx512bf16.cvtne2ps2bf16.512` of `%x`'s halves (one
/// `vcvtne2ps2bf16`, where the backend emits two `vcvtneps2bf16` and an insert). When `%x` is a
/// shuffle of two 16-lane vectors (the kernels' pairing of two lanes of blocks, which
/// InstCombine moves ahead of the conversion), the vectors are converted and the shuffle
/// follows, one word permute. Each element is converted as before, so the values are the same.
struct PairBF16ConversionsPass : llvm::PassInfoMixin<PairBF16ConversionsPass> {
  explicit PairBF16ConversionsPass(const llvm::TargetMachine &machine) : machine(&machine) {}
  llvm::PreservedAnalyses run(llvm::Function &function, llvm::FunctionAnalysisManager &);
  const llvm::TargetMachine *machine;
};

} // namespace initc::target
