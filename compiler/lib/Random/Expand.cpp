//===- Expand.cpp - The RNG contract as arith/math IR ---------------------===//
//
// Each function mirrors its scalar twin in initrt/rng.h operation by operation: same constants,
// same order of roundings, `?:` becoming arith.select. Keep the two in lockstep; the unit test
// random_expand_test.cpp compares them bit for bit.
//
//===----------------------------------------------------------------------===//

#include "initc/Random/Expand.h"

#include "initrt/base/rng.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/bit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

using namespace mlir;

namespace initc::random {
namespace {

namespace rng = initrt::rng;

// Emits arith ops on operands that are all scalars or all vectors of one shape, so that each
// expansion reads like the scalar code it mirrors.
class ElementwiseBuilder {
public:
  ElementwiseBuilder(OpBuilder &b, Location loc, Type like) : b(b), loc(loc) {
    if (auto vec = dyn_cast<VectorType>(like))
      shape.assign(vec.getShape().begin(), vec.getShape().end());
  }

  Type shaped(Type elem) const {
    return shape.empty() ? elem : VectorType::get(shape, elem);
  }
  Type f32Type() const { return shaped(b.getF32Type()); }
  Type f64Type() const { return shaped(b.getF64Type()); }
  Type intType(unsigned width) const { return shaped(b.getIntegerType(width)); }

  Value constant(TypedAttr scalar) {
    if (shape.empty())
      return b.create<arith::ConstantOp>(loc, scalar);
    auto type = cast<ShapedType>(shaped(scalar.getType()));
    return b.create<arith::ConstantOp>(loc, DenseElementsAttr::get(type, scalar));
  }
  Value f32(float v) { return constant(b.getF32FloatAttr(v)); }
  Value f64(double v) { return constant(b.getF64FloatAttr(v)); }
  Value i32(uint32_t v) { return constant(b.getI32IntegerAttr(static_cast<int32_t>(v))); }
  Value i64(uint64_t v) { return constant(b.getI64IntegerAttr(static_cast<int64_t>(v))); }

  // Floating point, one rounding each.
  Value add(Value x, Value y) { return b.create<arith::AddFOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.create<arith::SubFOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<arith::MulFOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.create<arith::DivFOp>(loc, x, y); }
  Value neg(Value x) { return b.create<arith::NegFOp>(loc, x); }
  Value sqrt(Value x) { return b.create<math::SqrtOp>(loc, x); }
  Value abs(Value x) { return b.create<math::AbsFOp>(loc, x); }
  Value cmpf(arith::CmpFPredicate p, Value x, Value y) {
    return b.create<arith::CmpFOp>(loc, p, x, y);
  }
  Value horner(ArrayRef<float> c, Value x) {
    Value p = f32(c[0]);
    for (float ck : c.drop_front())
      p = add(mul(p, x), f32(ck));
    return p;
  }
  Value horner(ArrayRef<double> c, Value x) {
    Value p = f64(c[0]);
    for (double ck : c.drop_front())
      p = add(mul(p, x), f64(ck));
    return p;
  }

  // Integers.
  Value addi(Value x, Value y) { return b.create<arith::AddIOp>(loc, x, y); }
  Value subi(Value x, Value y) { return b.create<arith::SubIOp>(loc, x, y); }
  Value muli(Value x, Value y) { return b.create<arith::MulIOp>(loc, x, y); }
  Value andi(Value x, Value y) { return b.create<arith::AndIOp>(loc, x, y); }
  Value ori(Value x, Value y) { return b.create<arith::OrIOp>(loc, x, y); }
  Value xori(Value x, Value y) { return b.create<arith::XOrIOp>(loc, x, y); }
  Value shl(Value x, Value y) { return b.create<arith::ShLIOp>(loc, x, y); }
  Value shru(Value x, Value y) { return b.create<arith::ShRUIOp>(loc, x, y); }
  Value shrs(Value x, Value y) { return b.create<arith::ShRSIOp>(loc, x, y); }
  Value mins(Value x, Value y) { return b.create<arith::MinSIOp>(loc, x, y); }
  Value maxs(Value x, Value y) { return b.create<arith::MaxSIOp>(loc, x, y); }
  Value cmpi(arith::CmpIPredicate p, Value x, Value y) {
    return b.create<arith::CmpIOp>(loc, p, x, y);
  }
  Value trunc(Value x, unsigned width) {
    return b.create<arith::TruncIOp>(loc, intType(width), x);
  }
  Value zext(Value x, unsigned width) {
    return b.create<arith::ExtUIOp>(loc, intType(width), x);
  }

  // Conversions and selects.
  Value select(Value c, Value x, Value y) { return b.create<arith::SelectOp>(loc, c, x, y); }
  Value bitsOf(Value f) { return b.create<arith::BitcastOp>(loc, intType(32), f); }
  Value floatOf(Value i) { return b.create<arith::BitcastOp>(loc, f32Type(), i); }
  Value toFloat(Value i) { return b.create<arith::SIToFPOp>(loc, f32Type(), i); }
  Value toInt(Value f) { return b.create<arith::FPToSIOp>(loc, intType(32), f); }
  Value bitsOf64(Value d) { return b.create<arith::BitcastOp>(loc, intType(64), d); }
  Value doubleOf(Value i) { return b.create<arith::BitcastOp>(loc, f64Type(), i); }
  Value toDouble(Value i) { return b.create<arith::SIToFPOp>(loc, f64Type(), i); }
  Value widen(Value f) { return b.create<arith::ExtFOp>(loc, f64Type(), f); }
  Value narrow(Value d) { return b.create<arith::TruncFOp>(loc, f32Type(), d); }
  Value sext(Value x, unsigned width) {
    return b.create<arith::ExtSIOp>(loc, intType(width), x);
  }

private:
  OpBuilder &b;
  Location loc;
  SmallVector<int64_t> shape;
};

using arith::CmpFPredicate;
using arith::CmpIPredicate;

// Lane j = index & 3 picks x_j: bit 0 chooses within a pair, bit 1 between pairs.
struct Lane {
  Value odd;  // j & 1
  Value high; // j & 2
};

Lane laneOf(ElementwiseBuilder &e, Value index) {
  Value zero = e.i64(0);
  return Lane{e.cmpi(CmpIPredicate::ne, e.andi(index, e.i64(1)), zero),
              e.cmpi(CmpIPredicate::ne, e.andi(index, e.i64(2)), zero)};
}

Value blockOf(ElementwiseBuilder &e, Value index) { return e.shru(index, e.i64(2)); }

// A Philox key known when the kernel is compiled (folded into the rounds' constants) or only
// when it runs (an i64 `k1 << 32 | k0` argument; the key schedule is computed from it).
struct KeyOperand {
  PhiloxKey constant{0, 0};
  Value packed; // null for a constant key

  KeyOperand(PhiloxKey key) : constant(key) {}
  KeyOperand(Value key) : packed(key) {}
};

std::array<Value, 4> philox(OpBuilder &builder, Location loc, Value blockIndex,
                            const KeyOperand &key, int rounds,
                            uint64_t blockLimit = UINT64_MAX);

// logF of rule 7. Without `anyInput` the caller promises x is a positive normal finite float
// (a unit float, or (1 - v)(1 + v) for |v| < 1): the subnormal scaling and the special values
// then select what is computed anyway, and are left out.
Value logOf(OpBuilder &builder, Location loc, Value x, bool anyInput) {
  ElementwiseBuilder e(builder, loc, x.getType());
  Value sub, xs = x;
  if (anyInput) {
    sub = e.cmpf(CmpFPredicate::OLT, x, e.f32(0x1p-126f));
    xs = e.select(sub, e.mul(x, e.f32(0x1p23f)), x);
  }
  // frexp and rule 7's `small` step at once: subtracting bits(SQRTH) from the bits borrows from
  // the exponent exactly when the mantissa m (in [0.5, 1)) is below SQRTH, so the shifted
  // difference is e (one less when small) and its low 23 bits plus bits(SQRTH) are the bits of
  // m, or of 2m when small: t = that - 1 is (m + m) - 1 or m - 1 (m + m is exact).
  Value sqrtHalfBits = e.i32(llvm::bit_cast<uint32_t>(rng::kSqrtHalf));
  Value centered = e.subi(e.bitsOf(xs), sqrtHalfBits);
  Value exp = e.shrs(centered, e.i32(23));
  if (anyInput)
    exp = e.subi(exp, e.select(sub, e.i32(23), e.i32(0)));
  Value one = e.f32(1.0f);
  Value t = e.sub(e.floatOf(e.addi(e.andi(centered, e.i32(0x007fffff)), sqrtHalfBits)), one);
  Value fe = e.toFloat(exp);
  Value z = e.mul(t, t);
  Value y = e.mul(e.mul(e.horner(rng::kLogPoly, t), t), z);
  y = e.add(y, e.mul(e.f32(rng::kLn2Lo), fe));
  y = e.sub(y, e.mul(e.f32(0.5f), z));
  Value r = e.add(t, y);
  r = e.add(r, e.mul(e.f32(rng::kLn2Hi), fe));
  if (!anyInput)
    return r;
  // Special values, in the reference's order of precedence.
  r = e.select(e.cmpf(CmpFPredicate::UNO, x, x), x, r);
  r = e.select(e.cmpf(CmpFPredicate::OEQ, x, e.f32(INFINITY)), x, r);
  r = e.select(e.cmpf(CmpFPredicate::OLT, x, e.f32(0.0f)), e.f32(NAN), r);
  return e.select(e.cmpf(CmpFPredicate::OEQ, x, e.f32(0.0f)), e.f32(-INFINITY), r);
}

// What the caller knows of erfinv's argument x.
struct ErfinvDomain {
  bool inside = false;  // |x| < 1: no edge, and the log's argument is a positive normal
  bool central = true;  // some x may take the central branch (w < 5)
  bool tail = true;     // some x may take the tail branch (w >= 5)
};

// erfinvF of rule 7; branches the domain rules out are not computed (the select would drop
// them).
Value erfinvOf(OpBuilder &builder, Location loc, Value x, ErfinvDomain d) {
  ElementwiseBuilder e(builder, loc, x.getType());
  Value one = e.f32(1.0f);
  Value w = e.neg(logOf(builder, loc, e.mul(e.sub(one, x), e.add(one, x)), !d.inside));
  Value p;
  if (d.central)
    p = e.horner(rng::kErfinvCentral, e.sub(w, e.f32(2.5f)));
  if (d.tail) {
    Value pt = e.horner(rng::kErfinvTail, e.sub(e.sqrt(w), e.f32(3.0f)));
    if (p) {
      p = e.select(e.cmpf(CmpFPredicate::OLT, w, e.f32(5.0f)), p, pt);
      p.getDefiningOp()->setAttr(kRarelyFalseAttr, builder.getUnitAttr());
    } else {
      p = pt;
    }
  }
  if (d.inside)
    return e.mul(p, x);
  Value edge = e.cmpf(CmpFPredicate::OEQ, e.abs(x), one);
  return e.select(edge, e.mul(x, e.f32(INFINITY)), e.mul(p, x));
}

// The range of uniformFromWord(word, p) over every word, exactly: unit floats run from 2^-24 to
// 1 - 2^-24, and low + width * u is monotonic in u (rounding is monotonic).
std::pair<float, float> uniformRange(rng::UniformParams p) {
  float a = p.low + p.width * 0x1p-24f, b = p.low + p.width * (1.0f - 0x1p-24f);
  return {std::min(a, b), std::max(a, b)};
}

Value uniformFromWord(ElementwiseBuilder &e, OpBuilder &b, Location loc, Value word,
                      rng::UniformParams p) {
  return e.add(e.f32(p.low), e.mul(e.f32(p.width), emitUnitFloat(b, loc, word)));
}

// The block limit of an index limit: blocks of indices below it are below this.
uint64_t blockLimitOf(uint64_t indexLimit) { return (indexLimit >> 2) + ((indexLimit & 3) != 0); }

Value wordAt(ElementwiseBuilder &e, OpBuilder &b, Location loc, Value index,
             const KeyOperand &key, uint64_t indexLimit) {
  std::array<Value, 4> x =
      philox(b, loc, blockOf(e, index), key, rng::kPhiloxRounds, blockLimitOf(indexLimit));
  Lane lane = laneOf(e, index);
  Value low = e.select(lane.odd, x[1], x[0]);
  Value high = e.select(lane.odd, x[3], x[2]);
  return e.select(lane.high, high, low);
}

// Rule 7's S and C: sin t and cos t for |t| <= pi / 4.
std::pair<Value, Value> sinCosOf(ElementwiseBuilder &e, Value t) {
  Value z = e.mul(t, t);
  Value s = e.add(e.mul(e.mul(e.horner(rng::kSinPoly, z), z), t), t);
  Value c = e.mul(e.mul(e.horner(rng::kCosPoly, z), z), z);
  c = e.sub(c, e.mul(e.f32(0.5f), z));
  c = e.add(c, e.f32(1.0f));
  return {s, c};
}

// Whether q (i32) is odd, as a sign-bit test (a blend takes its mask from the sign bit).
Value isOdd(ElementwiseBuilder &e, Value q) {
  return e.cmpi(CmpIPredicate::slt, e.shl(q, e.i32(31)), e.i32(0));
}

// v negated when q & 2: the negation flips the sign bit, as an xor with (q << 30) & 2^31 does.
Value negatedInHalfTurns(ElementwiseBuilder &e, Value v, Value q) {
  Value sign = e.andi(e.shl(q, e.i32(30)), e.i32(0x80000000u));
  return e.floatOf(e.xori(e.bitsOf(v), sign));
}

// Rule 7's reduction for a unit float u (rule 3): u = q / 4 + r exactly, q = round-half-up(4u);
// returns t = r * 2pi. 4u = (2k + 1) 2^-22 is never a half-integer, so rounding it to nearest
// (adding and subtracting 1.5 * 2^23, whose ulp is 1) rounds half up, and q is the low bits of
// the sum. 4u - q is exact, and (4u - q) * (2pi / 4) rounds the same product as
// (u - q / 4) * 2pi: both scalings by 1/4 are exact. Six ops instead of eleven. Takes 4u.
std::pair<Value, Value> reduceQuarterTurns(ElementwiseBuilder &e, Value u4) {
  constexpr float kRound = 0x1.8p23f;
  Value rounded = e.add(u4, e.f32(kRound));
  Value q = e.subi(e.bitsOf(rounded), e.i32(llvm::bit_cast<uint32_t>(kRound)));
  Value r4 = e.sub(u4, e.sub(rounded, e.f32(kRound)));
  return {q, e.mul(r4, e.f32(rng::kTwoPi * 0.25f))};
}

// sin(2 pi u) and cos(2 pi u) of a unit float: sin_q(q) and sin_q(q + 1), sin_q(k) being
// [S, C, -S, -C][k & 3]. The two share the quadrant's parity: cos takes S where sin takes C.
std::pair<Value, Value> sinCosOfQuarterTurns(ElementwiseBuilder &e, Value u4) {
  auto [q, t] = reduceQuarterTurns(e, u4);
  auto [sinT, cosT] = sinCosOf(e, t);
  Value odd = isOdd(e, q);
  Value sine = negatedInHalfTurns(e, e.select(odd, cosT, sinT), q);
  Value cosine = negatedInHalfTurns(e, e.select(odd, sinT, cosT), e.addi(q, e.i32(1)));
  return {sine, cosine};
}

std::pair<Value, Value> sinCos2Pi(ElementwiseBuilder &e, Value u) {
  return sinCosOfQuarterTurns(e, e.mul(u, e.f32(4.0f)));
}

// 4 U(word) of rule 3 as U is built (emitUnitFloat), two binades up: the float 4 * 1.m
// minus 4 (1 - 2^-24), exact as U's subtraction is. One multiply fewer where only 4u is needed.
Value unitFloatTimesFour(ElementwiseBuilder &e, Value word) {
  Value fourAndBits = e.floatOf(e.ori(e.shru(word, e.i32(9)), e.i32(0x40800000)));
  return e.sub(fourAndBits, e.f32(4.0f * (1.0f - 0x1p-24f)));
}

} // namespace

PhiloxKey derivePhiloxKey(uint64_t seed, llvm::StringRef name, uint64_t stream) {
  rng::Key k = rng::deriveKey(seed, std::string_view(name.data(), name.size()), stream);
  return PhiloxKey{k.k0, k.k1};
}

namespace {
std::array<Value, 4> philox(OpBuilder &builder, Location loc, Value blockIndex,
                            const KeyOperand &key, int rounds, uint64_t blockLimit) {
  // The words live in the low halves of i64 values whose high halves are don't-care: every
  // product reads only the low halves (`and` with 2^32 - 1, which a 32x32 -> 64-bit multiply
  // such as pmuludq does for free), xors and adds never carry upward into the low half, and
  // the results are truncated at the end. On vectors this keeps all the rounds in 64-bit lanes,
  // with no narrowing and widening shuffles between them.
  ElementwiseBuilder e(builder, loc, blockIndex.getType());
  Value low = e.i64(0xffffffffu), shift = e.i64(32);
  Value c0 = blockIndex;
  // Below 2^32 blocks the counter's high word is zero: the first round's x0 is then the key,
  // and the second round's product of it a constant.
  Value c1 = blockLimit <= (uint64_t(1) << 32) ? e.i64(0) : e.shru(blockIndex, shift);
  Value c2 = e.i64(0), c3 = e.i64(0);
  uint32_t k0 = key.constant.k0, k1 = key.constant.k1;
  Value kv0, kv1;
  if (key.packed) {
    kv0 = key.packed;
    kv1 = builder.create<arith::ShRUIOp>(
        loc, key.packed, builder.create<arith::ConstantOp>(loc, builder.getI64IntegerAttr(32)));
    if (auto vec = dyn_cast<VectorType>(blockIndex.getType())) {
      kv0 = builder.create<vector::BroadcastOp>(loc, vec, kv0);
      kv1 = builder.create<vector::BroadcastOp>(loc, vec, kv1);
    }
  }
  Value m0 = e.i64(rng::kPhiloxM0), m1 = e.i64(rng::kPhiloxM1);
  for (int r = 0; r < rounds; ++r) {
    if (r > 0) {
      k0 += rng::kPhiloxW0;
      k1 += rng::kPhiloxW1;
      if (kv0) {
        kv0 = e.addi(kv0, e.i64(rng::kPhiloxW0));
        kv1 = e.addi(kv1, e.i64(rng::kPhiloxW1));
      }
    }
    // 32x32 -> 64-bit products; a constant key schedule folds into constants, a run-time one
    // is loop-invariant.
    Value p0 = e.muli(e.andi(c0, low), m0);
    Value p1 = e.muli(e.andi(c2, low), m1);
    Value n0 = e.xori(e.xori(e.shru(p1, shift), c1), kv0 ? kv0 : e.i64(k0));
    Value n2 = e.xori(e.xori(e.shru(p0, shift), c3), kv1 ? kv1 : e.i64(k1));
    c0 = n0, c1 = p1, c2 = n2, c3 = p0;
  }
  return {e.trunc(c0, 32), e.trunc(c1, 32), e.trunc(c2, 32), e.trunc(c3, 32)};
}

Value uniformAt(OpBuilder &builder, Location loc, Value index, const KeyOperand &key,
                double low, double high, uint64_t indexLimit) {
  ElementwiseBuilder e(builder, loc, index.getType());
  return uniformFromWord(e, builder, loc, wordAt(e, builder, loc, index, key, indexLimit),
                         rng::uniformParams(low, high));
}

Value normalAt(OpBuilder &builder, Location loc, Value index, const KeyOperand &key,
               double mean, double stdev, uint64_t indexLimit) {
  ElementwiseBuilder e(builder, loc, index.getType());
  std::array<Value, 4> x = philox(builder, loc, blockOf(e, index), key, rng::kPhiloxRounds,
                                  blockLimitOf(indexLimit));
  Lane lane = laneOf(e, index);
  Value u1 = emitUnitFloat(builder, loc, e.select(lane.high, x[2], x[0]));
  Value u2Times4 = unitFloatTimesFour(e, e.select(lane.high, x[3], x[1]));
  // u1 is a unit float: positive, normal, finite.
  Value r = e.sqrt(e.mul(e.f32(-2.0f), logOf(builder, loc, u1, /*anyInput=*/false)));
  // Even lanes take cos(2 pi u2), odd lanes sin(2 pi u2).
  auto [sine, cosine] = sinCosOfQuarterTurns(e, u2Times4);
  Value even = e.cmpi(CmpIPredicate::eq, e.andi(index, e.i64(1)), e.i64(0));
  Value z = e.mul(r, e.select(even, cosine, sine));
  float m = static_cast<float>(mean), s = static_cast<float>(stdev);
  Value scaled = e.mul(e.f32(s), z);
  // x + 0 is x but for x = -0, and s * z is never zero when |s| * kStandardNormalMin (the least
  // |z|) is normal: a zero mean (every hf init's) then adds nothing, one op fewer.
  if (m == 0.0f && !std::signbit(m) && std::isfinite(s) &&
      std::fabs(s) * kStandardNormalMin >= std::numeric_limits<float>::min())
    return scaled;
  return e.add(e.f32(m), scaled);
}

Value truncNormalAt(OpBuilder &builder, Location loc, Value index, const KeyOperand &key,
                    double mean, double stdev, double a, double b, uint64_t indexLimit) {
  ElementwiseBuilder e(builder, loc, index.getType());
  rng::TruncNormalParams p = rng::truncNormalParams(mean, stdev, a, b);
  Value v = uniformFromWord(e, builder, loc, wordAt(e, builder, loc, index, key, indexLimit), p.v);
  // The range of v is known here: with |v| <= 0.99, w = -log((1 - v)(1 + v)) <= 3.92 and
  // every element takes the central branch (most bounds: +-2 std gives |v| <= 0.955).
  auto [vmin, vmax] = uniformRange(p.v);
  float maxAbs = std::max(std::fabs(vmin), std::fabs(vmax));
  ErfinvDomain domain;
  domain.inside = maxAbs < 1.0f;
  domain.tail = !(maxAbs <= 0.99f);
  Value y = e.add(e.mul(erfinvOf(builder, loc, v, domain), e.f32(p.scale)), e.f32(p.mean));
  Value lo = e.f32(p.a), hi = e.f32(p.b);
  y = e.select(e.cmpf(CmpFPredicate::OLT, y, lo), lo, y);
  return e.select(e.cmpf(CmpFPredicate::OGT, y, hi), hi, y);
}
} // namespace

std::array<Value, 4> emitPhilox(OpBuilder &builder, Location loc, Value blockIndex,
                                PhiloxKey key, int rounds) {
  return philox(builder, loc, blockIndex, key, rounds);
}

std::array<Value, 4> emitPhilox(OpBuilder &builder, Location loc, Value blockIndex, Value key,
                                int rounds) {
  return philox(builder, loc, blockIndex, key, rounds);
}

Value emitUnitFloat(OpBuilder &builder, Location loc, Value word) {
  // Rule 3's (2 (x >> 9) + 1) * 2^-24, as (1 + (x >> 9) * 2^-23) - (1 - 2^-24): the float
  // 1.m has the 23 bits as its mantissa, and the subtraction is exact (Sterbenz: both operands
  // lie in [0.5, 2]). Three ops instead of a shift, an or, a conversion and a multiply.
  ElementwiseBuilder e(builder, loc, word.getType());
  Value oneAndBits = e.floatOf(e.ori(e.shru(word, e.i32(9)), e.i32(0x3f800000)));
  return e.sub(oneAndBits, e.f32(1.0f - 0x1p-24f));
}

Value emitUniform(OpBuilder &builder, Location loc, Value index, PhiloxKey key, double low,
                  double high, uint64_t indexLimit) {
  return uniformAt(builder, loc, index, key, low, high, indexLimit);
}
Value emitUniform(OpBuilder &builder, Location loc, Value index, Value key, double low,
                  double high, uint64_t indexLimit) {
  return uniformAt(builder, loc, index, key, low, high, indexLimit);
}

Value emitNormal(OpBuilder &builder, Location loc, Value index, PhiloxKey key, double mean,
                 double stdev, uint64_t indexLimit) {
  return normalAt(builder, loc, index, key, mean, stdev, indexLimit);
}
Value emitNormal(OpBuilder &builder, Location loc, Value index, Value key, double mean,
                 double stdev, uint64_t indexLimit) {
  return normalAt(builder, loc, index, key, mean, stdev, indexLimit);
}

Value emitTruncNormal(OpBuilder &builder, Location loc, Value index, PhiloxKey key,
                      double mean, double stdev, double a, double b, uint64_t indexLimit) {
  return truncNormalAt(builder, loc, index, key, mean, stdev, a, b, indexLimit);
}
Value emitTruncNormal(OpBuilder &builder, Location loc, Value index, Value key, double mean,
                      double stdev, double a, double b, uint64_t indexLimit) {
  return truncNormalAt(builder, loc, index, key, mean, stdev, a, b, indexLimit);
}

Value emitLog(OpBuilder &builder, Location loc, Value x) {
  return logOf(builder, loc, x, /*anyInput=*/true);
}

Value emitExp(OpBuilder &builder, Location loc, Value x) {
  ElementwiseBuilder e(builder, loc, x.getType());
  Value lo = e.f32(rng::kExpMin), hi = e.f32(rng::kExpMax);
  Value xc = e.select(e.cmpf(CmpFPredicate::OGE, x, lo), x, lo);
  xc = e.select(e.cmpf(CmpFPredicate::OGT, xc, hi), hi, xc);
  Value v = e.add(e.mul(e.f32(rng::kLog2e), xc), e.f32(0.5f));
  Value n = e.toInt(v);
  n = e.select(e.cmpf(CmpFPredicate::OGT, e.toFloat(n), v), e.subi(n, e.i32(1)), n);
  Value fn = e.toFloat(n);
  Value r = e.sub(xc, e.mul(fn, e.f32(rng::kLn2Hi)));
  r = e.sub(r, e.mul(fn, e.f32(rng::kLn2Lo)));
  Value z = e.mul(r, r);
  Value y = e.add(e.add(e.mul(e.horner(rng::kExpPoly, r), z), r), e.f32(1.0f));
  Value n1 = e.shrs(n, e.i32(1));
  Value n2 = e.subi(n, n1);
  Value bias = e.i32(127), mantissaBits = e.i32(23);
  y = e.mul(y, e.floatOf(e.shl(e.addi(n1, bias), mantissaBits)));
  y = e.mul(y, e.floatOf(e.shl(e.addi(n2, bias), mantissaBits)));
  return e.select(e.cmpf(CmpFPredicate::UNO, x, x), x, y);
}

// rng.h scaleByPowerOfTwo: 2^k * y as two exact power-of-two scalings.
static Value scaleByPowerOfTwo(ElementwiseBuilder &e, Value y, Value k) {
  Value k1 = e.shrs(k, e.i32(1));
  Value k2 = e.subi(k, k1);
  Value bias = e.i32(127), mantissaBits = e.i32(23);
  y = e.mul(y, e.floatOf(e.shl(e.addi(k1, bias), mantissaBits)));
  return e.mul(y, e.floatOf(e.shl(e.addi(k2, bias), mantissaBits)));
}

Value emitExpm1(OpBuilder &builder, Location loc, Value x) {
  ElementwiseBuilder e(builder, loc, x.getType());
  Value hx = e.andi(e.bitsOf(x), e.i32(0x7fffffffu));
  Value lo = e.f32(-32.0f), hi = e.f32(90.0f);
  Value xc = e.select(e.cmpf(CmpFPredicate::OGE, x, lo), x, lo);
  xc = e.select(e.cmpf(CmpFPredicate::OGT, xc, hi), hi, xc);
  Value negative = e.cmpf(CmpFPredicate::OLT, xc, e.f32(0.0f));
  Value half = e.select(negative, e.f32(-0.5f), e.f32(0.5f));
  Value kRound = e.toInt(e.add(e.mul(e.f32(rng::kFdInvLn2), xc), half));
  Value kOne = e.select(negative, e.i32(-1), e.i32(1));
  Value k = e.select(e.cmpi(CmpIPredicate::ult, hx, e.i32(0x3f851592u)), kOne, kRound);
  k = e.select(e.cmpi(CmpIPredicate::ule, hx, e.i32(0x3eb17218u)), e.i32(0), k);
  Value fk = e.toFloat(k);
  Value rHi = e.sub(xc, e.mul(fk, e.f32(rng::kFdLn2Hi)));
  Value rLo = e.mul(fk, e.f32(rng::kFdLn2Lo));
  Value r = e.sub(rHi, rLo);
  Value c = e.sub(e.sub(rHi, r), rLo);
  Value hfx = e.mul(e.f32(0.5f), r);
  Value hxs = e.mul(r, hfx);
  Value r1 = e.add(e.f32(1.0f), e.mul(hxs, e.add(e.f32(rng::kExpm1Q1),
                                                 e.mul(hxs, e.f32(rng::kExpm1Q2)))));
  Value t = e.sub(e.f32(3.0f), e.mul(r1, hfx));
  Value q = e.mul(hxs, e.div(e.sub(r1, t), e.sub(e.f32(6.0f), e.mul(r, t))));
  Value atZero = e.sub(r, e.sub(e.mul(r, q), hxs));
  q = e.sub(e.mul(r, e.sub(q, c)), c);
  q = e.sub(q, hxs);
  Value rMinusQ = e.sub(r, q);
  Value atMinusOne = e.sub(e.mul(e.f32(0.5f), rMinusQ), e.f32(0.5f));
  Value atOne = e.select(e.cmpf(CmpFPredicate::OLT, r, e.f32(-0.25f)),
                         e.mul(e.f32(-2.0f), e.sub(q, e.add(r, e.f32(0.5f)))),
                         e.add(e.f32(1.0f), e.mul(e.f32(2.0f), rMinusQ)));
  Value wide = e.sub(scaleByPowerOfTwo(e, e.add(rMinusQ, e.f32(1.0f)), k), e.f32(1.0f));
  Value mantissaBits = e.i32(23);
  Value twoToK = e.floatOf(e.shl(e.addi(k, e.i32(127)), mantissaBits));
  Value twoToMinusK = e.floatOf(e.shl(e.subi(e.i32(127), k), mantissaBits));
  Value middle = e.mul(e.add(rMinusQ, e.sub(e.f32(1.0f), twoToMinusK)), twoToK);
  Value upper = e.mul(e.add(e.sub(rMinusQ, twoToMinusK), e.f32(1.0f)), twoToK);
  auto kIs = [&](CmpIPredicate p, int32_t v) { return e.cmpi(p, k, e.i32(v)); };
  Value y = e.select(kIs(CmpIPredicate::slt, 23), middle, upper);
  y = e.select(e.ori(kIs(CmpIPredicate::slt, 0), kIs(CmpIPredicate::sgt, 56)), wide, y);
  y = e.select(kIs(CmpIPredicate::eq, 1), atOne, y);
  y = e.select(kIs(CmpIPredicate::eq, -1), atMinusOne, y);
  y = e.select(kIs(CmpIPredicate::eq, 0), atZero, y);
  y = e.select(e.cmpi(CmpIPredicate::ult, hx, e.i32(0x33000000u)), x, y);
  y = e.select(e.cmpf(CmpFPredicate::OGT, x, e.f32(rng::kExpm1Overflow)),
               e.f32(std::numeric_limits<float>::infinity()), y);
  Value minusOne = e.andi(e.cmpf(CmpFPredicate::OLT, x, e.f32(0.0f)),
                          e.cmpi(CmpIPredicate::uge, hx, e.i32(rng::kExpm1MinusOneBits)));
  y = e.select(minusOne, e.f32(-1.0f), y);
  return e.select(e.cmpf(CmpFPredicate::UNO, x, x), x, y);
}

Value emitLog1p(OpBuilder &builder, Location loc, Value x) {
  ElementwiseBuilder e(builder, loc, x.getType());
  Value ix = e.bitsOf(x);
  Value one = e.f32(1.0f);
  Value u = e.add(one, x);
  Value iu = e.addi(e.bitsOf(u), e.i32(0x3f800000u - 0x3f3504f3u));
  Value k = e.subi(e.shru(iu, e.i32(23)), e.i32(0x7f));
  Value c = e.select(e.cmpi(CmpIPredicate::sge, k, e.i32(2)), e.sub(one, e.sub(u, x)),
                     e.sub(x, e.sub(u, one)));
  c = e.select(e.cmpi(CmpIPredicate::slt, k, e.i32(25)), e.div(c, u), e.f32(0.0f));
  Value f = e.sub(e.floatOf(e.addi(e.andi(iu, e.i32(0x007fffffu)), e.i32(0x3f3504f3u))), one);
  Value near = e.ori(e.cmpi(CmpIPredicate::ult, ix, e.i32(0x3ed413d0u)),
                     e.andi(e.cmpi(CmpIPredicate::uge, ix, e.i32(0x80000000u)),
                            e.cmpi(CmpIPredicate::ule, ix, e.i32(0xbe95f619u))));
  k = e.select(near, e.i32(0), k);
  c = e.select(near, e.f32(0.0f), c);
  f = e.select(near, x, f);
  Value s = e.div(f, e.add(e.f32(2.0f), f));
  Value z = e.mul(s, s);
  Value w = e.mul(z, z);
  Value t1 = e.mul(w, e.add(e.f32(rng::kLog1pLg[1]), e.mul(w, e.f32(rng::kLog1pLg[3]))));
  Value t2 = e.mul(z, e.add(e.f32(rng::kLog1pLg[0]), e.mul(w, e.f32(rng::kLog1pLg[2]))));
  Value rr = e.add(t2, t1);
  Value hfsq = e.mul(e.mul(e.f32(0.5f), f), f);
  Value dk = e.toFloat(k);
  Value y = e.add(e.mul(s, e.add(hfsq, rr)), e.add(e.mul(dk, e.f32(rng::kFdLn2Lo)), c));
  y = e.add(e.add(e.sub(y, hfsq), f), e.mul(dk, e.f32(rng::kFdLn2Hi)));
  Value inf = e.f32(std::numeric_limits<float>::infinity());
  y = e.select(e.cmpi(CmpIPredicate::ult, e.andi(ix, e.i32(0x7fffffffu)), e.i32(0x33800000u)), x,
               y);
  y = e.select(e.cmpf(CmpFPredicate::OEQ, x, inf), x, y);
  y = e.select(e.cmpf(CmpFPredicate::OLT, x, e.f32(-1.0f)),
               e.f32(std::numeric_limits<float>::quiet_NaN()), y);
  y = e.select(e.cmpf(CmpFPredicate::OEQ, x, e.f32(-1.0f)), e.neg(inf), y);
  return e.select(e.cmpf(CmpFPredicate::UNO, x, x), x, y);
}

// rng.h powMagnitude: |x|^y in f64 for a finite positive x.
static Value powMagnitude(ElementwiseBuilder &e, Value ax, Value y) {
  Value b = e.bitsOf64(e.widen(ax));
  Value e0 = e.subi(e.trunc(e.andi(e.shru(b, e.i64(52)), e.i64(0x7ff)), 32), e.i32(1023));
  Value m = e.doubleOf(e.ori(e.andi(b, e.i64(0x000fffffffffffffull)), e.i64(0x3ff0000000000000ull)));
  Value high = e.cmpf(CmpFPredicate::OGT, m, e.f64(rng::kPowSqrt2));
  m = e.select(high, e.mul(m, e.f64(0.5)), m);
  Value exponent = e.select(high, e.addi(e0, e.i32(1)), e0);
  Value one = e.f64(1.0);
  Value s = e.div(e.sub(m, one), e.add(m, one));
  Value log2m = e.mul(e.mul(s, e.horner(rng::kPowAtanh, e.mul(s, s))), e.f64(rng::kPowTwoOverLn2));
  Value t = e.mul(e.widen(y), e.add(e.toDouble(exponent), log2m));
  Value lo = e.f64(-rng::kPowExponentMax), hi = e.f64(rng::kPowExponentMax);
  t = e.select(e.cmpf(CmpFPredicate::OGE, t, lo), t, lo);
  t = e.select(e.cmpf(CmpFPredicate::OGT, t, hi), hi, t);
  Value v = e.add(t, e.f64(0.5));
  Value n = e.toInt(v);
  n = e.select(e.cmpf(CmpFPredicate::OGT, e.toDouble(n), v), e.subi(n, e.i32(1)), n);
  Value g = e.mul(e.sub(t, e.toDouble(n)), e.f64(rng::kPowLn2));
  Value p = e.horner(rng::kPowExp2, g);
  Value twoToN = e.doubleOf(e.shl(e.sext(e.addi(n, e.i32(1023)), 64), e.i64(52)));
  return e.mul(p, twoToN);
}

Value emitPow(OpBuilder &builder, Location loc, Value x, Value y) {
  ElementwiseBuilder e(builder, loc, x.getType());
  Value zero = e.f32(0.0f), one = e.f32(1.0f);
  Value inf = e.f32(std::numeric_limits<float>::infinity());
  Value nan = e.f32(std::numeric_limits<float>::quiet_NaN());
  Value ax = e.abs(x), ay = e.abs(y);
  Value yBig = e.cmpf(CmpFPredicate::UGE, ay, e.f32(0x1p24f)); // also NaN
  Value yi = e.toInt(e.select(yBig, zero, y));
  Value yExact = e.cmpf(CmpFPredicate::OEQ, e.toFloat(yi), y);
  Value yInt = e.ori(yBig, yExact);
  Value yOdd = e.andi(e.andi(e.cmpf(CmpFPredicate::OLT, ay, e.f32(0x1p24f)), yExact),
                      e.cmpi(CmpIPredicate::ne, e.andi(yi, e.i32(1)), e.i32(0)));
  Value negative = e.andi(e.cmpi(CmpIPredicate::slt, e.bitsOf(x), e.i32(0)), yOdd);
  Value mag = e.narrow(powMagnitude(e, ax, y));
  Value r = e.select(negative, e.neg(mag), mag);
  Value finiteNegative = e.andi(e.cmpf(CmpFPredicate::OLT, x, zero),
                                e.cmpf(CmpFPredicate::OGT, x, e.neg(inf)));
  Value notInt = e.xori(yInt, e.constant(builder.getIntegerAttr(builder.getI1Type(), 1)));
  r = e.select(e.andi(finiteNegative, notInt), nan, r);
  Value xZero = e.cmpf(CmpFPredicate::OEQ, ax, zero);
  Value edge = e.select(e.xori(xZero, e.cmpf(CmpFPredicate::OLT, y, zero)), zero, inf);
  r = e.select(e.ori(xZero, e.cmpf(CmpFPredicate::OEQ, ax, inf)),
               e.select(negative, e.neg(edge), edge), r);
  Value side = e.select(e.xori(e.cmpf(CmpFPredicate::OGT, ax, one),
                               e.cmpf(CmpFPredicate::OGT, y, zero)),
                        zero, inf);
  r = e.select(e.cmpf(CmpFPredicate::OEQ, ay, inf),
               e.select(e.cmpf(CmpFPredicate::OEQ, ax, one), one, side), r);
  r = e.select(e.ori(e.cmpf(CmpFPredicate::UNO, x, x), e.cmpf(CmpFPredicate::UNO, y, y)), nan, r);
  return e.select(e.ori(e.cmpf(CmpFPredicate::OEQ, x, one), e.cmpf(CmpFPredicate::OEQ, y, zero)),
                  one, r);
}

Value emitSin2Pi(OpBuilder &builder, Location loc, Value u) {
  ElementwiseBuilder e(builder, loc, u.getType());
  return sinCos2Pi(e, u).first;
}

Value emitCos2Pi(OpBuilder &builder, Location loc, Value u) {
  ElementwiseBuilder e(builder, loc, u.getType());
  return sinCos2Pi(e, u).second;
}

Value emitErfinv(OpBuilder &builder, Location loc, Value x) {
  return erfinvOf(builder, loc, x, ErfinvDomain{});
}

bool uniformIsNeverNaN(double low, double high) {
  // low + width * u is monotonic in u: finite at both ends, finite everywhere.
  auto [a, b] = uniformRange(rng::uniformParams(low, high));
  return std::isfinite(a) && std::isfinite(b);
}

bool normalIsNeverNaN(double mean, double stdev) {
  // z = r * sin(...) is finite (|z| < 6: u1 >= 2^-24), so mean + stdev * z is finite or
  // infinite when the f32 mean and std are finite.
  return std::isfinite(static_cast<float>(mean)) && std::isfinite(static_cast<float>(stdev));
}

bool truncNormalIsNeverNaN(double mean, double stdev, double a, double b) {
  // Strictly inside (-1, 1), erfinv(v) is finite (the domain truncNormalAt proves as well);
  // times a finite scale plus a finite mean it is a number, and clamping keeps it one.
  rng::TruncNormalParams p = rng::truncNormalParams(mean, stdev, a, b);
  auto [vmin, vmax] = uniformRange(p.v);
  return std::max(std::fabs(vmin), std::fabs(vmax)) < 1.0f && std::isfinite(p.scale) &&
         std::isfinite(p.mean) && !std::isnan(p.a) && !std::isnan(p.b);
}

namespace {
// The exponent of the lowest set bit of finite f's significand: f is a multiple of 2^lsb(f).
// Zero is a multiple of every power of two.
int lowestBitExponent(float f) {
  if (f == 0.0f)
    return std::numeric_limits<int>::max();
  int exponent;
  float m = std::frexp(std::fabs(f), &exponent); // |f| = m * 2^exponent, m in [0.5, 1)
  auto significand = static_cast<uint32_t>(std::ldexp(m, 24));
  return exponent - 24 + llvm::countr_zero(significand);
}

// A sum or product of multiples of 2^a and 2^b, each rounded to f32, is a multiple of 2^min(a, b)
// or 2^(a + b) (a value that is one is exactly representable, or rounds to a coarser grid), so
// that none of it is below the smallest normal 2^-126 but 0.
bool isNormalGrid(int lowestBit) { return lowestBit >= -126; }

// The power of two every sample of low + width * U is a multiple of, U an odd multiple of 2^-24
// (rule 3); nullopt when the parameters are not finite.
std::optional<int> uniformGrid(rng::UniformParams p) {
  if (!std::isfinite(p.low) || !std::isfinite(p.width))
    return std::nullopt;
  int width = lowestBitExponent(p.width);
  return std::min(lowestBitExponent(p.low),
                  width == std::numeric_limits<int>::max() ? width : width - 24);
}

// A product of multiples of 2^a and 2^b is one of 2^(a + b); zero's exponent stays "any".
int productGrid(int a, int b) {
  constexpr int any = std::numeric_limits<int>::max();
  return a == any || b == any ? any : a + b;
}
} // namespace

bool uniformIsNeverSubnormal(double low, double high) {
  std::optional<int> grid = uniformGrid(rng::uniformParams(low, high));
  return grid && isNormalGrid(*grid);
}

bool normalIsNeverSubnormal(double mean, double stdev) {
  // mean + std * z, z an f32 of magnitude kStandardNormalMin or more: a multiple of the ulp of
  // that binade.
  float m = static_cast<float>(mean), s = static_cast<float>(stdev);
  if (!std::isfinite(m) || !std::isfinite(s))
    return false;
  int zBit = std::ilogb(kStandardNormalMin) - 23;
  return isNormalGrid(std::min(lowestBitExponent(m), productGrid(lowestBitExponent(s), zBit)));
}

bool truncNormalIsNeverSubnormal(double mean, double stdev, double a, double b) {
  // erfinv(v) * scale + mean, clamped to [a, b]: erfinv(v) = p * v with p an f32 of at least
  // kErfinvFactorMin, so a multiple of p's lowest bit times v's; a clamped sample is a or b.
  rng::TruncNormalParams p = rng::truncNormalParams(mean, stdev, a, b);
  std::optional<int> v = uniformGrid(p.v);
  if (!v || !std::isfinite(p.scale) || !std::isfinite(p.mean))
    return false;
  auto notSubnormal = [](float x) { return std::fpclassify(x) != FP_SUBNORMAL; };
  int erfinvBit = productGrid(std::ilogb(kErfinvFactorMin) - 23, *v);
  return notSubnormal(p.a) && notSubnormal(p.b) &&
         isNormalGrid(std::min(lowestBitExponent(p.mean),
                               productGrid(lowestBitExponent(p.scale), erfinvBit)));
}

float uniformMagnitudeBound(double low, double high) {
  // Monotonic in u (uniformIsNeverNaN): its ends are its extremes.
  auto [a, b] = uniformRange(rng::uniformParams(low, high));
  return std::isnan(a) || std::isnan(b) ? INFINITY : std::max(std::fabs(a), std::fabs(b));
}

float normalMagnitudeBound(double mean, double stdev) {
  // |mean + std * z| <= |mean| + |std| * 6, each f32 operation's rounding within the slack.
  double bound = (std::fabs(static_cast<float>(mean)) +
                  std::fabs(static_cast<float>(stdev)) * kStandardNormalMax) *
                 (1.0 + 0x1p-20);
  return bound < std::numeric_limits<float>::max() ? static_cast<float>(bound) : INFINITY;
}

float truncNormalMagnitudeBound(double mean, double stdev, double a, double b) {
  // Clamped to [a, b] (a NaN sample aside, which a bound is no use for).
  rng::TruncNormalParams p = rng::truncNormalParams(mean, stdev, a, b);
  return std::isnan(p.a) || std::isnan(p.b) ? INFINITY : std::max(std::fabs(p.a), std::fabs(p.b));
}

Value emitConvertToBF16(OpBuilder &builder, Location loc, Value x, float magnitudeBound) {
  ElementwiseBuilder e(builder, loc, x.getType());
  auto convert = builder.create<arith::TruncFOp>(loc, e.shaped(builder.getBF16Type()), x);
  convert->setAttr(kNoNaNOrSubnormalAttr, builder.getUnitAttr());
  if (std::isfinite(magnitudeBound))
    convert->setAttr(kMagnitudeBoundAttr, builder.getF32FloatAttr(magnitudeBound));
  return convert;
}

BF16Operand bf16OperandOf(Operation *conversion) {
  if (!conversion->hasAttr(kNoNaNOrSubnormalAttr))
    return BF16Operand::Any;
  auto bound = conversion->getAttrOfType<FloatAttr>(kMagnitudeBoundAttr);
  return bound && bound.getValueAsDouble() <= kBF16SplitLimit ? BF16Operand::ModerateNormal
                                                              : BF16Operand::NeverNaN;
}

Value emitRoundToBF16Words(OpBuilder &builder, Location loc, Value x, BF16Operand operand) {
  assert(operand != BF16Operand::Any && "the words have no NaN case");
  ElementwiseBuilder e(builder, loc, x.getType());
  if (operand == BF16Operand::ModerateNormal) {
    // Veltkamp's split at 24 - 16 bits: a multiply and two subtractions on the float ports,
    // where the integer form's test, select and add compete with Philox's (uniform bf16 2-4%
    // faster with AVX2 and x86-64-v4, benchmarks/README.md).
    Value c = e.mul(x, e.f32(65537.0f));
    return e.bitsOf(e.sub(c, e.sub(c, x)));
  }
  Value bits = e.bitsOf(x);
  // Rule 8's B + 0x7fff + ((B >> 16) & 1) as a select of the addend, the one place this file
  // departs from rng.h's form: on AVX-512 a bit test into a mask register and a blend, which
  // leaves the shift port to Philox (bf16 normal kernel 1.04x). The tests check every tie.
  Value odd = e.cmpi(CmpIPredicate::ne, e.andi(bits, e.i32(0x10000)), e.i32(0));
  return e.addi(bits, e.select(odd, e.i32(0x8000), e.i32(0x7fff)));
}

Value emitRoundToBF16Bits(OpBuilder &builder, Location loc, Value x, BF16Operand operand) {
  ElementwiseBuilder e(builder, loc, x.getType());
  if (operand != BF16Operand::Any)
    return e.trunc(e.shru(emitRoundToBF16Words(builder, loc, x, operand), e.i32(16)), 16);
  Value rounded = e.shru(emitRoundToBF16Words(builder, loc, x, BF16Operand::NeverNaN), e.i32(16));
  Value bits = e.bitsOf(x);
  Value nan = e.ori(e.shru(bits, e.i32(16)), e.i32(0x40));
  Value isNan = e.cmpi(CmpIPredicate::ugt, e.andi(bits, e.i32(0x7fffffff)), e.i32(0x7f800000));
  return e.trunc(e.select(isNan, nan, rounded), 16);
}

Value emitRoundToF16(OpBuilder &builder, Location loc, Value x) {
  // IEEE binary16 rounding is what rule 8 spells out in integer ops; the conversion instruction
  // (vcvtps2ph on x86-64-v3, libgcc's __truncsfhf2 without F16C) gives the same bits, NaNs
  // included, in one instruction where the integer form costs some thirty.
  ElementwiseBuilder e(builder, loc, x.getType());
  return builder.create<arith::TruncFOp>(loc, e.shaped(builder.getF16Type()), x);
}

Value emitRoundToF16Bits(OpBuilder &builder, Location loc, Value x) {
  ElementwiseBuilder e(builder, loc, x.getType());
  return builder.create<arith::BitcastOp>(loc, e.intType(16), emitRoundToF16(builder, loc, x));
}

} // namespace initc::random
