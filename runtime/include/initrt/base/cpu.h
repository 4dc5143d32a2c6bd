// The x86 instruction-set extensions a kernel variant may use, and which of them this CPU has.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace initrt {

/// The extensions, by their LLVM names, that kernels may be compiled to use and that the
/// runtime can detect where it runs (through cpuid and the OS's saved register state). The
/// compiler records, for each kernel variant, those its CPU and features enable, and keeps the
/// kernels off any it cannot record (see undetectableCpuExtensions).
const std::vector<std::string_view> &detectableCpuExtensions();

/// Extensions LLVM could use in plain vector or scalar code that the runtime cannot detect; the
/// compiler disables them in every variant, so a variant never needs what is not checked.
const std::vector<std::string_view> &undetectableCpuExtensions();

/// Whether this CPU and OS support `extension`; false for a name that is not detectable and
/// for every name on a CPU that is not x86.
bool cpuHasExtension(std::string_view extension);

/// The names in `extensions` this CPU lacks, in order.
std::vector<std::string> missingCpuExtensions(const std::vector<std::string> &extensions);

} // namespace initrt
