//===- InitCanonicalize.cpp - folders and canonicalization patterns -------===//
//
// Every rewrite here keeps the bits: constant folding evaluates exactly what the kernels would
// (f32 arithmetic for 16-bit floats, then rounding), and variance_scaling becomes the uniform or
// normal op that the contract defines it to be.
//
//===----------------------------------------------------------------------===//
#include "initc/Dialect/Init/IR/InitOps.h"

#include "initrt/base/rng.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;
using namespace initc::init;

/// The value of an init.fill operand, if it is one.
static std::optional<double> getFillValue(Value value) {
  if (auto fill = value.getDefiningOp<FillOp>())
    return fill.getValue().convertToDouble();
  return std::nullopt;
}

/// Semantics in which an element type's arithmetic is done: f32 for 16-bit floats.
static const llvm::fltSemantics &computeSemantics(Type element) {
  if (element.isF64())
    return llvm::APFloat::IEEEdouble();
  return llvm::APFloat::IEEEsingle();
}

/// Rounds `value` to `element`'s type (via its compute type), returned as a double (exact).
static double roundToElement(double value, Type element) {
  bool lost;
  llvm::APFloat v(value);
  v.convert(computeSemantics(element), llvm::APFloat::rmNearestTiesToEven, &lost);
  if (auto floatType = dyn_cast<FloatType>(element))
    v.convert(floatType.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
  v.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return v.convertToDouble();
}

//===----------------------------------------------------------------------===//
// Binary ops: x + (-0), x - (+0), x * 1, x / 1 fold to x; two fills fold to a fill.
//===----------------------------------------------------------------------===//

/// True if `value` is a fill of exactly `identity`, sign of zero included: x + (+0) is +0, not
/// x, when x is -0, so only -0 is the identity of addition (and +0 that of subtraction).
static bool isFillOf(Value value, double identity) {
  auto fill = getFillValue(value);
  return fill && *fill == identity && std::signbit(*fill) == std::signbit(identity);
}

static OpFoldResult foldIdentity(Value lhs, Value rhs, double identity) {
  if (isFillOf(rhs, identity))
    return lhs;
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor) {
  if (isFillOf(getLhs(), -0.0))
    return getRhs();
  return foldIdentity(getLhs(), getRhs(), -0.0);
}
OpFoldResult SubOp::fold(FoldAdaptor) { return foldIdentity(getLhs(), getRhs(), 0.0); }
OpFoldResult MulOp::fold(FoldAdaptor) {
  if (isFillOf(getLhs(), 1.0))
    return getRhs();
  return foldIdentity(getLhs(), getRhs(), 1.0);
}
OpFoldResult DivOp::fold(FoldAdaptor) { return foldIdentity(getLhs(), getRhs(), 1.0); }

namespace {
/// op(fill a, fill b) -> fill(op(a, b)) evaluated in the compute semantics.
template <typename Op>
struct FoldFillBinary : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    auto a = getFillValue(op.getLhs()), b = getFillValue(op.getRhs());
    if (!a || !b)
      return failure();
    Type element = op.getType().getElementType();
    const auto &sem = computeSemantics(element);
    bool lost;
    llvm::APFloat x(roundToElement(*a, element)), y(roundToElement(*b, element));
    x.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost);
    y.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost);
    auto rm = llvm::APFloat::rmNearestTiesToEven;
    if constexpr (std::is_same_v<Op, AddOp>)
      x.add(y, rm);
    else if constexpr (std::is_same_v<Op, SubOp>)
      x.subtract(y, rm);
    else if constexpr (std::is_same_v<Op, MulOp>)
      x.multiply(y, rm);
    else
      x.divide(y, rm);
    x.convert(llvm::APFloat::IEEEdouble(), rm, &lost);
    double result = roundToElement(x.convertToDouble(), element);
    rewriter.replaceOpWithNewOp<FillOp>(op, op.getType(), rewriter.getF64FloatAttr(result));
    return success();
  }
};
} // namespace

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<FoldFillBinary<AddOp>>(context);
}
void SubOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<FoldFillBinary<SubOp>>(context);
}
void MulOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<FoldFillBinary<MulOp>>(context);
}
void DivOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<FoldFillBinary<DivOp>>(context);
}

namespace {
/// pow(fill a, fill b) -> fill(pow_f(a, b)), in f32 as the kernels compute it.
struct FoldFillPow : OpRewritePattern<PowOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PowOp op, PatternRewriter &rewriter) const override {
    auto a = getFillValue(op.getLhs()), b = getFillValue(op.getRhs());
    if (!a || !b)
      return failure();
    Type element = op.getType().getElementType();
    float x = static_cast<float>(roundToElement(*a, element));
    float y = static_cast<float>(roundToElement(*b, element));
    double result = roundToElement(initrt::rng::powF(x, y), element);
    rewriter.replaceOpWithNewOp<FillOp>(op, op.getType(), rewriter.getF64FloatAttr(result));
    return success();
  }
};
} // namespace

void PowOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<FoldFillPow>(context);
}

//===----------------------------------------------------------------------===//
// clamp(fill) -> fill
//===----------------------------------------------------------------------===//

namespace {
struct FoldFillClamp : OpRewritePattern<ClampOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ClampOp op, PatternRewriter &rewriter) const override {
    auto value = getFillValue(op.getOperand());
    if (!value || std::isnan(*value))
      return failure();
    Type element = op.getType().getElementType();
    double lo = roundToElement(op.getMin().convertToDouble(), element);
    double hi = roundToElement(op.getMax().convertToDouble(), element);
    double v = std::min(std::max(roundToElement(*value, element), lo), hi);
    rewriter.replaceOpWithNewOp<FillOp>(op, op.getType(), rewriter.getF64FloatAttr(v));
    return success();
  }
};
} // namespace

void ClampOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<FoldFillClamp>(context);
}

//===----------------------------------------------------------------------===//
// select and cast
//===----------------------------------------------------------------------===//

OpFoldResult SelectOp::fold(FoldAdaptor) {
  if (getTrueValue() == getFalseValue())
    return getTrueValue();
  if (auto mask = getFillValue(getCondition()))
    return *mask != 0 ? getTrueValue() : getFalseValue();
  return {};
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return {};
}

//===----------------------------------------------------------------------===//
// variance_scaling -> uniform / normal (the contract defines it as exactly that op)
//===----------------------------------------------------------------------===//

namespace {
struct ExpandVarianceScaling : OpRewritePattern<VarianceScalingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(VarianceScalingOp op, PatternRewriter &rewriter) const override {
    double variance = op.getScale().convertToDouble() / op.getFan();
    if (op.getDistribution() == Distribution::uniform) {
      double bound = std::sqrt(3.0 * variance);
      rewriter.replaceOpWithNewOp<UniformOp>(op, op.getType(), rewriter.getF64FloatAttr(-bound),
                                             rewriter.getF64FloatAttr(bound),
                                             op.getStreamAttr());
    } else {
      rewriter.replaceOpWithNewOp<NormalOp>(op, op.getType(), rewriter.getF64FloatAttr(0.0),
                                            rewriter.getF64FloatAttr(std::sqrt(variance)),
                                            op.getStreamAttr());
    }
    return success();
  }
};
} // namespace

void VarianceScalingOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                    MLIRContext *context) {
  results.add<ExpandVarianceScaling>(context);
}
