// The instruction-set extensions a kernel variant may use (x86-64's, AArch64's), and which of them
// this CPU has; which architecture a kernels.so is for, and this machine's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace initrt {

/// The ELF machine (e_machine) of the code this runtime runs: EM_X86_64, EM_AARCH64, ...
uint16_t hostElfMachine();

/// The extensions, by their LLVM names, that kernels for the architecture `machine` (an ELF
/// machine: EM_X86_64, EM_AARCH64) may be compiled to use and that the runtime can detect where
/// it runs (x86: cpuid and the OS's saved register state; AArch64: the kernel's HWCAP bits). The
/// compiler records, for each kernel variant, those its CPU and features enable, and keeps the
/// kernels off any it cannot record (see undetectableCpuExtensions). Empty for other machines.
const std::vector<std::string_view> &detectableCpuExtensions(uint16_t machine = hostElfMachine());

/// Extensions LLVM could use in plain vector or scalar code for `machine` that the runtime
/// cannot detect; the compiler disables them in every variant, so a variant never needs what is
/// not checked.
const std::vector<std::string_view> &undetectableCpuExtensions(uint16_t machine = hostElfMachine());

/// Whether this CPU and OS support `extension`; false for a name that is not detectable here.
bool cpuHasExtension(std::string_view extension);

/// The names in `extensions` this CPU lacks, in order.
std::vector<std::string> missingCpuExtensions(const std::vector<std::string> &extensions);

/// This CPU as messages name it: its brand string ("AMD EPYC 9B14 96-Core Processor"), else
/// /proc/cpuinfo's model name, else its architecture.
std::string cpuDescription();

/// An architecture's name by its ELF machine: "x86-64", "AArch64", ...; "ELF machine N" for one
/// not known here.
std::string elfMachineName(uint16_t machine);

/// The architecture that `header` (a file's first `size` bytes) says an ELF file is for, when
/// that is not `host` (or is 32-bit code for a 64-bit host): its name. Empty when it is `host`'s,
/// and for what is not ELF at all (a damaged file, which its checksum then names).
std::string foreignElfArchitecture(const unsigned char *header, size_t size,
                                   uint16_t host = hostElfMachine());

} // namespace initrt
