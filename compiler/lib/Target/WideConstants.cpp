//===- WideConstants.cpp - splat constants as foldable full-width loads ---===//
//
// The kernels' polynomials use more splat constants than AVX2 has registers (the truncated
// normal: some 40 against 16 ymm). x86 selects each as a broadcast load from a 4- or 8-byte
// constant-pool entry, and AVX2 instructions cannot take a broadcast as a memory operand, so
// the register allocator, short of registers, reloads them as separate broadcasts inside the
// loop: 120 per iteration of the truncated normal. On a Zen 3 a broadcast load also takes an
// FP pipe, which the arithmetic needs. As loads of the whole splat vector (32 bytes in the
// constant pool) they become their users' memory operands instead (of the constant pool, or of
// a slot they were spilled to once), which cost a load port only: the truncated normal runs ~5%
// faster there. AVX-512 code folds broadcasts natively (its opcodes are not these), and SSE
// code has no broadcasts.
//
// x86's opcode numbers are private to its target library; the pass finds them by name.
//
//===----------------------------------------------------------------------===//
#include "initc/Target/WideConstants.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/CodeGen/MachineConstantPool.h"
#include "llvm/CodeGen/MachineFunction.h"
#include "llvm/CodeGen/MachineFunctionPass.h"
#include "llvm/CodeGen/MachineInstr.h"
#include "llvm/CodeGen/MachineMemOperand.h"
#include "llvm/CodeGen/TargetInstrInfo.h"
#include "llvm/CodeGen/TargetSubtargetInfo.h"
#include "llvm/IR/Constants.h"

#include <optional>

using namespace llvm;

namespace initc::target {

namespace {

/// A broadcast load and the plain load of the same vector width.
struct Widening {
  const char *broadcast;
  const char *load;
  unsigned vectorBits;
};

constexpr Widening kWidenings[] = {
    {"VBROADCASTSSYrm", "VMOVAPSYrm", 256}, {"VBROADCASTSDYrm", "VMOVAPDYrm", 256},
    {"VPBROADCASTDYrm", "VMOVDQAYrm", 256}, {"VPBROADCASTQYrm", "VMOVDQAYrm", 256},
    {"VBROADCASTSSrm", "VMOVAPSrm", 128},   {"VPBROADCASTDrm", "VMOVDQArm", 128},
    {"VPBROADCASTQrm", "VMOVDQArm", 128},
};

/// x86 addressing: base, scale, index, displacement, segment after the destination.
constexpr unsigned kDisplacementOperand = 4;

class WideConstants : public MachineFunctionPass {
public:
  static char ID;
  WideConstants() : MachineFunctionPass(ID) {}

  StringRef getPassName() const override { return "initc wide splat constants"; }

  void getAnalysisUsage(AnalysisUsage &usage) const override {
    usage.setPreservesCFG();
    MachineFunctionPass::getAnalysisUsage(usage);
  }

  bool runOnMachineFunction(MachineFunction &function) override {
    const TargetInstrInfo &instrInfo = *function.getSubtarget().getInstrInfo();
    if (!opcodes)
      opcodes = findOpcodes(instrInfo);
    if (opcodes->empty())
      return false;
    bool changed = false;
    for (MachineBasicBlock &block : function)
      for (MachineInstr &instr : block)
        changed |= widen(function, instrInfo, instr);
    return changed;
  }

private:
  struct Rewrite {
    unsigned load;
    unsigned vectorBits;
  };
  // Broadcast opcode -> its rewrite; empty when the target has none of them (not x86).
  std::optional<DenseMap<unsigned, Rewrite>> opcodes;

  static DenseMap<unsigned, Rewrite> findOpcodes(const TargetInstrInfo &instrInfo) {
    StringMap<unsigned> byName;
    for (const Widening &w : kWidenings)
      byName[w.broadcast] = byName[w.load] = ~0u;
    for (unsigned opcode = 0, n = instrInfo.getNumOpcodes(); opcode < n; ++opcode) {
      auto it = byName.find(instrInfo.getName(opcode));
      if (it != byName.end())
        it->second = opcode;
    }
    DenseMap<unsigned, Rewrite> found;
    for (const Widening &w : kWidenings)
      if (byName[w.broadcast] != ~0u && byName[w.load] != ~0u)
        found[byName[w.broadcast]] = Rewrite{byName[w.load], w.vectorBits};
    return found;
  }

  bool widen(MachineFunction &function, const TargetInstrInfo &instrInfo, MachineInstr &instr) {
    auto rewrite = opcodes->find(instr.getOpcode());
    if (rewrite == opcodes->end() || !instr.hasOneMemOperand() ||
        instr.getNumOperands() <= kDisplacementOperand)
      return false;
    MachineOperand &displacement = instr.getOperand(kDisplacementOperand);
    if (!displacement.isCPI() || displacement.getOffset() != 0)
      return false;
    MachineConstantPool &pool = *function.getConstantPool();
    const MachineConstantPoolEntry &entry = pool.getConstants()[displacement.getIndex()];
    if (entry.isMachineConstantPoolEntry())
      return false;
    // A scalar: a splat of a wider pattern (a vector constant) is left alone.
    const Constant *scalar = entry.Val.ConstVal;
    if (!isa<ConstantInt, ConstantFP>(scalar))
      return false;
    unsigned scalarBits = scalar->getType()->getPrimitiveSizeInBits();
    unsigned vectorBits = rewrite->second.vectorBits;
    if (scalarBits == 0 || vectorBits % scalarBits)
      return false;
    Constant *splat = ConstantVector::getSplat(ElementCount::getFixed(vectorBits / scalarBits),
                                               const_cast<Constant *>(scalar));
    Align align(vectorBits / 8);
    displacement.setIndex(pool.getConstantPoolIndex(splat, align));
    const MachineMemOperand *old = *instr.memoperands_begin();
    instr.setMemRefs(function, {function.getMachineMemOperand(
                                   old->getPointerInfo(), old->getFlags(), vectorBits / 8, align)});
    instr.setDesc(instrInfo.get(rewrite->second.load));
    return true;
  }
};

char WideConstants::ID = 0;

} // namespace

MachineFunctionPass *createWideConstantsPass() { return new WideConstants(); }

} // namespace initc::target
