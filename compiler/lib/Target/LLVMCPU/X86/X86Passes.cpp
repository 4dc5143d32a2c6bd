#include "initc/Target/LLVMCPU/X86/X86Passes.h"
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
#include "llvm/Target/TargetMachine.h"

namespace initc::target::x86 {

void registerX86Scheduler() { useKernelScheduler(); }

void addX86IRPasses(llvm::ModulePassManager &passes, llvm::TargetMachine &machine) {
  passes.addPass(llvm::createModuleToFunctionPassAdaptor(TruncateByShufflePass()));
  passes.addPass(llvm::createModuleToFunctionPassAdaptor(HighWordsByShufflePass()));
  passes.addPass(llvm::createModuleToFunctionPassAdaptor(PairBF16ConversionsPass(machine)));
  passes.addPass(llvm::createModuleToFunctionPassAdaptor(UnitFloatByConversionPass(machine)));
}

void addX86MachinePasses(llvm::TargetMachine &machine, llvm::TargetPassConfig &config) {
  // Early machine LICM has hoisted the constants out of the loops by then; the register
  // allocator then folds them into their users as memory operands (of the constant pool when
  // rematerialized, of a spill slot when spilled).
  if (machine.getOptLevel() != llvm::CodeGenOptLevel::None)
    config.insertPass(&llvm::EarlyMachineLICMID, createWideConstantsPass());
}

void addX86LateMachinePasses(llvm::TargetMachine &machine, llvm::legacy::PassManager &passes) {
  // After the last pass to shrink constant loads, which makes the splat loads that the register
  // allocator rematerialized inside the loops broadcasts again.
  if (machine.getOptLevel() != llvm::CodeGenOptLevel::None) {
    passes.add(createWideConstantsPass());
    passes.add(createWideExtensionLoadsPass());
  }
}

} // namespace initc::target::x86
