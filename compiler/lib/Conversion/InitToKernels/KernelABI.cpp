#include "initc/Conversion/InitToKernels/KernelABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace initc {

FunctionType getKernelFunctionType(MLIRContext *ctx) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type i64 = IntegerType::get(ctx, 64);
  return FunctionType::get(ctx, {ptr, ptr, ptr, ptr, i64, i64, ptr}, {});
}

bool hasKernelSignature(func::FuncOp func) {
  return func.getFunctionType() == getKernelFunctionType(func.getContext());
}

func::FuncOp createKernelFunction(OpBuilder &builder, Location loc, StringRef name) {
  OpBuilder::InsertionGuard guard(builder);
  MLIRContext *ctx = builder.getContext();
  auto func = builder.create<func::FuncOp>(loc, name, getKernelFunctionType(ctx));
  // The runtime passes a shard buffer that overlaps none of the input arrays, and the
  // kernel keeps no pointer: telling LLVM lets it vectorize without runtime alias checks.
  auto unit = builder.getUnitAttr();
  for (unsigned arg : {unsigned(kKernelOut), unsigned(kKernelGlobalShape),
                       unsigned(kKernelOffset), unsigned(kKernelLocalShape),
                       unsigned(kKernelArgs)}) {
    func.setArgAttr(arg, LLVM::LLVMDialect::getNoAliasAttrName(), unit);
    func.setArgAttr(arg, LLVM::LLVMDialect::getNoCaptureAttrName(), unit);
    if (arg != kKernelOut)
      func.setArgAttr(arg, LLVM::LLVMDialect::getReadonlyAttrName(), unit);
  }
  func.addEntryBlock();
  return func;
}

Value viewPointerAsMemRef(OpBuilder &builder, Location loc, Value ptr, Type elementType,
                          Value size) {
  // A rank-1 memref descriptor {allocated, aligned, offset, sizes[1], strides[1]}, built in the
  // LLVM dialect and cast to the memref type; memref-to-llvm cancels the cast pair.
  MLIRContext *ctx = builder.getContext();
  Type i64 = builder.getI64Type();
  Type ptrType = LLVM::LLVMPointerType::get(ctx);
  Type array = LLVM::LLVMArrayType::get(i64, 1);
  auto descType = LLVM::LLVMStructType::getLiteral(ctx, {ptrType, ptrType, i64, array, array});
  Value sizeI64 = size.getType().isIndex()
                      ? builder.create<arith::IndexCastOp>(loc, i64, size).getResult()
                      : size;
  Value zero = builder.create<LLVM::ConstantOp>(loc, i64, builder.getI64IntegerAttr(0));
  Value one = builder.create<LLVM::ConstantOp>(loc, i64, builder.getI64IntegerAttr(1));
  Value desc = builder.create<LLVM::UndefOp>(loc, descType);
  desc = builder.create<LLVM::InsertValueOp>(loc, desc, ptr, ArrayRef<int64_t>{0});
  desc = builder.create<LLVM::InsertValueOp>(loc, desc, ptr, ArrayRef<int64_t>{1});
  desc = builder.create<LLVM::InsertValueOp>(loc, desc, zero, ArrayRef<int64_t>{2});
  desc = builder.create<LLVM::InsertValueOp>(loc, desc, sizeI64, ArrayRef<int64_t>{3, 0});
  desc = builder.create<LLVM::InsertValueOp>(loc, desc, one, ArrayRef<int64_t>{4, 0});
  auto memrefType = MemRefType::get({ShapedType::kDynamic}, elementType);
  return builder.create<UnrealizedConversionCastOp>(loc, memrefType, desc).getResult(0);
}

} // namespace initc
