//===- WideConstants.cpp - vector constants as full-width loads ----------===//
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
// The second pass undoes the other way x86 shrinks vector constants. After register
// allocation, x86's constant fixup turns a full-width constant load whose elements fit in
// fewer bits into a sign- or zero-extending load (`vpmovsxbd .LCPI(%rip), %zmm1`: 16 bytes in
// the pool instead of 64). An extending load takes a shuffle uop besides the load, and the
// register allocator, having taken the constant for a plain load, rematerializes it inside the
// loop at each use: 21 such loads an iteration of the AVX-512 uniform f16 loop, mostly its
// permute indices. Loading the extended constant whole costs a load port only: on a Zen 5
// uniform f16 runs 3-8% faster, and the x86-64-v4 variant's uniform bf16 6%. It rewrites
// AVX-512 code only: the AVX2 kernels gained nothing there, and one lost 5%.
//
// x86's opcode numbers are private to its target library; the passes find them by name.
//
//===----------------------------------------------------------------------===//
#include "initc/Target/LLVMCPU/X86/WideConstants.h"

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

/// x86 addressing: base, scale, index, displacement, segment after the destination.
constexpr unsigned kDisplacementOperand = 4;

/// How a load is rewritten: the plain load of its vector width and, for an extending load, the
/// element widths it extends between.
struct Rewrite {
  unsigned load;
  unsigned vectorBits;
  unsigned sourceBits = 0, elementBits = 0;
  bool signExtends = false;
};

/// The target's opcodes by name.
StringMap<unsigned> opcodesByName(const TargetInstrInfo &instrInfo) {
  StringMap<unsigned> byName;
  for (unsigned opcode = 0, n = instrInfo.getNumOpcodes(); opcode < n; ++opcode)
    byName[instrInfo.getName(opcode)] = opcode;
  return byName;
}

/// A machine pass that replaces loads of a constant-pool entry with plain loads of the whole
/// vector they produce, from a new entry. Subclasses name the loads and build the vector.
class FullWidthLoads : public MachineFunctionPass {
public:
  explicit FullWidthLoads(char &id) : MachineFunctionPass(id) {}

  void getAnalysisUsage(AnalysisUsage &usage) const override {
    usage.setPreservesCFG();
    MachineFunctionPass::getAnalysisUsage(usage);
  }

  bool runOnMachineFunction(MachineFunction &function) override {
    const TargetInstrInfo &instrInfo = *function.getSubtarget().getInstrInfo();
    if (!opcodes)
      opcodes = findOpcodes(instrInfo);
    bool changed = false;
    for (MachineBasicBlock &block : function)
      for (MachineInstr &instr : block)
        changed |= rewrite(function, instrInfo, instr);
    return changed;
  }

protected:
  /// Load opcode -> its rewrite; empty when the target has none of them (not x86).
  virtual DenseMap<unsigned, Rewrite> findOpcodes(const TargetInstrInfo &instrInfo) const = 0;
  /// The vector that a load of `entry` produces, or null to leave the load alone.
  virtual Constant *loadedVector(const Rewrite &rewrite, const Constant *entry,
                                 LLVMContext &context) const = 0;

private:
  std::optional<DenseMap<unsigned, Rewrite>> opcodes;

  bool rewrite(MachineFunction &function, const TargetInstrInfo &instrInfo, MachineInstr &instr) {
    auto found = opcodes->find(instr.getOpcode());
    if (found == opcodes->end() || !instr.hasOneMemOperand() ||
        instr.getNumOperands() <= kDisplacementOperand)
      return false;
    const Rewrite &rewrite = found->second;
    MachineOperand &displacement = instr.getOperand(kDisplacementOperand);
    if (!displacement.isCPI() || displacement.getOffset() != 0)
      return false;
    MachineConstantPool &pool = *function.getConstantPool();
    const MachineConstantPoolEntry &entry = pool.getConstants()[displacement.getIndex()];
    if (entry.isMachineConstantPoolEntry())
      return false;
    Constant *vector =
        loadedVector(rewrite, entry.Val.ConstVal, function.getFunction().getContext());
    if (!vector)
      return false;
    Align align(rewrite.vectorBits / 8);
    displacement.setIndex(pool.getConstantPoolIndex(vector, align));
    const MachineMemOperand *old = *instr.memoperands_begin();
    instr.setMemRefs(function, {function.getMachineMemOperand(old->getPointerInfo(),
                                                              old->getFlags(),
                                                              rewrite.vectorBits / 8, align)});
    instr.setDesc(instrInfo.get(rewrite.load));
    return true;
  }
};

/// AVX/AVX2 broadcasts of a scalar, and the plain load of the same vector width.
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

class WideConstants : public FullWidthLoads {
public:
  static char ID;
  WideConstants() : FullWidthLoads(ID) {}

  StringRef getPassName() const override { return "initc wide splat constants"; }

private:
  DenseMap<unsigned, Rewrite> findOpcodes(const TargetInstrInfo &instrInfo) const override {
    StringMap<unsigned> byName = opcodesByName(instrInfo);
    DenseMap<unsigned, Rewrite> found;
    for (const Widening &w : kWidenings) {
      auto broadcast = byName.find(w.broadcast), load = byName.find(w.load);
      if (broadcast != byName.end() && load != byName.end())
        found[broadcast->second] = Rewrite{load->second, w.vectorBits};
    }
    return found;
  }

  Constant *loadedVector(const Rewrite &rewrite, const Constant *entry,
                         LLVMContext &) const override {
    // A scalar: a splat of a wider pattern (a vector constant) is left alone.
    if (!isa<ConstantInt, ConstantFP>(entry))
      return nullptr;
    unsigned scalarBits = entry->getType()->getPrimitiveSizeInBits();
    if (scalarBits == 0 || rewrite.vectorBits % scalarBits)
      return nullptr;
    return ConstantVector::getSplat(ElementCount::getFixed(rewrite.vectorBits / scalarBits),
                                    const_cast<Constant *>(entry));
  }
};

char WideConstants::ID = 0;

/// The bits of a constant-pool vector or scalar, element 0 lowest; none for other constants.
std::optional<APInt> constantBits(const Constant *constant) {
  auto elementBits = [](const Constant *element) -> std::optional<APInt> {
    if (auto *i = dyn_cast<ConstantInt>(element))
      return i->getValue();
    if (auto *f = dyn_cast<ConstantFP>(element))
      return f->getValueAPF().bitcastToAPInt();
    return std::nullopt;
  };
  auto *vectorType = dyn_cast<FixedVectorType>(constant->getType());
  if (!vectorType)
    return elementBits(constant);
  unsigned count = vectorType->getNumElements();
  unsigned width = vectorType->getScalarSizeInBits();
  APInt bits(count * width, 0);
  for (unsigned i = 0; i < count; ++i) {
    std::optional<APInt> element = elementBits(constant->getAggregateElement(i));
    if (!element || element->getBitWidth() != width)
      return std::nullopt;
    bits.insertBits(*element, i * width);
  }
  return bits;
}

class WideExtensionLoads : public FullWidthLoads {
public:
  static char ID;
  WideExtensionLoads() : FullWidthLoads(ID) {}

  StringRef getPassName() const override { return "initc wide extended constants"; }

private:
  DenseMap<unsigned, Rewrite> findOpcodes(const TargetInstrInfo &instrInfo) const override {
    struct Form {
      const char *suffix, *load;
      unsigned vectorBits;
    };
    // The EVEX forms: AVX-512 code only.
    constexpr Form kForms[] = {
        {"Zrm", "VMOVDQA64Zrm", 512},
        {"Z256rm", "VMOVDQA64Z256rm", 256},
        {"Z128rm", "VMOVDQA64Z128rm", 128},
    };
    struct Widths {
      const char *name;
      unsigned sourceBits, elementBits;
    };
    constexpr Widths kWidths[] = {{"BW", 8, 16},  {"BD", 8, 32},  {"BQ", 8, 64},
                                  {"WD", 16, 32}, {"WQ", 16, 64}, {"DQ", 32, 64}};
    StringMap<unsigned> byName = opcodesByName(instrInfo);
    DenseMap<unsigned, Rewrite> found;
    for (const Form &form : kForms)
      for (const Widths &widths : kWidths)
        for (bool sign : {true, false}) {
          std::string name =
              std::string("VPMOV") + (sign ? "SX" : "ZX") + widths.name + form.suffix;
          auto extending = byName.find(name), load = byName.find(form.load);
          if (extending != byName.end() && load != byName.end())
            found[extending->second] = Rewrite{load->second, form.vectorBits, widths.sourceBits,
                                               widths.elementBits, sign};
        }
    return found;
  }

  Constant *loadedVector(const Rewrite &rewrite, const Constant *entry,
                         LLVMContext &context) const override {
    unsigned count = rewrite.vectorBits / rewrite.elementBits;
    std::optional<APInt> bits = constantBits(entry);
    if (!bits || bits->getBitWidth() < count * rewrite.sourceBits)
      return nullptr;
    Type *elementType = IntegerType::get(context, rewrite.elementBits);
    SmallVector<Constant *> elements;
    for (unsigned i = 0; i < count; ++i) {
      APInt source = bits->extractBits(rewrite.sourceBits, i * rewrite.sourceBits);
      elements.push_back(ConstantInt::get(elementType, rewrite.signExtends
                                                           ? source.sext(rewrite.elementBits)
                                                           : source.zext(rewrite.elementBits)));
    }
    return ConstantVector::get(elements);
  }
};

char WideExtensionLoads::ID = 0;

} // namespace

MachineFunctionPass *createWideConstantsPass() { return new WideConstants(); }

MachineFunctionPass *createWideExtensionLoadsPass() { return new WideExtensionLoads(); }

} // namespace initc::target
