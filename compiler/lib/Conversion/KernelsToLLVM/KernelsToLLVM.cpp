//===- KernelsToLLVM.cpp - kernel functions to the LLVM dialect -----------===//
//
// The kernels' func/arith/math/scf/cf/memref/vector/index/ub ops lowered to the LLVM dialect
// by MLIR's conversions, after what they cannot lower alone: the bf16 conversions (rule 8) and
// table reads at computed positions (ir-spec/lowering.md). As Toy's LowerToLLVM.cpp.
//
//===----------------------------------------------------------------------===//
#include "initc/Conversion/KernelsToLLVM/KernelsToLLVM.h"
#include "initc/Random/Expand.h"
#include "initc/Support/DiagnosticCollector.h"

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
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace initc {

namespace {
/// The module's C symbol names, used in a linker version script: refuse what would be read as a
/// pattern or break the script.
LogicalResult checkSymbolName(llvm::StringRef name, std::string &error) {
  for (char c : name) {
    if (llvm::isAlnum(c) || c == '_' || c == '.' || c == '$')
      continue;
    error = "kernel name '" + name.str() +
            "' is not a valid symbol: use letters, digits, '_', '.' and '$' only";
    return failure();
  }
  return success();
}

bool hasElementType(Value value, bool (Type::*is)() const) {
  return (getElementTypeOrSelf(value.getType()).*is)();
}

/// A table read past its end (`vector.extractelement` at a computed position) would be LLVM's
/// poison, whose bits may differ between kernel variants: clamped (unsigned), it reads the last
/// entry. In-range positions are unchanged, and a position LLVM knows to be in range (an index
/// along the table's own dim) costs nothing.
void clampTablePositions(ModuleOp module) {
  module.walk([](vector::ExtractElementOp op) {
    Value position = op.getPosition();
    if (!position)
      return;
    OpBuilder builder(op);
    Location loc = op.getLoc();
    int64_t last = op.getSourceVectorType().getNumElements() - 1;
    Value bound = builder.create<arith::ConstantOp>(
        loc, position.getType(), builder.getIntegerAttr(position.getType(), last));
    Value clamped = builder.create<arith::MinUIOp>(loc, position, bound);
    op.getPositionMutable().assign(clamped);
  });
}

/// bf16 conversions in integer ops (rule 8), but where a kernel's CPU converts to bf16 in one
/// instruction (AVX512-BF16: vcvtneps2bf16, which flushes subnormal inputs to zero) and the
/// conversion is marked kNoNaNOrSubnormalAttr: there the instruction gives rule 8's bits. A
/// marked conversion needs no NaN case either, and one whose operand is bounded well below
/// overflow rounds by a split (random::BF16Operand). Widening bf16 is exact: a shift.
LogicalResult expandBF16Conversions(ModuleOp module, llvm::StringRef defaultCpu,
                                    BF16ConverterQuery convertsBF16, std::string &error) {
  llvm::StringMap<bool> convertsByCpu;
  for (auto func : module.getOps<func::FuncOp>()) {
    SmallVector<Operation *> conversions;
    func.walk([&](Operation *op) {
      if ((isa<arith::TruncFOp>(op) && hasElementType(op->getOperand(0), &Type::isF32) &&
           hasElementType(op->getResult(0), &Type::isBF16)) ||
          (isa<arith::ExtFOp>(op) && hasElementType(op->getOperand(0), &Type::isBF16) &&
           hasElementType(op->getResult(0), &Type::isF32)))
        conversions.push_back(op);
    });
    if (conversions.empty())
      continue;
    auto cpuAttr = func->getAttrOfType<StringAttr>("initc.target_cpu");
    std::string cpu = cpuAttr ? cpuAttr.str() : defaultCpu.str();
    auto [known, inserted] = convertsByCpu.try_emplace(cpu, false);
    if (inserted) {
      std::optional<bool> converts = convertsBF16(cpu, error);
      if (!converts)
        return failure();
      known->second = *converts;
    }
    for (Operation *op : conversions) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      Value in = op->getOperand(0), replacement;
      Type shape = in.getType();
      auto like = [&](Type element) -> Type {
        if (auto vector = dyn_cast<VectorType>(shape))
          return VectorType::get(vector.getShape(), element);
        return element;
      };
      auto splat = [&](Type type, int64_t value) -> Value {
        auto attr = b.getIntegerAttr(getElementTypeOrSelf(type), value);
        if (auto vector = dyn_cast<VectorType>(type))
          return b.create<arith::ConstantOp>(loc, DenseElementsAttr::get(vector, attr));
        return b.create<arith::ConstantOp>(loc, attr);
      };
      if (isa<arith::TruncFOp>(op)) {
        random::BF16Operand operand = random::bf16OperandOf(op);
        if (operand != random::BF16Operand::Any && known->second)
          continue;
        Value bits = random::emitRoundToBF16Bits(b, loc, in, operand);
        replacement = b.create<arith::BitcastOp>(loc, op->getResult(0).getType(), bits);
      } else {
        Type i32 = like(b.getI32Type());
        Value bits = b.create<arith::BitcastOp>(loc, like(b.getI16Type()), in);
        Value word = b.create<arith::ExtUIOp>(loc, i32, bits);
        word = b.create<arith::ShLIOp>(loc, word, splat(i32, 16));
        replacement = b.create<arith::BitcastOp>(loc, op->getResult(0).getType(), word);
      }
      op->getResult(0).replaceAllUsesWith(replacement);
      op->erase();
    }
  }
  return success();
}
} // namespace

LogicalResult lowerKernelsToLLVM(ModuleOp module, llvm::StringRef defaultCpu,
                                BF16ConverterQuery convertsBF16, std::string &error) {
  MLIRContext *ctx = module->getContext();
  DiagnosticCollector diagnostics(ctx);
  if (failed(verify(module))) {
    error = "the kernel module is invalid: " + diagnostics.take("verifier failed");
    return failure();
  }
  if (failed(expandBF16Conversions(module, defaultCpu, convertsBF16, error)))
    return failure();
  clampTablePositions(module);
  // func-to-llvm keeps every function external; only the public ones are kernels.
  auto internal = LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal);
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate() && !func.isDeclaration() && !func->hasAttr("llvm.linkage"))
      func->setAttr("llvm.linkage", internal);
    if (func.isPublic() && failed(checkSymbolName(func.getSymName(), error)))
      return failure();
  }

  PassManager pm(ctx);
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  funcPm.addPass(createLowerAffinePass());
  funcPm.addPass(createConvertVectorToSCFPass());
  // Expands ops that have no direct LLVM form (ceildivsi, maximumf, ...); the bf16 conversions
  // are expandBF16Conversions's.
  funcPm.addPass(arith::createArithExpandOpsPass());
  funcPm.addPass(createConvertSCFToCFPass());
  funcPm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(module))) {
    error = "lowering to the LLVM dialect failed: " + diagnostics.take("a pass failed");
    return failure();
  }
  // An op no conversion knows (math.tanh, math.erf, ...) is left as it is; name it here rather
  // than let the translation fail on a missing dialect interface.
  Operation *unlowered = nullptr;
  module.walk([&](Operation *op) {
    if (op != module.getOperation() && !isa<LLVM::LLVMDialect>(op->getDialect())) {
      unlowered = op;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (unlowered) {
    std::string where = "no source location";
    unlowered->getLoc()->walk([&](Location loc) {
      if (auto file = dyn_cast<FileLineColLoc>(loc)) {
        where = file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" +
                std::to_string(file.getColumn());
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    error = "'" + unlowered->getName().getStringRef().str() + "' (" + where +
            ") has no lowering to native code: expand it into arith ops (ir-spec/lowering.md, "
            "\"What a kernel may contain\")";
    return failure();
  }
  return success();
}

} // namespace initc
