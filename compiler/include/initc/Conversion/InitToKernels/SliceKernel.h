//===- SliceKernel.h - a recipe's native kernel over any slice --*- C++ -*-===//
//
// The function init-partition builds for each distinct recipe and target CPU: it computes any
// range of any rank's slice of a parameter, with the values of the RNG contract. See
// compiler/lib/Conversion/InitToKernels/SliceKernel.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef INITC_CONVERSION_INITTOKERNELS_SLICEKERNEL_H
#define INITC_CONVERSION_INITTOKERNELS_SLICEKERNEL_H

#include "initc/Dialect/Init/IR/InitOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace initc {

/// Blocks per vector of the explicitly vectorized block loop, by default: 8 lanes of i64 Philox
/// arithmetic fill two AVX2 registers, and 8 x f32 one. AVX-512 takes 16, so that the float
/// transforms fill its registers too.
inline constexpr int64_t kDefaultVectorBlocks = 8;
inline constexpr int64_t kMaxVectorBlocks = 16;
/// At most this many groups of vector blocks per iteration.
inline constexpr int64_t kMaxGroups = 4;

/// The shape of a kernel's main loop (a target's `CPU:GROUPSxBLOCKS`, then `p` when pipelined):
/// `groups` vectors of `vectorBlocks` blocks per iteration, and whether each iteration computes
/// the next one's Philox rounds beside its own float transforms (software pipelining, for
/// regions whose value is not a function of one Philox word: normal, Box-Muller).
struct VectorLoop {
  int64_t groups = 1;
  int64_t vectorBlocks = kDefaultVectorBlocks;
  bool pipelined = false;
};

/// Builds the kernel `func.func @name(out, globalShape, offset, localShape, begin, end, args)`
/// (KernelABI.h) evaluating `fused`, its main loop shaped as `loop`.
/// `convertsBF16`: the CPU rounds f32 to bf16 in one instruction (AVX512-BF16), which the
/// lowering uses for conversions marked random::kNoNaNOrSubnormalAttr. The ABI is
/// initrt::KernelFn (runtime/include/initrt/program.h).
mlir::func::FuncOp buildKernel(mlir::OpBuilder &builder, mlir::Location loc, llvm::StringRef name,
                               init::ElementwiseOp fused, const VectorLoop &loop,
                               bool convertsBF16);

} // namespace initc

#endif // INITC_CONVERSION_INITTOKERNELS_SLICEKERNEL_H
