// AArch64 as a target of the kernels (Neoverse, Grace, Graviton hosts): the one header of
// AArch64/ that the rest of Target/LLVMCPU includes.
#pragma once

#include "initc/Target/LLVMCPU/TargetArchitecture.h"

namespace initc::target::aarch64 {

const TargetArchitecture &architecture();

} // namespace initc::target::aarch64
