//===- SliceKernel.cpp - a recipe's native kernel over any slice ----------===//
//
// A kernel computes elements [begin, end) of one slice, in local row-major order. It walks the
// slice row by row (a row: all dims but the last fixed) so the inner loop is a plain counted loop
// over the last dim that LLVM vectorizes; each element's global index is offset + local index,
// and its linear index is taken in the global shape, so every rank computes the same value for
// the same element. The ABI is initrt::KernelFn (runtime/include/initrt/program.h).
//
// One Philox block gives four consecutive elements (ir-spec/rng.md rule 2), so the inner loop runs
// over whole blocks of the linear index, evaluating the region for the four elements of a block in
// one iteration: LLVM sees the four Philox evaluations are the same and keeps one. The main loop
// takes 8 blocks at a time on explicit vectors (each op of the region given a vector<8> type, one
// vector per lane of a block, the four interleaved into one store; what depends on the block
// alone, such as the Philox rounds, is built once for the four), so the vector width does not
// depend on LLVM's cost model (ir-spec/lowering.md says why); with AVX-512 it takes 16 blocks
// (vector<16>: zmm floats) and several such groups, cloned op by op so that their independent
// dependency chains interleave (the `targets` option, one kernel per CPU). A region that is a
// function of its element's Philox word alone (uniform, truncated normal) runs on two vectors of
// twice the width instead, the words of two elements side by side as the last Philox round
// leaves them (WordFunction). The partial blocks at either end of a row and the blocks left
// after the iterations run in groups whose masked stores write only the row's elements (a
// region that cannot run on vectors: a scalar block loop that LLVM may vectorize, and scalar
// loops for the partial blocks). A 2-D slice whose rows are whole blocks but shorter than a few
// iterations runs the same vector code across rows instead (ir-spec/lowering.md). A select marked
// rarely false (erfinv's tail branch) computes its false operand on vectors only in iterations
// where some lane takes it. The region's trailing arguments (Philox keys) are read from the
// kernel's `args`, so parameters that differ only in their keys share a kernel.
//
// In this directory: canonicalizeStoredNaN (CanonicalNaN) first makes a NaN the region yields
// the RNG contract's one NaN of its type (rule 9), so that every variant stores the same bits;
// findWordFunction (RegionAnalysis) recognizes a word function;
// planGroupLayout (GroupLayout) decides, once per kernel, how a group of blocks reaches element
// order; GroupEvaluation clones the region onto the vectors of an iteration's groups;
// GroupShuffles puts each group's values in element order; KernelBody builds the loops over
// rows, iterations and masked ends around them. The signature is KernelABI's.
//
//===----------------------------------------------------------------------===//
#include "initc/Conversion/InitToKernels/SliceKernel.h"

#include "KernelBody.h"
#include "initc/Conversion/InitToKernels/KernelABI.h"

using namespace mlir;
using namespace initc;

func::FuncOp initc::buildKernel(OpBuilder &builder, Location loc, StringRef name,
                                init::ElementwiseOp fused, const VectorLoop &loop,
                                bool convertsBF16) {
  // The ABI's argument attributes carry the runtime's promises (ir-spec/lowering.md): `out`
  // overlaps no input array and no pointer is kept, so LLVM vectorizes without run-time alias
  // checks.
  func::FuncOp func = createKernelFunction(builder, loc, name);
  func->setAttr("initc.kernel", builder.getUnitAttr());
  slice_kernel::KernelBody(func, fused, loop, convertsBF16).build();
  return func;
}
