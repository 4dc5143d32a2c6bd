//===- AArch64Architecture.cpp - AArch64 kernels: CPUs, triple ------------===//
//
// LLVM's own pipelines suffice here: the kernels' vector code is written for any width, and the
// x86 peepholes (X86/) answer x86 instruction choices. Bits are the contract's on both: strict
// IEEE arithmetic, no contraction, the same integer rounding (ir-spec/lowering.md).
//
//===----------------------------------------------------------------------===//
#include "initc/Target/LLVMCPU/AArch64/AArch64Architecture.h"

#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <elf.h>

namespace initc::target::aarch64 {

namespace {

class AArch64Architecture final : public TargetArchitecture {
public:
  llvm::StringRef name() const override { return "AArch64"; }
  std::string triple() const override {
    llvm::Triple host(llvm::sys::getProcessTriple());
    return host.getArch() == llvm::Triple::aarch64 ? host.str() : "aarch64-unknown-linux-gnu";
  }
  uint16_t elfMachine() const override { return EM_AARCH64; }
  llvm::StringRef suggestedCpus() const override {
    return "aarch64, neoverse-n1, neoverse-v1, neoverse-v2";
  }
  // Grace (Neoverse V2, with SVE2), else any AArch64 CPU (NEON).
  llvm::StringRef defaultCpus() const override { return "neoverse-v2,aarch64"; }
  std::vector<std::string> linkerNames(bool native) const override {
    // Debian's gcc-aarch64-linux-gnu off an AArch64 host: its binutils link, its libgcc.
    if (native)
      return {"cc", "c++", "gcc"};
    return {"aarch64-linux-gnu-gcc"};
  }

  void initializeLLVM() const override {
    LLVMInitializeAArch64TargetInfo();
    LLVMInitializeAArch64Target();
    LLVMInitializeAArch64TargetMC();
    LLVMInitializeAArch64AsmPrinter();
    LLVMInitializeAArch64AsmParser();
  }

  // "aarch64" as GCC's -march=armv8-a names any AArch64 CPU; LLVM calls it "generic".
  std::string llvmCpuName(llvm::StringRef name) const override {
    return name == "aarch64" ? "generic" : name.str();
  }

  // No variant rounds bf16 by BFCVT yet: the integer rounding is exact everywhere.
  llvm::StringRef bf16ConversionExtension() const override { return ""; }

  std::string defaultVectorLoop(llvm::ArrayRef<std::string>) const override {
    // 32 registers of 128 bits (NEON; SVE's fixed-width code uses the same): two groups of 8.
    return ":2";
  }
};

} // namespace

const TargetArchitecture &architecture() {
  static const AArch64Architecture aarch64;
  return aarch64;
}

} // namespace initc::target::aarch64
