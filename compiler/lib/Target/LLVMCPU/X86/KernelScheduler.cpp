//===- KernelScheduler.cpp - top-down scheduling for latency-bound kernels -===//
//
// The kernel generator interleaves groups of Philox blocks op by op, so that independent
// chains hide the latency of Philox's multiplies and of the log/erfinv polynomials. LLVM's
// default bottom-up list scheduler, pressed for registers, regroups the chains one after
// another: a chain of dependent multiplies and adds then runs at one instruction per latency.
// Scheduling top-down keeps the interleaving, at the cost of a few spilled Philox keys.
// - AVX2 code (16 vector registers): top-down for every kernel. On a Zen 3 the normal kernel
//   runs 1.2x as fast, uniform 1.08x and truncated normal 1.05x. Then in the generator's order
//   exactly: LLVM's top-down heuristics still moved the rounds of both groups ahead of their
//   float transforms and spilled more, and llvm-mca -mcpu=znver3 gives the row loops of the
//   generator's order 3-13% fewer cycles (normal 253 -> 245, truncated normal 318 -> 288).
// - AVX-512 code (32 registers): top-down where the kernel has a long chain of dependent float
//   ops (a polynomial), else the target's scheduler. On a Zen 5, top-down makes normal 1.03-1.06x
//   and truncated normal 1.05-1.09x as fast, and uniform (a chain of 3) 0.94-0.98x.
//   Also top-down where the kernel pairs bf16 conversions (vcvtne2ps2bf16): bottom-up, the
//   uniform bf16 loop spills 20 vectors an iteration (f32's none), top-down 8; on a Zen 4 it
//   then runs 1.02-1.10x as fast (f16's unpaired conversions run 0.98x: they stay bottom-up).
// - SSE code keeps the target's scheduler (measured: mixed).
//
//===----------------------------------------------------------------------===//
#include "initc/Target/LLVMCPU/X86/KernelScheduler.h"

#include "llvm/CodeGen/MachineFunction.h"
#include "llvm/CodeGen/MachineScheduler.h"
#include "llvm/CodeGen/TargetPassConfig.h"
#include "llvm/CodeGen/TargetSubtargetInfo.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Target/TargetMachine.h"

using namespace llvm;

namespace initc::target {

namespace {

constexpr const char *kSchedulerName = "initc-kernels";

/// Float ops in a chain from which AVX-512 kernels are scheduled top-down. Uniform's chain is
/// 3 (subtract, scale, offset); normal's and truncated normal's polynomials are 20 and more.
constexpr unsigned kLongFloatChain = 8;

/// LLVM's generic strategy with its direction fixed to top-down.
class TopDownScheduler : public GenericScheduler {
public:
  using GenericScheduler::GenericScheduler;

  void initPolicy(MachineBasicBlock::iterator begin, MachineBasicBlock::iterator end,
                  unsigned numRegionInstrs) override {
    GenericScheduler::initPolicy(begin, end, numRegionInstrs);
    RegionPolicy.OnlyTopDown = true;
    RegionPolicy.OnlyBottomUp = false;
  }
};

/// The instructions in the order instruction selection gave them, which is the kernel
/// generator's: its groups of blocks interleaved op by op.
class SourceOrderScheduler : public TopDownScheduler {
public:
  using TopDownScheduler::TopDownScheduler;

  bool tryCandidate(SchedCandidate &candidate, SchedCandidate &next,
                    SchedBoundary *zone) const override {
    if (candidate.isValid() && next.SU->NodeNum > candidate.SU->NodeNum)
      return false;
    next.Reason = NodeOrder;
    return true;
  }
};

ScheduleDAGInstrs *createKernelScheduler(MachineSchedContext *context) {
  const MachineFunction &function = *context->MF;
  // The choice is process-wide (-misched): other architectures' kernels keep their own.
  if (!function.getTarget().getTargetTriple().isX86() ||
      !schedulesTopDown(function.getSubtarget(), function.getFunction())) {
    // The target's own scheduler, as if no scheduler had been chosen.
    if (ScheduleDAGInstrs *dag = context->PassConfig->createMachineScheduler(context))
      return dag;
    return createGenericSchedLive(context);
  }
  // What createGenericSchedLive builds, with the top-down strategy. (The x86 target's own adds
  // a mutation keeping compares next to their branches; the kernels' loops end cmp, jcc anyway.)
  std::unique_ptr<MachineSchedStrategy> strategy;
  if (function.getSubtarget().checkFeatures("+avx512f"))
    strategy = std::make_unique<TopDownScheduler>(context);
  else
    strategy = std::make_unique<SourceOrderScheduler>(context);
  auto *dag = new ScheduleDAGMILive(context, std::move(strategy));
  dag->addMutation(createCopyConstrainDAGMutation(dag->TII, dag->TRI));
  return dag;
}

MachineSchedRegistry kernelSchedulerEntry(kSchedulerName,
                                          "initc kernels: top-down for AVX2, else the target's",
                                          createKernelScheduler);

} // namespace

unsigned longestFloatChain(const Function &function) {
  auto isFloatArithmetic = [](const Instruction &inst) {
    if (isa<BinaryOperator>(inst) || isa<UnaryOperator>(inst))
      return inst.getType()->isFPOrFPVectorTy();
    auto *call = dyn_cast<IntrinsicInst>(&inst);
    return call && call->getIntrinsicID() == Intrinsic::sqrt;
  };
  unsigned longest = 0;
  DenseMap<const Instruction *, unsigned> chain; // float ops ending at each instruction
  for (const BasicBlock &block : function) {
    chain.clear();
    for (const Instruction &inst : block) {
      unsigned length = 0;
      for (const Value *operand : inst.operands())
        if (auto *def = dyn_cast<Instruction>(operand); def && def->getParent() == &block)
          length = std::max(length, chain.lookup(def));
      length += isFloatArithmetic(inst);
      chain[&inst] = length;
      longest = std::max(longest, length);
    }
  }
  return longest;
}

bool pairsBF16Conversions(const Function &function) {
  for (const BasicBlock &block : function)
    for (const Instruction &inst : block)
      if (auto *call = dyn_cast<IntrinsicInst>(&inst);
          call && call->getIntrinsicID() == Intrinsic::x86_avx512bf16_cvtne2ps2bf16_512)
        return true;
  return false;
}

bool schedulesTopDown(const MCSubtargetInfo &subtarget, const Function &kernel) {
  if (!subtarget.checkFeatures("+avx2"))
    return false;
  // checkFeatures("-avx512f") would also demand that every feature AVX-512 implies is off.
  if (!subtarget.checkFeatures("+avx512f"))
    return true;
  return longestFloatChain(kernel) >= kLongFloatChain || pairsBF16Conversions(kernel);
}

bool useKernelScheduler() {
  static const bool selected = [] {
    auto &options = cl::getRegisteredOptions();
    auto it = options.find("misched");
    return it != options.end() && !it->second->addOccurrence(0, "misched", kSchedulerName);
  }();
  return selected;
}

} // namespace initc::target
