// Vector constants as full-width loads: splats, so that AVX2 code can take them as memory
// operands, and extended constants, so that loading one takes no shuffle uop. See
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

/// A machine pass, run last before the assembly printer, that turns AVX-512 sign- and
/// zero-extending loads of a constant-pool vector (x86's `vpmovsx`/`vpmovzx`, which its
/// constant fixup made of full-width loads) back into loads of the extended vector. Values
/// never change.
llvm::MachineFunctionPass *createWideExtensionLoadsPass();

} // namespace initc::target
