// CPU resolution: target-cpu strings ("native", CPU+FEATURE), their extensions and registers.
//
// What a kernel variant needs from the CPU that runs it; recorded in program.json.
#pragma once

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

/// The number of vector registers code for `cpu` ("native" allowed) may use: 32 with AVX-512,
/// else 16. Fails with a message for a CPU LLVM does not know.
std::optional<unsigned> vectorRegisters(llvm::StringRef cpu, const TargetOptions &options,
                                        std::string &error);

} // namespace initc::target
