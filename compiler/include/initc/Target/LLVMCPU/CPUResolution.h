// CPU resolution: target-cpu strings ("native", CPU+FEATURE), their architecture, their
// extensions and vector loops.
//
// What a kernel variant needs from the CPU that runs it; recorded in program.json.
#pragma once

#include "initc/Target/LLVMCPU/TargetArchitecture.h"
#include "initc/Target/LLVMCPU/TargetOptions.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace initc::target {

/// The CPU name the kernels are compiled for: `options.cpu`, with "native" resolved to the host
/// CPU. Recorded in program.json as `targetCpu`.
std::string resolveTargetCpu(const TargetOptions &options);

/// The instruction-set extensions (initrt::detectableCpuExtensions(), LLVM's names) that code
/// compiled for `cpu` ("native" allowed) with `options.features` may use; prog/init runs it only
/// on a CPU with all of them. Extensions the runtime cannot detect are turned off in such code.
std::optional<std::vector<std::string>> cpuExtensions(llvm::StringRef cpu,
                                                      const TargetOptions &options,
                                                      std::string &error);

/// The default vector loop of code for `cpu` ("native" allowed), as a target's ":GROUPSxBLOCKS"
/// suffix: its architecture's choice for the extensions it has. Fails with a message for a CPU
/// LLVM does not know.
std::optional<std::string> defaultVectorLoop(llvm::StringRef cpu, const TargetOptions &options,
                                             std::string &error);

/// Whether code for `cpu` rounds f32 samples to bf16 by its architecture's conversion
/// instructions (x86's avx512bf16) where the kernels allow it.
std::optional<bool> convertsBF16(llvm::StringRef cpu, const TargetOptions &options,
                                 std::string &error);

/// Whether `cpu` is CPU+EXTENSION with its architecture's bf16 conversion extension
/// (x86-64-v4+avx512bf16): a variant that differs from the CPU's own only where kernels convert.
bool addsBF16Conversion(llvm::StringRef cpu);

/// The architecture the kernels are compiled for: that of `options.cpu`.
const TargetArchitecture *targetArchitecture(const TargetOptions &options, std::string &error);

} // namespace initc::target
