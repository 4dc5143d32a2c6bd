//===- CanonicalNaN.h - the one NaN a kernel stores ---===//
//
// Private to InitToKernels: see SliceKernel.cpp for how the kernel is built.
//
//===----------------------------------------------------------------------===//
#ifndef INITC_CONVERSION_INITTOKERNELS_CANONICALNAN_H
#define INITC_CONVERSION_INITTOKERNELS_CANONICALNAN_H

#include "mlir/IR/Block.h"

namespace initc::slice_kernel {

/// Rewrites the fused region `region` so that the element it yields, where it is NaN, is the
/// canonical NaN of its type (ir-spec/rng.md rule 9), on every path the kernel stores it by:
/// an f32 or f64 value through a compare and a select; a 16-bit value before its conversion
/// (the same on the f32 operand), or in rule 8's own NaN case, which then costs nothing. A
/// conversion that rule 8 proves never NaN (marked, or rounded without the NaN case) is left
/// alone, and so is a value of no float type.
void canonicalizeStoredNaN(mlir::Block &region);

} // namespace initc::slice_kernel

#endif // INITC_CONVERSION_INITTOKERNELS_CANONICALNAN_H
