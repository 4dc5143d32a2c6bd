// x86-64 as a target of the kernels: the one header of X86/ that the rest of Target/LLVMCPU
// includes. Its passes (the IR peepholes, the kernel scheduler, the wide-constant machine passes)
// stay behind it.
#pragma once

#include "initc/Target/LLVMCPU/TargetArchitecture.h"

namespace initc::target::x86 {

const TargetArchitecture &architecture();

} // namespace initc::target::x86
