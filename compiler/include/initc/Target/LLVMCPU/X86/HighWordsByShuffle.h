// An LLVM IR pass run last in the optimization pipeline: a vector shift of i64 lanes right by 32
// whose result's high half no user reads becomes a shuffle of i32 words. See ir-spec/lowering.md.
#pragma once

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/PassManager.h"

namespace initc::target {

/// `x` (a vector of i64 lanes) with each lane's high i32 word copied into both of its words: a
/// `shufflevector` between bitcasts (constant-folded when `x` is a constant). On a little-endian
/// target its low words are those of `lshr %x, 32`.
llvm::Value *highWordsByShuffle(llvm::IRBuilderBase &b, llvm::Value *x,
                                const llvm::Twine &name = "");

/// Rewrites each `lshr <N x i64> %x, 32` of a little-endian module with highWordsByShuffle where
/// DemandedBits finds that no user reads the result's high 32 bits. Every bit any user reads is
/// the same. The Philox rounds take the high half of each product so: a Zen 5 shifts vectors on
/// two of its four vector pipes, those of the float adds and the f16 conversions, and shuffles
/// words (`vpshufd`) on all four.
struct HighWordsByShufflePass : llvm::PassInfoMixin<HighWordsByShufflePass> {
  llvm::PreservedAnalyses run(llvm::Function &function, llvm::FunctionAnalysisManager &analyses);
};

} // namespace initc::target
