// The kernel ABI in MLIR: how a function that the runtime calls as initrt::KernelFn is written.
//
//   func.func @k(%out: !llvm.ptr {llvm.noalias, llvm.nocapture},
//                %globalShape: !llvm.ptr {llvm.noalias, llvm.nocapture, llvm.readonly},
//                %offset: !llvm.ptr {llvm.noalias, llvm.nocapture, llvm.readonly},
//                %localShape: !llvm.ptr {llvm.noalias, llvm.nocapture, llvm.readonly},
//                %begin: i64, %end: i64,
//                %args: !llvm.ptr {llvm.noalias, llvm.nocapture, llvm.readonly})
//
// Plain pointers and i64 lower one to one to the C signature (no memref descriptors at the
// boundary, no llvm.emit_c_interface). Inside, read shapes with llvm.getelementptr + llvm.load,
// or view a pointer as a memref with viewPointerAsMemRef and use memref/vector ops.
// See ir-spec/lowering.md.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace initc {

/// Argument positions of a kernel function.
enum KernelArg : unsigned {
  kKernelOut = 0,
  kKernelGlobalShape,
  kKernelOffset,
  kKernelLocalShape,
  kKernelBegin,
  kKernelEnd,
  kKernelArgs, // const uint64_t *: the parameter's kernel_args (its Philox keys)
  kKernelNumArgs
};

/// (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr) -> ().
mlir::FunctionType getKernelFunctionType(mlir::MLIRContext *ctx);

/// True if `func` has the kernel signature.
bool hasKernelSignature(mlir::func::FuncOp func);

/// Creates a public kernel `name` at the builder's insertion point, with the ABI signature, the
/// argument attributes above and an empty entry block. The insertion point is left unchanged.
mlir::func::FuncOp createKernelFunction(mlir::OpBuilder &builder, mlir::Location loc,
                                        llvm::StringRef name);

/// Views `ptr` (an !llvm.ptr) as a `memref<?x elementType>` of `size` elements (an index
/// value), contiguous, offset 0. Lowering folds the view away: memref.load/store and
/// vector.load/store on it become plain loads and stores through `ptr`.
mlir::Value viewPointerAsMemRef(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value ptr,
                                mlir::Type elementType, mlir::Value size);

} // namespace initc
