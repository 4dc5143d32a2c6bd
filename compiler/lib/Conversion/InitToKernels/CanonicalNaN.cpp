//===- CanonicalNaN.cpp - the one NaN a kernel stores ---===//
#include "CanonicalNaN.h"

#include "initc/Conversion/InitToKernels/SliceKernel.h"
#include "initc/Random/Expand.h"
#include "initrt/base/rng.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

namespace initc::slice_kernel {
using namespace mlir;
namespace rng = initrt::rng;

namespace {

bool isConstantInt(Value v, int64_t expected) {
  APInt value;
  return matchPattern(v, m_ConstantInt(&value)) && value == expected;
}

// The canonical NaN of an f32 or f64 (or the bits of a 16-bit) type, from rng.h's single copy.
APInt canonicalBits(Type type) {
  if (type.isF64())
    return APInt(64, rng::kCanonicalNaNF64);
  if (type.isF32())
    return APInt(32, rng::kCanonicalNaNF32);
  return APInt(16, type.isBF16() ? rng::kCanonicalNaNBF16 : rng::kCanonicalNaNF16);
}

// x, or the canonical NaN where x is NaN: a compare and a blend.
Value canonicalized(OpBuilder &b, Location loc, Value x) {
  auto type = cast<FloatType>(x.getType());
  Value isNaN = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, x, x);
  Value nan = b.create<arith::ConstantOp>(
      loc, b.getFloatAttr(type, APFloat(type.getFloatSemantics(), canonicalBits(type))));
  return b.create<arith::SelectOp>(loc, isNaN, nan, x);
}

// The same on the bits of a 16-bit float: |bits| above infinity's is a NaN.
Value canonicalized16(OpBuilder &b, Location loc, Value x) {
  Type i16 = b.getI16Type();
  auto constant = [&](uint64_t v) {
    return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(i16, v)).getResult();
  };
  Value bits = b.create<arith::BitcastOp>(loc, i16, x);
  Value magnitude = b.create<arith::AndIOp>(loc, bits, constant(0x7fff));
  Value isNaN = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ugt, magnitude,
                                        constant(x.getType().isBF16() ? 0x7f80 : 0x7c00));
  Value nan = constant(canonicalBits(x.getType()).getZExtValue());
  return b.create<arith::BitcastOp>(loc, x.getType(),
                                    b.create<arith::SelectOp>(loc, isNaN, nan, bits));
}

// Rule 8's bf16 rounding in integer ops (random::emitRoundToBF16Bits), as the i32 value whose
// low half is the bf16: `select(isNaN, (B >> 16) | 0x40, rounded)` with its NaN case, or
// `words >> 16` without one (a sample the parameters prove never NaN). Returns the select of
// the NaN case, null for the form without, and fails for anything else.
FailureOr<arith::SelectOp> bf16RoundingNaNCase(Value bits) {
  auto truncate = bits.getDefiningOp<arith::TruncIOp>();
  if (!truncate || !truncate.getIn().getType().isInteger(32))
    return failure();
  Value word = truncate.getIn();
  if (auto shift = word.getDefiningOp<arith::ShRUIOp>(); shift && isConstantInt(shift.getRhs(), 16))
    return arith::SelectOp();
  auto select = word.getDefiningOp<arith::SelectOp>();
  auto quiet = select ? select.getTrueValue().getDefiningOp<arith::OrIOp>() : nullptr;
  auto high = quiet ? quiet.getLhs().getDefiningOp<arith::ShRUIOp>() : nullptr;
  if (!high || !isConstantInt(quiet.getRhs(), 0x40) || !isConstantInt(high.getRhs(), 16))
    return failure();
  return select;
}

} // namespace

void canonicalizeStoredNaN(Block &region) {
  auto yield = cast<init::YieldOp>(region.getTerminator());
  Value value = yield.getValue();
  Type type = value.getType();
  if (!isa<FloatType>(type))
    return;
  Location loc = yield.getLoc();
  OpBuilder b(yield);
  if (type.isF32() || type.isF64()) {
    // A sample stored as it is (f64: widened exactly) that its parameters prove never NaN.
    Value sample = value;
    if (auto widened = value.getDefiningOp<arith::ExtFOp>())
      sample = widened.getIn();
    Operation *def = sample.getDefiningOp();
    if (def && def->hasAttr(random::kNeverNaNAttr))
      return;
    yield->setOperand(0, canonicalized(b, loc, value));
    return;
  }
  // A 16-bit conversion: its operand made canonical, whose rounding is the canonical 16-bit NaN.
  if (auto conversion = value.getDefiningOp<arith::TruncFOp>()) {
    if (conversion->hasAttr(random::kNoNaNOrSubnormalAttr))
      return;
    b.setInsertionPoint(conversion);
    conversion->setOperand(0, canonicalized(b, loc, conversion.getIn()));
    return;
  }
  // Rule 8's integer rounding: its NaN case gives the canonical NaN instead of the quieted
  // input, one constant where it took a shift and an or.
  if (auto bits = value.getDefiningOp<arith::BitcastOp>()) {
    FailureOr<arith::SelectOp> nanCase = bf16RoundingNaNCase(bits.getIn());
    if (succeeded(nanCase) && type.isBF16()) {
      if (arith::SelectOp select = *nanCase) {
        Operation *quiet = select.getTrueValue().getDefiningOp();
        Operation *high = quiet->getOperand(0).getDefiningOp();
        b.setInsertionPoint(select);
        select->setOperand(1, b.create<arith::ConstantOp>(
                                  loc, b.getI32IntegerAttr(rng::kCanonicalNaNBF16)));
        for (Operation *unused : {quiet, high})
          if (unused->use_empty())
            unused->erase();
      }
      return;
    }
  }
  yield->setOperand(0, canonicalized16(b, loc, value));
}

} // namespace initc::slice_kernel
