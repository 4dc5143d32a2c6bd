// The x86 kernels' additions to LLVM's pipelines: the one header of X86/ that the rest of
// Target/LLVMCPU includes, so that another architecture's directory can sit beside it. Each
// function is called where its pipeline is built (LLVMIRPipeline.cpp, CPUResolution.cpp).
#pragma once

#include "llvm/IR/PassManager.h"

namespace llvm {
class TargetMachine;
class TargetPassConfig;
namespace legacy {
class PassManager;
} // namespace legacy
} // namespace llvm

namespace initc::target::x86 {

/// Makes the kernel scheduler (KernelScheduler.cpp) the machine scheduler; once per process.
void registerX86Scheduler();

/// The IR peepholes, after the optimizer's last InstCombine (which would undo them).
void addX86IRPasses(llvm::ModulePassManager &passes, llvm::TargetMachine &machine);

/// The machine passes inserted into `config`'s pipeline (WideConstants.cpp), before it is added.
void addX86MachinePasses(llvm::TargetMachine &machine, llvm::TargetPassConfig &config);

/// The machine passes after the target's own (after x86's constant fixup).
void addX86LateMachinePasses(llvm::TargetMachine &machine, llvm::legacy::PassManager &passes);

} // namespace initc::target::x86
