// The machine scheduler kernels are compiled with: LLVM's, top-down for AVX2 code. See
// ir-spec/lowering.md.
#pragma once

namespace llvm {
class MCSubtargetInfo;
} // namespace llvm

namespace initc::target {

/// Whether the kernel scheduler schedules code for `subtarget` top-down: AVX2 without AVX-512.
/// Everything else gets the target's own scheduler.
bool schedulesTopDown(const llvm::MCSubtargetInfo &subtarget);

/// Makes LLVM's code generator schedule instructions with the kernel scheduler, for the whole
/// process (LLVM chooses the scheduler through a global option). Thread-safe; call before code
/// generation. Returns whether LLVM took it: scheduling never changes a kernel's values, so
/// without it kernels are only slower.
bool useKernelScheduler();

} // namespace initc::target
