//===- FuseElementwise.cpp - one scalar region per parameter --------------===//
//
// Evaluates a parameter's tensor ops element by element: each op becomes the scalar arith that
// computes one element of it from the element's global index, so the parameter needs no
// intermediate tensor. Scalars are carried in a compute type (f32 for 16-bit floats and f32, f64
// for f64, i1 for masks, i64 for integers) and rounded to the op's element type after every op,
// which is what evaluating the ops one by one would give.
//
// Philox keys are not constants of the region: each is a trailing region argument whose value
// is in the op's `args`, so that parameters with the same recipe get identical regions and share
// one kernel, which reads the keys at run time. So the region is built once per recipe: a
// parameter whose body is equivalent to an earlier one's yields `init.elementwise_like` of it,
// with its own keys.
//
//===----------------------------------------------------------------------===//
#include "initc/Random/Expand.h"
#include "initc/Transforms/Passes.h"
#include "initrt/base/rng.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Threading.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>
#include <limits>

namespace initc {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "initc/Transforms/Passes.h.inc"
} // namespace initc

using namespace mlir;
using namespace initc;
using namespace initc::init;

namespace {

/// The Philox key of `stream` of parameter `name`, as a region argument holds it: k1 << 32 | k0.
int64_t packedKey(uint64_t seed, StringRef name, int64_t stream) {
  auto k =
      initrt::rng::deriveKey(seed, std::string_view(name.data(), name.size()), (uint64_t)stream);
  return (int64_t)(((uint64_t)k.k1 << 32) | k.k0);
}

/// Builds the scalar computation of one element of every op of a parameter body.
class ElementEmitter {
public:
  ElementEmitter(OpBuilder &b, Location loc, uint64_t seed, StringRef paramName, Block *block)
      : b(b), loc(loc), seed(seed), paramName(paramName), block(block),
        linear(block->getArgument(0)),
        dims(llvm::to_vector_of<Value>(block->getArguments().drop_front())) {}

  /// The values of the key arguments appended to the block, in order.
  ArrayRef<int64_t> keyArgs() const { return keyValues; }
  /// The streams of those keys, in the same order.
  ArrayRef<int64_t> keyStreams() const { return streams; }

  /// The element of `value` in its compute type; failure for ops that are not elementwise.
  FailureOr<Value> emit(Value value);
  /// After emit failed: the op it could not turn into an element.
  Operation *unsupported() const { return failedOp; }

  /// Converts a compute-type scalar to the storage element type.
  Value toElement(Value scalar, Type element);

private:
  /// The element of `value`, whose operands' elements are emitted already.
  FailureOr<Value> emitOp(Value value);

  OpBuilder &b;
  Location loc;
  uint64_t seed;
  StringRef paramName;
  Block *block;
  Value linear;
  SmallVector<Value> dims; // a copy: adding key arguments may move the block's argument list
  DenseMap<Value, Value> cache;
  Operation *failedOp = nullptr;
  DenseMap<int64_t, Value> keyByStream;
  // Widened bf16/f16 values -> the 16-bit value they came from, so that rounding them again
  // (the yield, a second cast) is skipped instead of left to LLVM, which cannot see that the
  // integer bf16 rounding of a widened bf16 is the identity.
  DenseMap<Value, Value> narrowOf;
  // Samples that are never NaN, whose bf16 rounding needs no NaN case.
  DenseSet<Value> neverNaN;
  /// Samples also proven never subnormal: bf16 takes them by a conversion (rule 8).
  DenseSet<Value> neverNaNOrSubnormal;
  /// Samples' magnitude bounds, from their distributions' parameters.
  DenseMap<Value, float> magnitudeBound;
  SmallVector<int64_t> keyValues;
  SmallVector<int64_t> streams;

  Type computeType(Type element) {
    if (element.isF64())
      return b.getF64Type();
    if (isa<FloatType>(element))
      return b.getF32Type();
    return element;
  }
  Value f32(double v) { return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr((float)v)); }
  Value constant(double v, Type type) {
    if (auto ft = dyn_cast<FloatType>(type))
      return b.create<arith::ConstantOp>(loc, b.getFloatAttr(ft, v));
    return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(type, (int64_t)v));
  }
  Value i64(int64_t v) { return b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(v)); }
  /// Rounds a compute-type value to the element type and back (identity for f32/f64/ints).
  Value roundTo(Value scalar, Type element) {
    if (element.isBF16() || element.isF16())
      return fromElement(toElement(scalar, element), element);
    return scalar;
  }
  Value fromElement(Value scalar, Type element);
  Value toI64(Value scalar);
  Value random(Operation *op, Type element);
  /// The region argument holding the key of `stream` (k1 << 32 | k0), added on first use.
  Value key(int64_t stream) {
    if (Value known = keyByStream.lookup(stream))
      return known;
    keyValues.push_back(packedKey(seed, paramName, stream));
    streams.push_back(stream);
    Value arg = block->addArgument(b.getI64Type(), loc);
    keyByStream[stream] = arg;
    return arg;
  }
  Value unaryF32(Value x, Type element, function_ref<Value(Value)> fn) {
    Value v = x;
    if (element.isF64())
      v = b.create<arith::TruncFOp>(loc, b.getF32Type(), v);
    v = fn(v);
    if (element.isF64())
      v = b.create<arith::ExtFOp>(loc, b.getF64Type(), v);
    return v;
  }
  Value convert(Value scalar, Type from, Type to);
  Value fmaF32(Value a, Value x, Value c);
  Value linspace(LinspaceOp op, int64_t count, Value index, Type element);
};

Value ElementEmitter::toElement(Value scalar, Type element) {
  if (Value narrow = narrowOf.lookup(scalar); narrow && narrow.getType() == element)
    return narrow;
  if (element.isBF16()) {
    if (neverNaNOrSubnormal.contains(scalar)) {
      auto bound = magnitudeBound.find(scalar);
      return random::emitConvertToBF16(b, loc, scalar,
                                       bound == magnitudeBound.end() ? INFINITY : bound->second);
    }
    Value bits = random::emitRoundToBF16Bits(
        b, loc, scalar,
        neverNaN.contains(scalar) ? random::BF16Operand::NeverNaN : random::BF16Operand::Any);
    return b.create<arith::BitcastOp>(loc, element, bits);
  }
  // The conversion itself, so that init-partition sees it and orders the f16 lanes it makes.
  if (element.isF16())
    return random::emitRoundToF16(b, loc, scalar);
  return scalar;
}

Value ElementEmitter::fromElement(Value scalar, Type element) {
  Value wide = scalar;
  if (element.isBF16()) {
    // bf16 is the top half of an f32.
    Value bits = b.create<arith::BitcastOp>(loc, b.getI16Type(), scalar);
    Value word = b.create<arith::ExtUIOp>(loc, b.getI32Type(), bits);
    Value shifted = b.create<arith::ShLIOp>(
        loc, word, b.create<arith::ConstantOp>(loc, b.getI32IntegerAttr(16)));
    wide = b.create<arith::BitcastOp>(loc, b.getF32Type(), shifted);
  } else if (element.isF16()) {
    wide = b.create<arith::ExtFOp>(loc, b.getF32Type(), scalar); // exact
  }
  if (wide != scalar)
    narrowOf[wide] = scalar;
  return wide;
}

Value ElementEmitter::toI64(Value scalar) {
  // Toward zero; NaN, infinities and values outside [-2^63, 2^63) give INT64_MIN, as x86's
  // conversion instructions (and so torch on x86) do. fptosi alone is poison there, which LLVM
  // may fold differently from one kernel variant to another.
  Type type = scalar.getType();
  Value inRange = b.create<arith::AndIOp>(
      loc,
      b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGE, scalar, constant(-0x1p63, type)),
      b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, scalar, constant(0x1p63, type)));
  Value safe = b.create<arith::SelectOp>(loc, inRange, scalar, constant(0, type));
  Value converted = b.create<arith::FPToSIOp>(loc, b.getI64Type(), safe);
  return b.create<arith::SelectOp>(loc, inRange, converted,
                                   i64(std::numeric_limits<int64_t>::min()));
}

Value ElementEmitter::convert(Value scalar, Type from, Type to) {
  Type src = computeType(from), dst = computeType(to);
  if (isa<FloatType>(src) && isa<FloatType>(dst)) {
    Value v = scalar;
    if (src.getIntOrFloatBitWidth() < dst.getIntOrFloatBitWidth())
      v = b.create<arith::ExtFOp>(loc, dst, v);
    else if (src.getIntOrFloatBitWidth() > dst.getIntOrFloatBitWidth())
      v = b.create<arith::TruncFOp>(loc, dst, v);
    return roundTo(v, to);
  }
  if (isa<FloatType>(src)) {
    if (dst.isInteger(1)) // nonzero -> true, as torch's bool cast
      return b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNE, scalar, constant(0, src));
    return toI64(scalar);
  }
  if (isa<FloatType>(dst)) {
    Value v = src.isInteger(1) ? b.create<arith::UIToFPOp>(loc, dst, scalar).getResult()
                               : b.create<arith::SIToFPOp>(loc, dst, scalar).getResult();
    return roundTo(v, to);
  }
  if (src.isInteger(1) && dst.isInteger(64))
    return b.create<arith::ExtUIOp>(loc, dst, scalar);
  if (src.isInteger(64) && dst.isInteger(1))
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, scalar, i64(0));
  return scalar;
}

// a * x + c for f32 operands with one rounding, without an FMA instruction (the portable
// kernels have none): a * x is exact in f64; the f64 sum is rounded to odd (TwoSum gives its
// error), and rounding that to f32 is the rounding of the exact value (53 >= 24 + 2).
Value ElementEmitter::fmaF32(Value a, Value x, Value c) {
  Type f64 = b.getF64Type(), i64Type = b.getI64Type();
  auto wide = [&](Value v) { return b.create<arith::ExtFOp>(loc, f64, v).getResult(); };
  Value p = b.create<arith::MulFOp>(loc, wide(a), wide(x));
  Value w = wide(c);
  Value sum = b.create<arith::AddFOp>(loc, p, w);
  Value bb = b.create<arith::SubFOp>(loc, sum, p);
  Value err = b.create<arith::AddFOp>(
      loc, b.create<arith::SubFOp>(loc, p, b.create<arith::SubFOp>(loc, sum, bb)),
      b.create<arith::SubFOp>(loc, w, bb));
  Value bits = b.create<arith::BitcastOp>(loc, i64Type, sum);
  Value inexact = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::ONE, err, constant(0, f64));
  Value even = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                       b.create<arith::AndIOp>(loc, bits, i64(1)), i64(0));
  // The exact value is beyond `sum` (away from zero) when err has sum's sign.
  Value errBits = b.create<arith::BitcastOp>(loc, i64Type, err);
  Value outward = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge,
                                          b.create<arith::XOrIOp>(loc, bits, errBits), i64(0));
  Value odd = b.create<arith::SelectOp>(loc, outward, b.create<arith::AddIOp>(loc, bits, i64(1)),
                                        b.create<arith::SubIOp>(loc, bits, i64(1)));
  Value adjust = b.create<arith::AndIOp>(loc, inexact, even);
  Value rounded = b.create<arith::BitcastOp>(loc, f64,
                                             b.create<arith::SelectOp>(loc, adjust, odd, bits));
  return b.create<arith::TruncFOp>(loc, b.getF32Type(), rounded);
}

// torch.linspace's CPU kernel: step = (end - start) / (n - 1); the first n / 2 elements are
// start + step * k, the others end - step * (n - 1 - k). f32 computes each with one rounding
// (the kernel is built with FMA contraction); 16-bit types round after every operation, the
// integers included (c10's BFloat16 and Half arithmetic).
Value ElementEmitter::linspace(LinspaceOp op, int64_t count, Value index, Type element) {
  Type f32Type = b.getF32Type();
  Value start = roundTo(f32(op.getStart().convertToDouble()), element);
  if (count == 1)
    return start;
  Value end = roundTo(f32(op.getEnd().convertToDouble()), element);
  auto number = [&](Value i) {
    return roundTo(b.create<arith::SIToFPOp>(loc, f32Type, i).getResult(), element);
  };
  Value span = roundTo(b.create<arith::SubFOp>(loc, end, start), element);
  Value step = roundTo(b.create<arith::DivFOp>(loc, span, number(i64(count - 1))), element);
  Value up = number(index);
  Value down = number(b.create<arith::SubIOp>(loc, i64(count - 1), index));
  Value first, second;
  if (element.isF32()) {
    first = fmaF32(step, up, start);
    second = fmaF32(b.create<arith::NegFOp>(loc, step), down, end);
  } else {
    first = roundTo(b.create<arith::AddFOp>(
                        loc, start, roundTo(b.create<arith::MulFOp>(loc, step, up), element)),
                    element);
    second = roundTo(b.create<arith::SubFOp>(
                         loc, end, roundTo(b.create<arith::MulFOp>(loc, step, down), element)),
                     element);
  }
  Value low = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, index, i64(count / 2));
  return b.create<arith::SelectOp>(loc, low, first, second);
}

Value ElementEmitter::random(Operation *op, Type element) {
  // The elements stored are those of the op's tensor: their indices are below its size.
  uint64_t limit = UINT64_MAX;
  if (auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
      type && type.hasStaticShape())
    limit = static_cast<uint64_t>(type.getNumElements());
  Value sample;
  bool number = false, normal = false; // never NaN; never subnormal
  float magnitude = INFINITY;          // no sample's exceeds it
  if (auto u = dyn_cast<UniformOp>(op)) {
    double low = u.getLow().convertToDouble(), high = u.getHigh().convertToDouble();
    sample = random::emitUniform(b, loc, linear, key(u.getStream()), low, high, limit);
    number = random::uniformIsNeverNaN(low, high);
    normal = random::uniformIsNeverSubnormal(low, high);
    magnitude = random::uniformMagnitudeBound(low, high);
  } else if (auto n = dyn_cast<NormalOp>(op)) {
    double mean = n.getMean().convertToDouble(), stdev = n.getStd().convertToDouble();
    sample = random::emitNormal(b, loc, linear, key(n.getStream()), mean, stdev, limit);
    number = random::normalIsNeverNaN(mean, stdev);
    normal = random::normalIsNeverSubnormal(mean, stdev);
    magnitude = random::normalMagnitudeBound(mean, stdev);
  } else if (auto t = dyn_cast<TruncNormalOp>(op)) {
    double mean = t.getMean().convertToDouble(), stdev = t.getStd().convertToDouble();
    double lo = t.getA().convertToDouble(), hi = t.getB().convertToDouble();
    sample =
        random::emitTruncNormal(b, loc, linear, key(t.getStream()), mean, stdev, lo, hi, limit);
    number = random::truncNormalIsNeverNaN(mean, stdev, lo, hi);
    normal = random::truncNormalIsNeverSubnormal(mean, stdev, lo, hi);
    magnitude = random::truncNormalMagnitudeBound(mean, stdev, lo, hi);
  } else if (auto v = dyn_cast<VarianceScalingOp>(op)) {
    // Same bits as the uniform/normal op canonicalization rewrites it to.
    double variance = v.getScale().convertToDouble() / v.getFan();
    if (v.getDistribution() == Distribution::uniform) {
      double bound = std::sqrt(3.0 * variance);
      sample = random::emitUniform(b, loc, linear, key(v.getStream()), -bound, bound, limit);
      number = random::uniformIsNeverNaN(-bound, bound);
      normal = random::uniformIsNeverSubnormal(-bound, bound);
      magnitude = random::uniformMagnitudeBound(-bound, bound);
    } else {
      sample =
          random::emitNormal(b, loc, linear, key(v.getStream()), 0.0, std::sqrt(variance), limit);
      number = random::normalIsNeverNaN(0.0, std::sqrt(variance));
      normal = random::normalIsNeverSubnormal(0.0, std::sqrt(variance));
      magnitude = random::normalMagnitudeBound(0.0, std::sqrt(variance));
    }
  }
  if (number) {
    neverNaN.insert(sample);
    if (Operation *def = sample.getDefiningOp())
      def->setAttr(random::kNeverNaNAttr, b.getUnitAttr());
  }
  if (number && normal)
    neverNaNOrSubnormal.insert(sample);
  magnitudeBound[sample] = magnitude;
  // Samples are f32 (ir-spec/rng.md); f64 parameters get their exact widening.
  if (element.isF64())
    return b.create<arith::ExtFOp>(loc, b.getF64Type(), sample);
  return roundTo(sample, element);
}

FailureOr<Value> ElementEmitter::emit(Value root) {
  // Operands before users, in the order a recursive walk would take, but on a stack of our
  // own: a chain of tens of thousands of ops must not overflow the thread's stack.
  SmallVector<std::pair<Value, unsigned>> stack{{root, 0u}};
  while (!stack.empty()) {
    auto &[value, next] = stack.back();
    if (cache.count(value)) {
      stack.pop_back();
      continue;
    }
    Operation *op = value.getDefiningOp();
    if (next < op->getNumOperands()) {
      Value operand = op->getOperand(next++);
      if (!cache.count(operand))
        stack.push_back({operand, 0u}); // `value` and `next` are not used after this
      continue;
    }
    if (failed(emitOp(value))) {
      failedOp = op;
      return failure();
    }
    stack.pop_back();
  }
  return cache.lookup(root);
}

FailureOr<Value> ElementEmitter::emitOp(Value value) {
  Operation *op = value.getDefiningOp();
  auto type = cast<RankedTensorType>(value.getType());
  Type element = type.getElementType();
  Type compute = computeType(element);
  Value result;

  auto operand = [&](Value v) -> FailureOr<Value> { return cache.lookup(v); };
  auto dim = [&](int64_t d) { return dims[d]; };

  if (isa<UniformOp, NormalOp, TruncNormalOp, VarianceScalingOp>(op)) {
    result = random(op, element);
  } else if (auto fill = dyn_cast<FillOp>(op)) {
    result = roundTo(constant(fill.getValue().convertToDouble(), compute), element);
  } else if (auto iota = dyn_cast<IotaOp>(op)) {
    // start + step * index in f64 (as torch.arange accumulates), then rounded to the type.
    Value index = b.create<arith::SIToFPOp>(loc, b.getF64Type(), dim(iota.getDim()));
    Value v = b.create<arith::AddFOp>(
        loc, constant(iota.getStart().convertToDouble(), b.getF64Type()),
        b.create<arith::MulFOp>(loc, constant(iota.getStep().convertToDouble(), b.getF64Type()),
                                index));
    result = element.isInteger(64) ? toI64(v) : convert(v, b.getF64Type(), element);
  } else if (isa<EyeOp, TrilOp, TriuOp, IndexMaskOp>(op)) {
    Value cond;
    int64_t rank = type.getRank();
    if (isa<EyeOp>(op)) {
      cond = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, dim(0), dim(1));
    } else if (auto mask = dyn_cast<IndexMaskOp>(op)) {
      cond = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, dim(mask.getDim()),
                                     i64(mask.getIndex()));
    } else {
      Value diff = b.create<arith::SubIOp>(loc, dim(rank - 1), dim(rank - 2));
      int64_t k = isa<TrilOp>(op) ? cast<TrilOp>(op).getDiagonal() : cast<TriuOp>(op).getDiagonal();
      cond = b.create<arith::CmpIOp>(
          loc, isa<TrilOp>(op) ? arith::CmpIPredicate::sle : arith::CmpIPredicate::sge, diff, i64(k));
    }
    result = element.isInteger(1) ? cond : convert(cond, b.getI1Type(), element);
  } else if (auto lin = dyn_cast<LinspaceOp>(op)) {
    result = linspace(lin, type.getDimSize(lin.getDim()), dim(lin.getDim()), element);
  } else if (auto rope = dyn_cast<RopeInvFreqOp>(op)) {
    // A table computed here in double precision, indexed by the element's position.
    SmallVector<float> table;
    for (int64_t i = 0; i < type.getDimSize(0); ++i)
      table.push_back((float)(1.0 / std::pow(rope.getTheta().convertToDouble(),
                                             (double)(2 * i) / (double)rope.getHeadDim())));
    auto vecType = VectorType::get({(int64_t)table.size()}, b.getF32Type());
    Value vec = b.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(vecType, ArrayRef<float>(table)));
    Value v = b.create<vector::ExtractElementOp>(loc, vec, dim(0));
    result = convert(v, b.getF32Type(), element);
  } else if (isa<AddOp, SubOp, MulOp, DivOp>(op)) {
    auto l = operand(op->getOperand(0)), r = operand(op->getOperand(1));
    if (failed(l) || failed(r))
      return failure();
    Value v;
    if (isa<AddOp>(op))
      v = b.create<arith::AddFOp>(loc, *l, *r);
    else if (isa<SubOp>(op))
      v = b.create<arith::SubFOp>(loc, *l, *r);
    else if (isa<MulOp>(op))
      v = b.create<arith::MulFOp>(loc, *l, *r);
    else
      v = b.create<arith::DivFOp>(loc, *l, *r);
    result = roundTo(v, element);
  } else if (auto pow = dyn_cast<PowOp>(op)) {
    auto x = operand(pow.getLhs()), y = operand(pow.getRhs());
    if (failed(x) || failed(y))
      return failure();
    Value yf = element.isF64() ? b.create<arith::TruncFOp>(loc, b.getF32Type(), *y) : *y;
    Value v = unaryF32(*x, element, [&](Value xf) { return random::emitPow(b, loc, xf, yf); });
    result = roundTo(v, element);
  } else if (isa<ErfinvOp, ExpOp, LogOp, Expm1Op, Log1pOp>(op)) {
    auto x = operand(op->getOperand(0));
    if (failed(x))
      return failure();
    Value v = unaryF32(*x, element, [&](Value f) {
      if (isa<ErfinvOp>(op))
        return random::emitErfinv(b, loc, f);
      if (isa<ExpOp>(op))
        return random::emitExp(b, loc, f);
      if (isa<Expm1Op>(op))
        return random::emitExpm1(b, loc, f);
      if (isa<Log1pOp>(op))
        return random::emitLog1p(b, loc, f);
      return random::emitLog(b, loc, f);
    });
    result = roundTo(v, element);
  } else if (auto sqrt = dyn_cast<SqrtOp>(op)) {
    auto x = operand(sqrt.getOperand());
    if (failed(x))
      return failure();
    result = roundTo(b.create<math::SqrtOp>(loc, *x), element);
  } else if (auto sign = dyn_cast<SignOp>(op)) {
    auto x = operand(sign.getOperand());
    if (failed(x))
      return failure();
    Value zero = constant(0, compute);
    Value pos = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT, *x, zero);
    Value neg = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, *x, zero);
    Value v = b.create<arith::SelectOp>(loc, neg, constant(-1, compute), zero);
    v = b.create<arith::SelectOp>(loc, pos, constant(1, compute), v);
    // NaN stays NaN; -0 and +0 give +0 as torch.sign does.
    Value isNan = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, *x, *x);
    result = b.create<arith::SelectOp>(loc, isNan, *x, v);
  } else if (auto clamp = dyn_cast<ClampOp>(op)) {
    auto x = operand(clamp.getOperand());
    if (failed(x))
      return failure();
    Value lo = roundTo(constant(clamp.getMin().convertToDouble(), compute), element);
    Value hi = roundTo(constant(clamp.getMax().convertToDouble(), compute), element);
    // Compare-and-select so NaN passes through, as torch.clamp does.
    Value below = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, *x, lo);
    Value v = b.create<arith::SelectOp>(loc, below, lo, *x);
    Value above = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT, v, hi);
    result = b.create<arith::SelectOp>(loc, above, hi, v);
  } else if (auto select = dyn_cast<SelectOp>(op)) {
    auto c = operand(select.getCondition()), t = operand(select.getTrueValue()),
         f = operand(select.getFalseValue());
    if (failed(c) || failed(t) || failed(f))
      return failure();
    result = b.create<arith::SelectOp>(loc, *c, *t, *f);
  } else if (auto cast = dyn_cast<CastOp>(op)) {
    auto x = operand(cast.getOperand());
    if (failed(x))
      return failure();
    result = convert(*x, cast.getOperand().getType().getElementType(), element);
  } else {
    return failure();
  }
  cache[value] = result;
  return result;
}

struct FuseElementwisePass : initc::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    uint64_t seed = getModelSeed(module);
    // Parameters of one recipe (the same ops, attributes and types; names aside) fuse into the
    // same region but for their keys: the first of each is fused, and the others become
    // init.elementwise_like of it, so a model of thousands of expert weights builds one region
    // of hundreds of ops, not thousands.
    SmallVector<ParamOp> params;
    for (ParamOp param : module.getOps<ParamOp>())
      if (needsFusion(param))
        params.push_back(param);
    SmallVector<int> leaderOf(params.size(), -1); // an index into params, or -1 for a leader
    SmallVector<size_t> leaders;
    {
      llvm::DenseMap<unsigned, SmallVector<size_t>> leadersByHash;
      for (auto [index, param] : llvm::enumerate(params)) {
        SmallVector<size_t> &candidates = leadersByHash[recipeHash(param)];
        for (size_t candidate : candidates)
          if (OperationEquivalence::isRegionEquivalentTo(&params[candidate].getBody(),
                                                         &param.getBody(),
                                                         OperationEquivalence::IgnoreLocations)) {
            leaderOf[index] = int(candidate);
            break;
          }
        if (leaderOf[index] < 0) {
          candidates.push_back(index);
          leaders.push_back(index);
        }
      }
    }
    // Leaders fuse on the context's threads, silently: a recipe that cannot be fused is
    // reported below for each of its parameters, in the parameters' order.
    SmallVector<std::optional<SmallVector<int64_t>>> streamsOf(params.size());
    parallelForEach(&getContext(), leaders, [&](size_t index) {
      FailureOr<SmallVector<int64_t>> streams = fuse(params[index], seed, /*report=*/false);
      if (succeeded(streams))
        streamsOf[index] = std::move(*streams);
    });
    SmallVector<ParamOp> unfusable;
    for (auto [index, param] : llvm::enumerate(params)) {
      int leader = leaderOf[index];
      if (leader < 0 ? !streamsOf[index] : !streamsOf[size_t(leader)])
        unfusable.push_back(param);
      else if (leader >= 0)
        useRegionOf(param, params[size_t(leader)], *streamsOf[size_t(leader)], seed);
    }
    if (unfusable.empty())
      return;
    parallelForEach(&getContext(), unfusable,
                    [&](ParamOp param) { (void)fuse(param, seed, /*report=*/true); });
    signalPassFailure();
  }

  /// Whether `param` yields a value that fusion computes element by element.
  static bool needsFusion(ParamOp param) {
    Value yielded = param.getYieldedValue();
    if (!yielded)
      return false;
    Operation *op = yielded.getDefiningOp();
    // Already fused, or not elementwise: orthogonal and loaded values are partitioned by their
    // own strategies.
    return !isa_and_nonnull<ElementwiseOp, ElementwiseLikeOp, OrthogonalOp, LoadOp>(op);
  }

  /// A hash of the ops of `param`'s body that equivalent bodies share.
  static unsigned recipeHash(ParamOp param) {
    llvm::hash_code hash = 0;
    param.getBody().walk([&](Operation *op) {
      hash = llvm::hash_combine(
          hash, OperationEquivalence::computeHash(op, OperationEquivalence::ignoreHashValue,
                                                  OperationEquivalence::ignoreHashValue,
                                                  OperationEquivalence::IgnoreLocations));
    });
    return unsigned(size_t(hash));
  }

  /// Makes `param`, whose body is equivalent to fused `leader`'s before it was fused, yield an
  /// init.elementwise_like of it with its own keys (those of the same streams).
  static void useRegionOf(ParamOp param, ParamOp leader, ArrayRef<int64_t> streams, uint64_t seed) {
    Operation *terminator = param.getBody().front().getTerminator();
    Value yielded = param.getYieldedValue();
    OpBuilder builder(terminator);
    SmallVector<int64_t> keys;
    for (int64_t stream : streams)
      keys.push_back(packedKey(seed, param.getSymName(), stream));
    auto like = builder.create<ElementwiseLikeOp>(
        yielded.getLoc(), yielded.getType(), FlatSymbolRefAttr::get(leader.getSymNameAttr()),
        keys.empty() ? DenseI64ArrayAttr() : builder.getDenseI64ArrayAttr(keys));
    terminator->setOperand(0, like.getResult());
    eraseDeadOps(param, terminator);
  }

  /// Erases every op of `param`'s body but the terminator that nothing uses.
  static void eraseDeadOps(ParamOp param, Operation *terminator) {
    for (Operation &op :
         llvm::make_early_inc_range(llvm::reverse(param.getBody().front().getOperations())))
      if (&op != terminator && op.use_empty())
        op.erase();
  }

  /// Fuses `param`'s body into one init.elementwise; the streams of its keys, in the order of
  /// its trailing arguments. Failure says why at the op that cannot be fused, when `report`.
  static FailureOr<SmallVector<int64_t>> fuse(ParamOp param, uint64_t seed, bool report) {
    Value yielded = param.getYieldedValue();
    auto type = cast<RankedTensorType>(yielded.getType());
    Location loc = yielded.getLoc();
    OpBuilder builder(param.getBody().front().getTerminator());
    auto fused = builder.create<ElementwiseOp>(loc, type);
    Block *block = builder.createBlock(&fused.getBody());
    SmallVector<Type> argTypes(type.getRank() + 1, builder.getI64Type());
    for (Type t : argTypes)
      block->addArgument(t, loc);
    builder.setInsertionPointToStart(block);
    ElementEmitter emitter(builder, loc, seed, param.getSymName(), block);
    FailureOr<Value> element = emitter.emit(yielded);
    if (failed(element)) {
      fused.erase();
      if (!report)
        return failure();
      // Name the op that cannot be fused, at its line, not the yielded op that uses it.
      Operation *culprit = emitter.unsupported();
      // A constant the canonicalizer moved to the top of the body has lost its line (MLIR's
      // folder drops it): the parameter's line stands in, and the message names the op.
      InFlightDiagnostic error =
          isa<UnknownLoc>(culprit->getLoc()) ? param.emitError() : culprit->emitError();
      if (isa<LoadOp>(culprit))
        error << "cannot fuse: 'init.load' reads its values, it does not compute "
                 "them; it can only be the value its parameter yields";
      else if (isa<ElementwiseOp>(culprit))
        error << "cannot fuse: an 'init.elementwise' can only be the value its "
                 "parameter yields; write the ops that use it inside its region";
      else if (isa<ElementwiseLikeOp>(culprit))
        error << "cannot fuse: an 'init.elementwise_like' can only be the value its parameter "
                 "yields; write this parameter's own 'init.elementwise' with the ops that use it "
                 "inside its region";
      else if (isa_and_nonnull<InitDialect>(culprit->getDialect()))
        error << "cannot fuse: '" << culprit->getName()
              << "' is not elementwise and feeds other ops; compute it alone";
      else
        error << "cannot fuse: '" << culprit->getName()
              << "' is not an init op; compute the value with init ops "
                 "(init.fill for a constant, init.elementwise for a formula)";
      return failure();
    }
    Value stored = emitter.toElement(*element, type.getElementType());
    builder.create<YieldOp>(loc, stored);
    // A 16-bit result is computed in f32 and yielded narrow; its widening is left unused.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block->getOperations())))
      if (isOpTriviallyDead(&op))
        op.erase();
    if (!emitter.keyArgs().empty())
      fused.setArgsAttr(builder.getDenseI64ArrayAttr(emitter.keyArgs()));
    // The parameter now yields the fused tensor; everything else in its body is dead.
    Operation *terminator = param.getBody().front().getTerminator();
    terminator->setOperand(0, fused.getResult());
    eraseDeadOps(param, terminator);
    return SmallVector<int64_t>(emitter.keyStreams());
  }
};
} // namespace
