//===- ResolvedTarget.h - the CPUs kernels are compiled for ------*- C++ -*-===//
//
// Private to Target/LLVMCPU: a target machine and the kernels' own CPUs, resolved and checked.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "initc/Target/LLVMCPU/TargetArchitecture.h"
#include "initc/Target/LLVMCPU/TargetOptions.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace initc::target {

/// A CPU and feature string a function is compiled for, and the extensions they let it use.
struct CpuTarget {
  std::string cpu;
  std::string features;
  std::vector<std::string> extensions; // initrt::detectableCpuExtensions(machine) it has
};

struct ResolvedTarget {
  const TargetArchitecture *architecture = nullptr;
  std::string triple;
  const llvm::Target *llvmTarget = nullptr;
  std::string cpu;
  std::string features;
  std::unique_ptr<llvm::TargetMachine> machine;
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget; // to resolve the kernels' own CPUs
};

/// `cpu` (as the user wrote it, "native" allowed) resolved and checked against `target`.
std::optional<CpuTarget> resolveCpu(llvm::StringRef cpu, const TargetOptions &options,
                                    const ResolvedTarget &target, std::string &error);

/// The target machine for `options.cpu`, on its architecture's triple; registers that
/// architecture's code generator hooks.
std::optional<ResolvedTarget> createTargetMachine(const TargetOptions &options,
                                                  std::string &error);

} // namespace initc::target
