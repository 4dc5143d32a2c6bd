//===- X86Architecture.cpp - x86-64 kernels: CPUs, triple, passes ---------===//
#include "initc/Target/LLVMCPU/X86/X86Architecture.h"
#include "initc/Target/LLVMCPU/X86/HighWordsByShuffle.h"
#include "initc/Target/LLVMCPU/X86/KernelScheduler.h"
#include "initc/Target/LLVMCPU/X86/PairBF16Conversions.h"
#include "initc/Target/LLVMCPU/X86/TruncateByShuffle.h"
#include "initc/Target/LLVMCPU/X86/UnitFloatByConversion.h"
#include "initc/Target/LLVMCPU/X86/WideConstants.h"

#include "llvm/CodeGen/MachineFunctionPass.h"
#include "llvm/CodeGen/Passes.h"
#include "llvm/CodeGen/TargetPassConfig.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/PassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <elf.h>
#include <memory>

namespace initc::target::x86 {

namespace {

class X86Architecture final : public TargetArchitecture {
public:
  llvm::StringRef name() const override { return "x86-64"; }
  std::string triple() const override {
    // The host's own when it is x86-64, as before there was a second architecture.
    llvm::Triple host(llvm::sys::getProcessTriple());
    return host.getArch() == llvm::Triple::x86_64 ? host.str() : "x86_64-unknown-linux-gnu";
  }
  uint16_t elfMachine() const override { return EM_X86_64; }
  llvm::StringRef suggestedCpus() const override { return "x86-64, x86-64-v3, x86-64-v4"; }
  llvm::StringRef defaultCpus() const override {
    return "x86-64-v4+avx512bf16,x86-64-v4,x86-64-v3";
  }
  std::vector<std::string> linkerNames(bool native) const override {
    if (native)
      return {"cc", "c++", "gcc"};
    return {"x86_64-linux-gnu-gcc"};
  }

  void initializeLLVM() const override {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeX86AsmParser();
  }

  bool completeFeatures(llvm::StringRef written, llvm::StringRef cpu, std::string &features,
                        const llvm::Target &target, std::string &error) const override {
    std::string tripleName = triple();
    std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
        target.createMCSubtargetInfo(tripleName, cpu, features));
    // The kernels are 64-bit code: a 32-bit CPU (i686, pentium4, ...) would abort LLVM.
    if (!subtarget->checkFeatures("+64bit")) {
      error = "target CPU '" + cpu.str() +
              "' runs only 32-bit code, and the kernels are x86-64 code: use x86-64, "
              "x86-64-v3, x86-64-v4, native or a 64-bit CPU name";
      return false;
    }
    // AVX-512 added to a CPU without it (x86-64-v3+avx512f) comes without LLVM's evex512 (the
    // code generator adds it only to generic CPUs), so 512-bit vectors would be illegal in the
    // kernels' AVX-512 loop: add it, as clang's -mavx512f does.
    if (subtarget->checkFeatures("+avx512f")) {
      llvm::StringRef list(features);
      if (list.contains("-evex512")) {
        error = "target CPU '" + written.str() +
                "' has AVX-512 without 512-bit vectors (-evex512), which the kernels' AVX-512 "
                "loop needs: drop -evex512, or compile for x86-64-v3";
        return false;
      }
      std::unique_ptr<llvm::MCSubtargetInfo> plain(
          target.createMCSubtargetInfo(tripleName, cpu, ""));
      if (!plain->checkFeatures("+avx512f") && !list.contains("+evex512"))
        features += ",+evex512";
    }
    return true;
  }

  llvm::StringRef bf16ConversionExtension() const override { return "avx512bf16"; }

  std::string defaultVectorLoop(llvm::ArrayRef<std::string> extensions) const override {
    // Several groups of blocks per iteration, so that independent chains hide the latency of
    // Philox's multiplies and of the polynomials: three of 16 blocks with AVX-512 (32 registers
    // of 16 floats), so that the float transforms run at full width, else two of 8. With AVX2,
    // two groups of 8 run 9-29% faster than one, though the second spills; with AVX-512 three
    // groups run uniform 6-13% and normal 3-4% faster than two (ir-spec/lowering.md). AVX2's
    // loop is software-pipelined: TinyLlama f32 took 0.89x the time on a Zen 4 running it
    // (bf16 0.96x); AVX-512's took 1.09x, so it is not (benchmarks/README.md).
    if (llvm::is_contained(extensions, "avx512f"))
      return ":3x16";
    return llvm::is_contained(extensions, "avx2") ? ":2p" : ":2";
  }

  void registerCodeGenHooks() const override { useKernelScheduler(); }

  void addIRPasses(llvm::ModulePassManager &passes, llvm::TargetMachine &machine) const override {
    passes.addPass(llvm::createModuleToFunctionPassAdaptor(TruncateByShufflePass()));
    passes.addPass(llvm::createModuleToFunctionPassAdaptor(HighWordsByShufflePass()));
    passes.addPass(llvm::createModuleToFunctionPassAdaptor(PairBF16ConversionsPass(machine)));
    passes.addPass(llvm::createModuleToFunctionPassAdaptor(UnitFloatByConversionPass(machine)));
  }

  void addMachinePasses(llvm::TargetMachine &machine,
                        llvm::TargetPassConfig &config) const override {
    // Early machine LICM has hoisted the constants out of the loops by then; the register
    // allocator then folds them into their users as memory operands (of the constant pool when
    // rematerialized, of a spill slot when spilled).
    if (machine.getOptLevel() != llvm::CodeGenOptLevel::None)
      config.insertPass(&llvm::EarlyMachineLICMID, createWideConstantsPass());
  }

  void addLateMachinePasses(llvm::TargetMachine &machine,
                            llvm::legacy::PassManager &passes) const override {
    // After the last pass to shrink constant loads, which makes the splat loads that the register
    // allocator rematerialized inside the loops broadcasts again.
    if (machine.getOptLevel() != llvm::CodeGenOptLevel::None) {
      passes.add(createWideConstantsPass());
      passes.add(createWideExtensionLoadsPass());
    }
  }
};

} // namespace

const TargetArchitecture &architecture() {
  static const X86Architecture x86;
  return x86;
}

} // namespace initc::target::x86
