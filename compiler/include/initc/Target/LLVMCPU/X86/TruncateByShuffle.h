// An LLVM IR pass run last in the optimization pipeline: each vector truncation of i64 lanes to
// i32 becomes a shuffle of the low words. See ir-spec/lowering.md.
#pragma once

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/PassManager.h"

namespace initc::target {

/// `trunc <N x i64> %x to <N x i32>` built as a `shufflevector` of the even i32 words of `%x`'s
/// two halves (the low words on a little-endian target; constant-folded when `x` is a
/// constant). `x` must be a vector of an even number of i64 lanes.
llvm::Value *truncateByShuffle(llvm::IRBuilderBase &b, llvm::Value *x,
                               const llvm::Twine &name = "");

/// Rewrites each `trunc <N x i64> to <N x i32>` (N even, at least 4) of a little-endian module
/// with truncateByShuffle. The value is the same; the x86 backend narrows a truncation spanning
/// two registers with two `vpmovqd` (two uops each) and an insert, the shuffle with one
/// two-source permute (`vpermt2d`). InstCombine turns the shuffle back into the truncation, so
/// the pass runs after it.
struct TruncateByShufflePass : llvm::PassInfoMixin<TruncateByShufflePass> {
  llvm::PreservedAnalyses run(llvm::Function &function, llvm::FunctionAnalysisManager &);
};

} // namespace initc::target
