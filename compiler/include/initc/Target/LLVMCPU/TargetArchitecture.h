// One CPU architecture the kernels can be compiled for: its triple, its CPU names, the default
// variants, and what it adds to LLVM's pipelines. X86/ and AArch64/ each implement it behind one
// entry point; CPUResolution picks the architecture a --target-cpu name belongs to.
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/PassManager.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class MCSubtargetInfo;
class Target;
class TargetMachine;
class TargetPassConfig;
namespace legacy {
class PassManager;
} // namespace legacy
} // namespace llvm

namespace initc::target {

class TargetArchitecture {
public:
  virtual ~TargetArchitecture() = default;

  /// As messages and the README name it: "x86-64", "AArch64".
  virtual llvm::StringRef name() const = 0;
  /// The LLVM triple of its kernels (Linux, the ELF shared object prog/init loads).
  virtual std::string triple() const = 0;
  /// Its ELF machine (e_machine): the runtime's CPU tables for it (initrt/base/cpu.h) say which
  /// extensions a variant may use.
  virtual uint16_t elfMachine() const = 0;
  /// The CPU names a message suggests, most portable first ("x86-64, x86-64-v3, ...").
  virtual llvm::StringRef suggestedCpus() const = 0;
  /// A --target-cpu list for this architecture, best first: what a program for it holds by
  /// default.
  virtual llvm::StringRef defaultCpus() const = 0;
  /// C compiler drivers that link its shared objects, tried in order on PATH when --linker is
  /// not given; `native` is whether this is the architecture of the compiling machine.
  virtual std::vector<std::string> linkerNames(bool native) const = 0;

  /// Registers LLVM's code generator for it; safe to call more than once.
  virtual void initializeLLVM() const = 0;
  /// The LLVM CPU name of a --target-cpu name (an alias such as "aarch64" for "generic").
  virtual std::string llvmCpuName(llvm::StringRef name) const { return name.str(); }
  /// Checks and completes `features` for `cpu` (LLVM's name) once the user's extensions are
  /// added; `written` is the CPU as the user wrote it, for messages.
  virtual bool completeFeatures(llvm::StringRef written, llvm::StringRef cpu,
                                std::string &features, const llvm::Target &target,
                                std::string &error) const {
    return true;
  }

  /// The extension whose instructions round f32 samples to bf16 (x86's avx512bf16), or "" when
  /// no variant of this architecture uses one: the kernels then round in integer ops.
  virtual llvm::StringRef bf16ConversionExtension() const = 0;
  /// The default vector loop of code that may use `extensions`, as a target's ":GROUPSxBLOCKS"
  /// suffix (init-partition's targets option).
  virtual std::string defaultVectorLoop(llvm::ArrayRef<std::string> extensions) const = 0;

  /// What it adds to LLVM's pipelines: a machine scheduler (once per process), IR passes after
  /// the optimizer's last InstCombine, machine passes inserted into `config` before it is added,
  /// and machine passes after the target's own.
  virtual void registerCodeGenHooks() const {}
  virtual void addIRPasses(llvm::ModulePassManager &passes, llvm::TargetMachine &machine) const {}
  virtual void addMachinePasses(llvm::TargetMachine &machine,
                                llvm::TargetPassConfig &config) const {}
  virtual void addLateMachinePasses(llvm::TargetMachine &machine,
                                    llvm::legacy::PassManager &passes) const {}
};

/// Every architecture the kernels can be compiled for, x86-64 first.
llvm::ArrayRef<const TargetArchitecture *> targetArchitectures();

/// The architecture of the machine this compiler runs on, if it is one of them.
const TargetArchitecture *hostArchitecture();

/// The architecture `cpu` belongs to: a --target-cpu entry, with "native" (the host) and
/// CPU+EXTENSION allowed, "" for the default list's. Fails with a message listing every
/// architecture's CPU names when none knows it.
const TargetArchitecture *architectureOfCpu(llvm::StringRef cpu, std::string &error);

} // namespace initc::target
