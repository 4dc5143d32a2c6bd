// Splat constants as full-width loads, so that AVX2 code can take them as memory operands. See
// compiler/lib/Target/WideConstants.cpp.
#pragma once

namespace llvm {
class MachineFunctionPass;
} // namespace llvm

namespace initc::target {

/// A machine pass, run after instruction selection and before register allocation, that turns
/// AVX/AVX2 broadcast loads of a constant-pool scalar into loads of the full-width splat, which
/// the register allocator can fold into their users. Values never change: both load the same
/// vector.
llvm::MachineFunctionPass *createWideConstantsPass();

} // namespace initc::target
