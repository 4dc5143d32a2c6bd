//===- CPUResolution.cpp - target-cpu strings, features, variants ===//
#include "initc/Target/LLVMCPU/CPUResolution.h"
#include "ResolvedTarget.h"
#include "initc/Target/LLVMCPU/TargetArchitecture.h"
#include "initrt/base/cpu.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/CodeGen/MachineFunctionPass.h"
#include "llvm/CodeGen/MachineModuleInfo.h"
#include "llvm/CodeGen/Passes.h"
#include "llvm/CodeGen/TargetPassConfig.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Operator.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>

using namespace mlir;

namespace initc::target {

namespace {
bool isKnownFeature(const llvm::MCSubtargetInfo &subtarget, llvm::StringRef name) {
  return llvm::any_of(subtarget.getAllProcessorFeatures(),
                      [&](const llvm::SubtargetFeatureKV &kv) { return name == kv.Key; });
}

/// The feature string for code compiled for `cpu` (as the user wrote it): the host's features
/// for "native", then the user's extra features. Every named feature must exist for the
/// target, or LLVM would only print a warning on stderr and ignore it.
std::optional<std::string> resolveFeatures(llvm::StringRef cpu, const TargetOptions &options,
                                           const ResolvedTarget &target, std::string &error) {
  const llvm::MCSubtargetInfo &subtarget = *target.subtarget;
  llvm::SmallVector<std::string> features;
  if (cpu == "native")
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features.push_back((feature.second ? "+" : "-") + feature.first().str());
  llvm::SmallVector<llvm::StringRef> extra;
  llvm::StringRef(options.features).split(extra, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef feature : extra) {
    feature = feature.trim();
    if (feature.empty())
      continue;
    if (feature[0] != '+' && feature[0] != '-') {
      error = "target feature '" + feature.str() +
              "' must start with '+' (enable) or '-' (disable), e.g. +" +
              (target.architecture->bf16ConversionExtension().empty()
                   ? std::string("sve2")
                   : "avx512f");
      return std::nullopt;
    }
    if (!isKnownFeature(subtarget, feature.drop_front())) {
      error = "unknown target feature '" + feature.drop_front().str() +
              "' (list the valid ones with `llc -march=" + target.llvmTarget->getName() +
              " -mattr=help`)";
      return std::nullopt;
    }
    features.push_back(feature.str());
  }
  return llvm::join(features, ",");
}

/// Turns off, in `resolved`, the extensions its CPU has that the runtime cannot detect (so a
/// variant never needs what prog/init does not check), then lists the detectable ones it uses.
void settleExtensions(CpuTarget &resolved, const ResolvedTarget &target) {
  auto enabled = [&](const std::vector<std::string_view> &names) {
    std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
        target.llvmTarget->createMCSubtargetInfo(target.triple, resolved.cpu, resolved.features));
    std::vector<std::string> found;
    for (std::string_view name : names)
      if (isKnownFeature(*subtarget, llvm::StringRef(name.data(), name.size())) &&
          subtarget->checkFeatures("+" + std::string(name)))
        found.emplace_back(name);
    return found;
  };
  uint16_t machine = target.architecture->elfMachine();
  for (const std::string &name : enabled(initrt::undetectableCpuExtensions(machine)))
    resolved.features += (resolved.features.empty() ? "-" : ",-") + name;
  resolved.extensions = enabled(initrt::detectableCpuExtensions(machine));
}
} // namespace

std::optional<CpuTarget> resolveCpu(llvm::StringRef cpu, const TargetOptions &options,
                                    const ResolvedTarget &target, std::string &error) {
  // CPU+FEATURE+...: a CPU with extensions of its own (x86-64-v4+avx512bf16).
  auto [name, extra] = cpu.split('+');
  const TargetArchitecture *architecture = architectureOfCpu(name, error);
  if (!architecture)
    return std::nullopt;
  if (architecture != target.architecture) {
    error = "target CPU '" + name.str() + "' is an " + architecture->name().str() +
            " CPU, and the program's other kernels are for " + target.architecture->name().str() +
            " (" + target.cpu + "): a program runs on one architecture; compile one program for "
            "each";
    return std::nullopt;
  }
  CpuTarget resolved;
  resolved.cpu = name == "native" ? llvm::sys::getHostCPUName().str()
                                  : architecture->llvmCpuName(name);
  TargetOptions withExtra = options;
  if (cpu.contains('+')) {
    llvm::SmallVector<llvm::StringRef> added;
    extra.split(added, '+');
    for (llvm::StringRef feature : added) {
      if (feature.empty() || feature[0] == '-') {
        error = "target CPU '" + cpu.str() +
                "' names no extension after a '+': write CPU+EXTENSION, e.g. "
                "x86-64-v4+avx512bf16";
        return std::nullopt;
      }
      withExtra.features += (withExtra.features.empty() ? "+" : ",+") + feature.str();
    }
  }
  std::optional<std::string> features = resolveFeatures(name, withExtra, target, error);
  if (!features)
    return std::nullopt;
  resolved.features = *features;
  if (!architecture->completeFeatures(cpu, resolved.cpu, resolved.features, *target.llvmTarget,
                                      error))
    return std::nullopt;
  settleExtensions(resolved, target);
  return resolved;
}

std::optional<ResolvedTarget> createTargetMachine(const TargetOptions &options,
                                                  std::string &error) {
  if (options.optLevel > 3) {
    error = "optimization level " + std::to_string(options.optLevel) + " is out of range 0..3";
    return std::nullopt;
  }
  ResolvedTarget target;
  // The architecture of the target machine's own CPU (the most portable variant's): every
  // kernel CPU must be one of its.
  target.architecture = architectureOfCpu(options.cpu, error);
  if (!target.architecture)
    return std::nullopt;
  target.architecture->registerCodeGenHooks();
  target.triple = target.architecture->triple();
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!llvmTarget) {
    error = "no LLVM code generator for '" + target.triple + "': " + error;
    return std::nullopt;
  }
  target.llvmTarget = llvmTarget;
  target.subtarget.reset(llvmTarget->createMCSubtargetInfo(target.triple, "", ""));
  if (!target.subtarget) {
    error = "no LLVM subtarget information for '" + target.triple + "'";
    return std::nullopt;
  }
  target.cpu = target.architecture->llvmCpuName(llvm::StringRef(options.cpu).split('+').first);
  std::optional<CpuTarget> cpu = resolveCpu(options.cpu, options, target, error);
  if (!cpu)
    return std::nullopt;
  target.cpu = cpu->cpu;
  target.features = cpu->features;

  llvm::TargetOptions targetOptions;
  // Bits must not depend on the CPU or the vector width: never fuse a*b+c into an FMA, never
  // relax IEEE semantics.
  targetOptions.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  targetOptions.UnsafeFPMath = false;
  targetOptions.NoInfsFPMath = false;
  targetOptions.NoNaNsFPMath = false;
  targetOptions.NoSignedZerosFPMath = false;
  targetOptions.ApproxFuncFPMath = false;
  static const llvm::CodeGenOptLevel levels[] = {
      llvm::CodeGenOptLevel::None, llvm::CodeGenOptLevel::Less,
      llvm::CodeGenOptLevel::Default, llvm::CodeGenOptLevel::Aggressive};
  target.machine.reset(llvmTarget->createTargetMachine(
      target.triple, target.cpu, target.features, targetOptions, llvm::Reloc::PIC_,
      llvm::CodeModel::Small, levels[options.optLevel]));
  if (!target.machine) {
    error = "could not create an LLVM target machine for '" + target.triple + "', CPU '" +
            target.cpu + "'";
    return std::nullopt;
  }
  return target;
}

std::string resolveTargetCpu(const TargetOptions &options) {
  auto [name, extra] = llvm::StringRef(options.cpu).split('+');
  if (name == "native")
    return llvm::sys::getHostCPUName().str() + (extra.empty() ? "" : "+" + extra.str());
  return options.cpu;
}

namespace {
/// `cpu` resolved for the target machine of `options`, and that machine's architecture.
struct CpuOnTarget {
  const TargetArchitecture *architecture;
  CpuTarget cpu;
};

std::optional<CpuOnTarget> resolveOnTarget(llvm::StringRef cpu, const TargetOptions &options,
                                           std::string &error) {
  std::optional<ResolvedTarget> target = createTargetMachine(options, error);
  if (!target)
    return std::nullopt;
  std::optional<CpuTarget> resolved = resolveCpu(cpu, options, *target, error);
  if (!resolved)
    return std::nullopt;
  return CpuOnTarget{target->architecture, std::move(*resolved)};
}
} // namespace

std::optional<std::vector<std::string>> cpuExtensions(llvm::StringRef cpu,
                                                      const TargetOptions &options,
                                                      std::string &error) {
  std::optional<CpuOnTarget> resolved = resolveOnTarget(cpu, options, error);
  if (!resolved)
    return std::nullopt;
  return resolved->cpu.extensions;
}

std::optional<std::string> defaultVectorLoop(llvm::StringRef cpu, const TargetOptions &options,
                                             std::string &error) {
  std::optional<CpuOnTarget> resolved = resolveOnTarget(cpu, options, error);
  if (!resolved)
    return std::nullopt;
  return resolved->architecture->defaultVectorLoop(resolved->cpu.extensions);
}

std::optional<bool> convertsBF16(llvm::StringRef cpu, const TargetOptions &options,
                                 std::string &error) {
  std::optional<CpuOnTarget> resolved = resolveOnTarget(cpu, options, error);
  if (!resolved)
    return std::nullopt;
  llvm::StringRef extension = resolved->architecture->bf16ConversionExtension();
  return !extension.empty() && llvm::is_contained(resolved->cpu.extensions, extension);
}

bool addsBF16Conversion(llvm::StringRef cpu) {
  std::string error;
  const TargetArchitecture *architecture = architectureOfCpu(cpu, error);
  if (!architecture || architecture->bf16ConversionExtension().empty())
    return false;
  return cpu.ends_with("+" + architecture->bf16ConversionExtension().str());
}

const TargetArchitecture *targetArchitecture(const TargetOptions &options, std::string &error) {
  return architectureOfCpu(options.cpu, error);
}

} // namespace initc::target
