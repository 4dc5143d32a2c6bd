//===- TargetArchitecture.cpp - the architectures and their CPU names -----===//
#include "initc/Target/LLVMCPU/TargetArchitecture.h"
#include "initc/Target/LLVMCPU/AArch64/AArch64Architecture.h"
#include "initc/Target/LLVMCPU/X86/X86Architecture.h"

#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <memory>
#include <mutex>

namespace initc::target {

llvm::ArrayRef<const TargetArchitecture *> targetArchitectures() {
  static const TargetArchitecture *const all[] = {&x86::architecture(),
                                                  &aarch64::architecture()};
  static std::once_flag once;
  std::call_once(once, [] {
    for (const TargetArchitecture *architecture : all)
      architecture->initializeLLVM();
  });
  return all;
}

const TargetArchitecture *hostArchitecture() {
  llvm::Triple host(llvm::sys::getProcessTriple());
  for (const TargetArchitecture *architecture : targetArchitectures())
    if (llvm::Triple(architecture->triple()).getArch() == host.getArch())
      return architecture;
  return nullptr;
}

namespace {
bool knowsCpu(const TargetArchitecture &architecture, llvm::StringRef cpu) {
  std::string triple = architecture.triple(), error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return false;
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(target->createMCSubtargetInfo(triple, "", ""));
  return subtarget && subtarget->isCPUStringValid(architecture.llvmCpuName(cpu));
}
} // namespace

const TargetArchitecture *architectureOfCpu(llvm::StringRef cpu, std::string &error) {
  llvm::StringRef name = cpu.split('+').first;
  if (name == "native") {
    if (const TargetArchitecture *host = hostArchitecture())
      return host;
    error = "target CPU 'native': this machine (" + llvm::sys::getProcessTriple() +
            ") is not an architecture initc compiles kernels for; name a CPU";
    return nullptr;
  }
  for (const TargetArchitecture *architecture : targetArchitectures())
    if (knowsCpu(*architecture, name))
      return architecture;
  std::string names;
  for (const TargetArchitecture *architecture : targetArchitectures()) {
    std::string march = llvm::Triple(architecture->triple()).getArchName().str();
    names += (names.empty() ? "" : "; ") + architecture->name().str() + ": " +
             architecture->suggestedCpus().str() + " or a name from `llc -mtriple=" + march +
             " -mcpu=help`";
  }
  error = "unknown target CPU '" + name.str() + "' (use native, or " + names + ")";
  return nullptr;
}

} // namespace initc::target
