// The machine scheduler kernels are compiled with: LLVM's, top-down for AVX2 code and for
// AVX-512 code with long float chains or paired bf16 conversions. See ir-spec/lowering.md.
#pragma once

namespace llvm {
class Function;
class MCSubtargetInfo;
} // namespace llvm

namespace initc::target {

/// The most float operations (add, subtract, multiply, divide, negate, sqrt) in one chain of
/// dependent instructions within a basic block of `function`.
unsigned longestFloatChain(const llvm::Function &function);

/// Whether `function` converts f32 to bf16 in pairs of vectors (vcvtne2ps2bf16,
/// PairBF16Conversions.cpp).
bool pairsBF16Conversions(const llvm::Function &function);

/// Whether the kernel scheduler schedules `kernel`, compiled for `subtarget`, top-down: with
/// AVX2 and no AVX-512 always (keeping the order instruction selection gave), with AVX-512 where its longest float chain is long (a latency-
/// bound polynomial) or it pairs bf16 conversions. Everything else gets the target's own
/// scheduler.
bool schedulesTopDown(const llvm::MCSubtargetInfo &subtarget, const llvm::Function &kernel);

/// Makes LLVM's code generator schedule instructions with the kernel scheduler, for the whole
/// process (LLVM chooses the scheduler through a global option). Thread-safe; call before code
/// generation. Returns whether LLVM took it: scheduling never changes a kernel's values, so
/// without it kernels are only slower.
bool useKernelScheduler();

} // namespace initc::target
