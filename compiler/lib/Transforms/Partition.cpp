//===- Partition.cpp - a native kernel over any rank's slice --------------===//
//
// A kernel computes elements [begin, end) of one slice, in local row-major order. It walks the
// slice row by row (a row: all dims but the last fixed) so the inner loop is a plain counted loop
// over the last dim that LLVM vectorizes; each element's global index is offset + local index,
// and its linear index is taken in the global shape, so every rank computes the same value for
// the same element. The ABI is initrt::KernelFn (runtime/include/initrt/program.h).
//
//===----------------------------------------------------------------------===//
#include "initc/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringMap.h"

namespace initc {
#define GEN_PASS_DEF_PARTITION
#include "initc/Transforms/Passes.h.inc"
} // namespace initc

using namespace mlir;
using namespace initc;
using namespace initc::init;

namespace {

/// Builds `func.func @name(out, globalShape, offset, localShape, begin, end)` evaluating `fused`.
func::FuncOp buildKernel(OpBuilder &builder, Location loc, StringRef name, ElementwiseOp fused) {
  MLIRContext *ctx = builder.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Type i64 = builder.getI64Type();
  auto funcType = builder.getFunctionType({ptr, ptr, ptr, ptr, i64, i64}, {});
  auto func = builder.create<func::FuncOp>(loc, name, funcType);
  func->setAttr("initc.kernel", builder.getUnitAttr());
  OpBuilder b = OpBuilder::atBlockBegin(func.addEntryBlock());
  Value out = func.getArgument(0), gshapePtr = func.getArgument(1), offPtr = func.getArgument(2),
        lshapePtr = func.getArgument(3), begin = func.getArgument(4), end = func.getArgument(5);

  RankedTensorType type = fused.getType();
  int64_t rank = type.getRank();
  auto cst = [&](int64_t v) { return b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(v)); };
  auto load = [&](Value base, int64_t index) -> Value {
    Value p = b.create<LLVM::GEPOp>(loc, ptr, i64, base, ArrayRef<LLVM::GEPArg>{(int32_t)index});
    return b.create<LLVM::LoadOp>(loc, i64, p);
  };
  SmallVector<Value> gshape, off, lshape;
  for (int64_t d = 0; d < rank; ++d) {
    gshape.push_back(load(gshapePtr, d));
    off.push_back(load(offPtr, d));
    lshape.push_back(load(lshapePtr, d));
  }
  // A rank-0 tensor is one row of one element.
  Value one = cst(1), zero = cst(0);
  Value rowLength = rank ? b.create<arith::MaxSIOp>(loc, lshape.back(), one).getResult() : one;
  Value rowBegin = b.create<arith::DivUIOp>(loc, begin, rowLength);
  Value rowEnd = b.create<arith::DivUIOp>(
      loc, b.create<arith::AddIOp>(loc, end, b.create<arith::SubIOp>(loc, rowLength, one)),
      rowLength);
  // Global strides (row-major).
  SmallVector<Value> gstride(rank);
  Value stride = one;
  for (int64_t d = rank - 1; d >= 0; --d) {
    gstride[d] = stride;
    stride = b.create<arith::MulIOp>(loc, stride, gshape[d]);
  }

  Type element = type.getElementType();
  Type storeType = element.isInteger(1) ? b.getI8Type() : element;
  auto rows = b.create<scf::ForOp>(loc, rowBegin, rowEnd, one);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(rows.getBody());
    Value row = rows.getInductionVar();
    Value rowStart = b.create<arith::MulIOp>(loc, row, rowLength);
    Value colLo = b.create<arith::MaxSIOp>(loc, b.create<arith::SubIOp>(loc, begin, rowStart), zero);
    Value colHi =
        b.create<arith::MinSIOp>(loc, b.create<arith::SubIOp>(loc, end, rowStart), rowLength);
    // Global index of the row along every dim but the last, and the linear index of its start.
    SmallVector<Value> globalIndex(rank);
    Value base = zero, rest = row;
    for (int64_t d = rank - 2; d >= 0; --d) {
      Value local = b.create<arith::RemUIOp>(loc, rest, lshape[d]);
      rest = b.create<arith::DivUIOp>(loc, rest, lshape[d]);
      globalIndex[d] = b.create<arith::AddIOp>(loc, local, off[d]);
      base = b.create<arith::AddIOp>(loc, base,
                                     b.create<arith::MulIOp>(loc, globalIndex[d], gstride[d]));
    }
    if (rank)
      base = b.create<arith::AddIOp>(loc, base, off.back());

    auto cols = b.create<scf::ForOp>(loc, colLo, colHi, one);
    b.setInsertionPointToStart(cols.getBody());
    Value col = cols.getInductionVar();
    Value linear = b.create<arith::AddIOp>(loc, base, col);
    if (rank)
      globalIndex.back() = b.create<arith::AddIOp>(loc, off.back(), col);

    Block &region = fused.getBody().front();
    IRMapping mapping;
    mapping.map(region.getArgument(0), linear);
    for (int64_t d = 0; d < rank; ++d)
      mapping.map(region.getArgument(d + 1), globalIndex[d]);
    for (Operation &op : region.without_terminator())
      b.clone(op, mapping);
    Value value = mapping.lookup(cast<YieldOp>(region.getTerminator()).getValue());
    if (element.isInteger(1))
      value = b.create<arith::ExtUIOp>(loc, b.getI8Type(), value);
    Value localIndex = b.create<arith::AddIOp>(loc, rowStart, col);
    Value address = b.create<LLVM::GEPOp>(loc, ptr, storeType, out, ValueRange{localIndex});
    b.create<LLVM::StoreOp>(loc, value, address);
  }
  b.create<func::ReturnOp>(loc);
  return func;
}

struct PartitionPass : initc::impl::PartitionBase<PartitionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder builder(module.getBodyRegion());
    builder.setInsertionPointToEnd(module.getBody());
    // Identical regions (same ops, constants, keys, rank and type) share a kernel.
    llvm::StringMap<std::string> kernelByRegion;
    int64_t next = 0;
    for (ParamOp param : llvm::to_vector(module.getOps<ParamOp>())) {
      Value yielded = param.getYieldedValue();
      if (!yielded)
        continue;
      auto fused = yielded.getDefiningOp<ElementwiseOp>();
      if (!fused) {
        Operation *op = yielded.getDefiningOp();
        param.emitError() << "'" << (op ? op->getName().getStringRef() : StringRef("argument"))
                          << "' has no native lowering yet; "
                             "only elementwise recipes (run init-fuse-elementwise first) can be "
                             "partitioned";
        return signalPassFailure();
      }
      std::string printed;
      llvm::raw_string_ostream os(printed);
      fused->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
      auto [it, inserted] = kernelByRegion.try_emplace(os.str(), "");
      if (inserted) {
        it->second = "initc_kernel_" + std::to_string(next++);
        buildKernel(builder, fused.getLoc(), it->second, fused);
      }
      param.setKernelAttr(FlatSymbolRefAttr::get(&getContext(), it->second));
      param.getBody().dropAllReferences();
      param.getBody().getBlocks().clear();
    }
    numKernels += next;
  }

  Statistic numKernels{this, "kernels", "native kernels created"};
};
} // namespace
