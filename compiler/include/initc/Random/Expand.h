//===- Expand.h - The RNG contract as arith/math IR -------------*- C++ -*-===//
//
// Builders that expand random sources and the contract's elementary functions into `arith` ops
// (plus IEEE-exact `math.sqrt` and `math.absf`), computing the same bits as the scalar reference
// in runtime/include/initrt/rng.h. Every builder works on scalars or on vectors: the operand type
// decides (i64 or vector<Nxi64> element indices; f32 or vector<NxF32> values), so kernels built
// from them vectorize. No branches, no fused multiply-add, no fast-math flags.
//
// The context must have the arith and math dialects loaded.
//
//===----------------------------------------------------------------------===//

#ifndef INITC_RANDOM_EXPAND_H
#define INITC_RANDOM_EXPAND_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <cmath>
#include <cstdint>

namespace initc::random {

struct PhiloxKey {
  uint32_t k0, k1;
};

// Marks an `arith.select` whose condition is almost always true, such as erfinv's choice of its
// central branch (the tail is taken for |x| > 0.9966 only). Vector kernels may then compute the
// ops only the false operand needs just when some lane of an iteration takes it
// (ir-spec/lowering.md); the values are the same.
inline constexpr llvm::StringLiteral kRarelyFalseAttr = "initc.rarely_false";

// Marks an `arith.truncf` from f32 to bf16 whose operand is never NaN and never subnormal (a
// sample its distribution's parameters prove so, emitConvertToBF16). Rule 8 is IEEE rounding to
// nearest even there, which conversion instructions that flush subnormal inputs to zero (x86's
// vcvtneps2bf16) compute in one step; kernels for CPUs without them expand it into rule 8's
// integer form (ir-spec/lowering.md).
inline constexpr llvm::StringLiteral kNoNaNOrSubnormalAttr = "initc.no_nan_or_subnormal";

// Marks the op giving an f32 sample its distribution's parameters prove never NaN
// (uniformIsNeverNaN and the others below): where a kernel stores it as it is, rule 9's
// canonical NaN cannot apply, and the compare and blend that would give it are left out.
inline constexpr llvm::StringLiteral kNeverNaNAttr = "initc.never_nan";

// On a conversion marked kNoNaNOrSubnormalAttr: an f32 no operand's magnitude exceeds. Up to
// kBF16SplitLimit, rule 8's rounding is three float ops where the integer form takes four or
// five (emitRoundToBF16Words); the split's product overflows above about 5.19e33 (2^112), and
// 2^100 leaves a margin no initializer comes near.
inline constexpr llvm::StringLiteral kMagnitudeBoundAttr = "initc.magnitude_bound";
inline constexpr float kBF16SplitLimit = 0x1p100f;

// What is known of the f32 values rounded to bf16 (rule 8); the rounding takes the cheapest form
// that gives the rule's bits for such values.
enum class BF16Operand {
  Any,      // NaN included: the rule's integer form and its NaN case
  NeverNaN, // the integer form without the NaN case (infinities included)
  // Never NaN nor subnormal, and at most kBF16SplitLimit in magnitude: the high part of the
  // split c = x * 65537, hi = c - (c - x), which is x rounded to nearest even at 8 significant
  // bits wherever x * 65537 does not overflow (the unit test checks every significand).
  ModerateNormal,
};

// What a truncf from f32 to bf16 promises of its operand, by its kNoNaNOrSubnormalAttr and
// kMagnitudeBoundAttr.
BF16Operand bf16OperandOf(mlir::Operation *conversion);

// Rule 1 of ir-spec/rng.md (same as initrt::rng::deriveKey).
PhiloxKey derivePhiloxKey(uint64_t seed, llvm::StringRef name, uint64_t stream);

// Words x0..x3 (i32, shaped like `blockIndex`) of Philox4x32-`rounds` for counter block
// `blockIndex` (i64: the global element index >> 2), counter (lo32, hi32, 0, 0).
std::array<mlir::Value, 4> emitPhilox(mlir::OpBuilder &builder, mlir::Location loc,
                                      mlir::Value blockIndex, PhiloxKey key, int rounds = 10);

// The same with the key known only at run time: `key` is an i64 scalar holding k1 << 32 | k0
// (broadcast when `blockIndex` is a vector). Kernels take it as an argument, so parameters
// whose recipes differ only in their keys share one kernel. Needs the vector dialect for vector
// indices.
std::array<mlir::Value, 4> emitPhilox(mlir::OpBuilder &builder, mlir::Location loc,
                                      mlir::Value blockIndex, mlir::Value key, int rounds = 10);

// Rule 3: i32 word -> f32 in (0, 1).
mlir::Value emitUnitFloat(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value word);

// Distributions of element `index` (i64, global row-major); results are f32. `indexLimit`: no
// index whose value is used reaches it (a tensor's element count): below 2^34, every block
// index is below 2^32 and Philox's counter word x1 is zero (lanes computed only to be masked
// off may be wrong then).
mlir::Value emitUniform(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value index,
                        PhiloxKey key, double low, double high,
                        uint64_t indexLimit = UINT64_MAX);
mlir::Value emitNormal(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value index,
                       PhiloxKey key, double mean, double stdev,
                       uint64_t indexLimit = UINT64_MAX);
mlir::Value emitTruncNormal(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value index,
                            PhiloxKey key, double mean, double stdev, double a, double b,
                            uint64_t indexLimit = UINT64_MAX);
// The same with a run-time key (an i64 holding k1 << 32 | k0, as emitPhilox takes it).
mlir::Value emitUniform(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value index,
                        mlir::Value key, double low, double high,
                        uint64_t indexLimit = UINT64_MAX);
mlir::Value emitNormal(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value index,
                       mlir::Value key, double mean, double stdev,
                       uint64_t indexLimit = UINT64_MAX);
mlir::Value emitTruncNormal(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value index,
                            mlir::Value key, double mean, double stdev, double a, double b,
                            uint64_t indexLimit = UINT64_MAX);

// Whether every sample of the distribution is a number (finite or infinite, never NaN), from
// its parameters alone: what the code the builders above emit computes, for every word.
bool uniformIsNeverNaN(double low, double high);
bool normalIsNeverNaN(double mean, double stdev);
bool truncNormalIsNeverNaN(double mean, double stdev, double a, double b);

// A bound on the magnitude of every sample of the distribution, from its parameters alone
// (infinity where there is none): a number no sample's exceeds.
float uniformMagnitudeBound(double low, double high);
float normalMagnitudeBound(double mean, double stdev);
float truncNormalMagnitudeBound(double mean, double stdev, double a, double b);

// Whether no sample of the distribution is subnormal (every one is 0, at least 2^-126 in
// magnitude, or NaN), from its parameters alone: every sample is a multiple of a power of two
// no smaller than 2^-126 (ir-spec/rng.md, rule 8).
bool uniformIsNeverSubnormal(double low, double high);
bool normalIsNeverSubnormal(double mean, double stdev);
bool truncNormalIsNeverSubnormal(double mean, double stdev, double a, double b);

// The smallest magnitude of a standard normal sample (rule 5): r * sin or r * cos is never below
// it (the unit test enumerates every u1 and u2 of rule 3 to check it).
inline constexpr float kStandardNormalMin = 0x1.1c5832p-33f;
// Its largest magnitude is below this (u1 >= 2^-24; the same test checks it).
inline constexpr float kStandardNormalMax = 6.0f;

// erfinv(x) is p * x (rule 7); p, a polynomial of x's w, is never below this. The unit test
// evaluates the central polynomial on every multiple of 2^-23 in [-2.6, 2.5) and the tail's on
// every multiple of 2^-22 in [-0.77, 1.2], which hold each w - 2.5 and sqrt(w) - 3 there is.
inline constexpr float kErfinvFactorMin = 0x1.b9eddcp-1f;

// Elementary functions of rule 7, f32 -> f32.
mlir::Value emitLog(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value x);
mlir::Value emitExp(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value x);
// exp(x) - 1 and log(1 + x), accurate near 0 (rule 7's expm1_f and log1p_f).
mlir::Value emitExpm1(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value x);
mlir::Value emitLog1p(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value x);
mlir::Value emitErfinv(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value x);
// x^y as C's powf (rule 7's pow_f): f64 log2 and exp2, rounded once to f32.
mlir::Value emitPow(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value x, mlir::Value y);
// sin(2 pi u) and cos(2 pi u) for a unit float u (rule 3: the contract takes them of no other).
mlir::Value emitSin2Pi(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value u);
mlir::Value emitCos2Pi(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value u);

// Rule 8: f32 -> i16 bits of the rounded bf16 / f16 value. bf16 in integer ops, or by the split
// where `operand` allows; f16 by the IEEE conversion (arith.truncf), which rounds, and treats NaN,
// as the rule's integer form does.
mlir::Value emitRoundToBF16Bits(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value x,
                                BF16Operand operand = BF16Operand::Any);
// Words whose high halves are emitRoundToBF16Bits(x, operand), `operand` not Any: the rounding's
// sum before its shift, or the split's high part. For a caller that takes the high halves by a
// shuffle.
mlir::Value emitRoundToBF16Words(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value x,
                                 BF16Operand operand);
mlir::Value emitRoundToF16Bits(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value x);
// The same f16 rounding as a value: the `arith.truncf` itself.
mlir::Value emitRoundToF16(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value x);
// Rule 8 for an x the caller proves never NaN and never subnormal: `arith.truncf` to bf16 marked
// kNoNaNOrSubnormalAttr, and kMagnitudeBoundAttr where `magnitudeBound` is finite (a bf16
// value, not its bits).
mlir::Value emitConvertToBF16(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value x,
                              float magnitudeBound = INFINITY);

} // namespace initc::random

#endif // INITC_RANDOM_EXPAND_H
