//===- CPUResolution.cpp - target-cpu strings, features, variants ===//
#include "initc/Target/LLVMCPU/CPUResolution.h"
#include "ResolvedTarget.h"
#include "initc/Target/LLVMCPU/X86/X86Passes.h"
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
void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

bool isKnownFeature(const llvm::MCSubtargetInfo &subtarget, llvm::StringRef name) {
  return llvm::any_of(subtarget.getAllProcessorFeatures(),
                      [&](const llvm::SubtargetFeatureKV &kv) { return name == kv.Key; });
}

/// The feature string for code compiled for `cpu` (as the user wrote it): the host's features
/// for "native", then the user's extra features. Every named feature must exist for the
/// target, or LLVM would only print a warning on stderr and ignore it.
std::optional<std::string> resolveFeatures(llvm::StringRef cpu, const TargetOptions &options,
                                           const llvm::MCSubtargetInfo &subtarget,
                                           std::string &error) {
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
              "' must start with '+' (enable) or '-' (disable), e.g. +avx512f";
      return std::nullopt;
    }
    if (!isKnownFeature(subtarget, feature.drop_front())) {
      error = "unknown target feature '" + feature.drop_front().str() +
              "' (list the valid ones with `llc -march=x86-64 -mattr=help`)";
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
  for (const std::string &name : enabled(initrt::undetectableCpuExtensions()))
    resolved.features += (resolved.features.empty() ? "-" : ",-") + name;
  resolved.extensions = enabled(initrt::detectableCpuExtensions());
}
} // namespace

std::optional<CpuTarget> resolveCpu(llvm::StringRef cpu, const TargetOptions &options,
                                    const ResolvedTarget &target, std::string &error) {
  // CPU+FEATURE+...: a CPU with extensions of its own (x86-64-v4+avx512bf16).
  auto [name, extra] = cpu.split('+');
  CpuTarget resolved;
  resolved.cpu = name == "native" ? llvm::sys::getHostCPUName().str() : name.str();
  if (!target.subtarget->isCPUStringValid(resolved.cpu)) {
    error = "unknown target CPU '" + resolved.cpu +
            "' (use x86-64-v3, x86-64-v4, native, or a name from `llc -mcpu=help`)";
    return std::nullopt;
  }
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
  std::optional<std::string> features =
      resolveFeatures(name, withExtra, *target.subtarget, error);
  if (!features)
    return std::nullopt;
  resolved.features = *features;
  // The kernels are 64-bit code: a 32-bit CPU (i686, pentium4, ...) would abort LLVM.
  if (target.triple.find("x86_64") == 0) {
    std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
        target.llvmTarget->createMCSubtargetInfo(target.triple, resolved.cpu, resolved.features));
    if (!subtarget->checkFeatures("+64bit")) {
      error = "target CPU '" + resolved.cpu +
              "' runs only 32-bit code, and the kernels are x86-64 code: use x86-64, "
              "x86-64-v3, x86-64-v4, native or a 64-bit CPU name";
      return std::nullopt;
    }
    // AVX-512 added to a CPU without it (x86-64-v3+avx512f) comes without LLVM's evex512 (the
    // code generator adds it only to generic CPUs), so 512-bit vectors would be illegal in the
    // kernels' AVX-512 loop: add it, as clang's -mavx512f does.
    if (subtarget->checkFeatures("+avx512f")) {
      llvm::StringRef features(resolved.features);
      if (features.contains("-evex512")) {
        error = "target CPU '" + cpu.str() +
                "' has AVX-512 without 512-bit vectors (-evex512), which the kernels' AVX-512 "
                "loop needs: drop -evex512, or compile for x86-64-v3";
        return std::nullopt;
      }
      std::unique_ptr<llvm::MCSubtargetInfo> plain(
          target.llvmTarget->createMCSubtargetInfo(target.triple, resolved.cpu, ""));
      if (!plain->checkFeatures("+avx512f") && !features.contains("+evex512"))
        resolved.features += ",+evex512";
    }
  }
  settleExtensions(resolved, target);
  return resolved;
}

std::optional<ResolvedTarget> createTargetMachine(const TargetOptions &options,
                                                  std::string &error) {
  initializeNativeTarget();
  x86::registerX86Scheduler();
  if (options.optLevel > 3) {
    error = "optimization level " + std::to_string(options.optLevel) + " is out of range 0..3";
    return std::nullopt;
  }
  ResolvedTarget target;
  // Kernels run where they are compiled or on a cluster of the same architecture: the host's
  // triple, with a deliberately chosen CPU.
  target.triple = llvm::sys::getProcessTriple();
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

std::optional<std::vector<std::string>> cpuExtensions(llvm::StringRef cpu,
                                                      const TargetOptions &options,
                                                      std::string &error) {
  std::optional<ResolvedTarget> target = createTargetMachine(options, error);
  if (!target)
    return std::nullopt;
  std::optional<CpuTarget> resolved = resolveCpu(cpu, options, *target, error);
  if (!resolved)
    return std::nullopt;
  return resolved->extensions;
}

std::optional<unsigned> vectorRegisters(llvm::StringRef cpu, const TargetOptions &options,
                                        std::string &error) {
  std::optional<std::vector<std::string>> extensions = cpuExtensions(cpu, options, error);
  if (!extensions)
    return std::nullopt;
  // AVX-512 has 32 vector registers; AVX and SSE on x86-64 have 16.
  return llvm::is_contained(*extensions, "avx512f") ? 32u : 16u;
}

} // namespace initc::target
