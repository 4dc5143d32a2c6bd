// A constant times a unit float rewritten as a multiply of an exact integer conversion: only in
// functions whose CPU has AVX-512, only where every use is such a multiply and the rescaled
// constant is exact, and with the same products. The kernels' values are checked against the
// reference by kernel_reference_test.
#include "initc/Target/LLVMCPU/X86/UnitFloatByConversion.h"
#include "target_pass_testing.h"

#include "llvm/ADT/bit.h"
#include "llvm/IR/Constants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

using namespace llvm;

namespace {

// U(x) as compiler/lib/Random builds it and InstCombine leaves it; `rewrite_N` should end with
// N conversions and no shift, `keep_*` as it is. 0xBFEFFFFFE0000000 is -(1 - 2^-24).
constexpr const char *kUnitFloats = R"ll(
define <16 x float> @rewrite_1(<16 x i32> %x) #0 {
  %s = lshr <16 x i32> %x, splat (i32 9)
  %o = or disjoint <16 x i32> %s, splat (i32 1065353216)
  %f = bitcast <16 x i32> %o to <16 x float>
  %u = fadd <16 x float> %f, splat (float 0xBFEFFFFFE0000000)
  %p = fmul <16 x float> %u, splat (float 0x3FC99999A0000000)
  ret <16 x float> %p
}
define <16 x float> @rewrite_1_two_multiplies(<16 x i32> %x) #0 {
  %s = lshr <16 x i32> %x, splat (i32 9)
  %o = or <16 x i32> %s, splat (i32 1065353216)
  %f = bitcast <16 x i32> %o to <16 x float>
  %u = fsub <16 x float> %f, splat (float 0x3FEFFFFFE0000000)
  %p = fmul <16 x float> splat (float 2.0), %u
  %q = fmul <16 x float> %u, splat (float -3.0)
  %r = fadd <16 x float> %p, %q
  ret <16 x float> %r
}
define float @rewrite_1_scalar(i32 %x) #0 {
  %s = lshr i32 %x, 9
  %o = or i32 %s, 1065353216
  %f = bitcast i32 %o to float
  %u = fadd float %f, 0xBFEFFFFFE0000000
  %p = fmul float %u, 0x7FF0000000000000
  ret float %p
}
define <16 x float> @keep_other_use(<16 x i32> %x) #0 {
  %s = lshr <16 x i32> %x, splat (i32 9)
  %o = or <16 x i32> %s, splat (i32 1065353216)
  %f = bitcast <16 x i32> %o to <16 x float>
  %u = fadd <16 x float> %f, splat (float 0xBFEFFFFFE0000000)
  %p = fmul <16 x float> %u, splat (float 2.0)
  %r = fadd <16 x float> %p, %u
  ret <16 x float> %r
}
define <16 x float> @keep_inexact_rescale(<16 x i32> %x) #0 {
  %s = lshr <16 x i32> %x, splat (i32 9)
  %o = or <16 x i32> %s, splat (i32 1065353216)
  %f = bitcast <16 x i32> %o to <16 x float>
  %u = fadd <16 x float> %f, splat (float 0xBFEFFFFFE0000000)
  %p = fmul <16 x float> %u, splat (float 0x381B38FB80000000)
  ret <16 x float> %p
}
define <16 x float> @keep_other_offset(<16 x i32> %x) #0 {
  %s = lshr <16 x i32> %x, splat (i32 9)
  %o = or <16 x i32> %s, splat (i32 1065353216)
  %f = bitcast <16 x i32> %o to <16 x float>
  %u = fadd <16 x float> %f, splat (float -1.0)
  %p = fmul <16 x float> %u, splat (float 2.0)
  ret <16 x float> %p
}
define <16 x float> @keep_other_shift(<16 x i32> %x) #0 {
  %s = lshr <16 x i32> %x, splat (i32 8)
  %o = or <16 x i32> %s, splat (i32 1065353216)
  %f = bitcast <16 x i32> %o to <16 x float>
  %u = fadd <16 x float> %f, splat (float 0xBFEFFFFFE0000000)
  %p = fmul <16 x float> %u, splat (float 2.0)
  ret <16 x float> %p
}
define <8 x float> @keep_without_avx512(<8 x i32> %x) #1 {
  %s = lshr <8 x i32> %x, splat (i32 9)
  %o = or <8 x i32> %s, splat (i32 1065353216)
  %f = bitcast <8 x i32> %o to <8 x float>
  %u = fadd <8 x float> %f, splat (float 0xBFEFFFFFE0000000)
  %p = fmul <8 x float> %u, splat (float 2.0)
  ret <8 x float> %p
}
attributes #0 = { "target-cpu"="x86-64-v4" }
attributes #1 = { "target-cpu"="x86-64-v3" }
)ll";

unsigned countOpcode(Function &function, unsigned opcode) {
  return initc::testing::instructionsWhere(
      function, [&](Instruction &inst) { return inst.getOpcode() == opcode; });
}

TEST(UnitFloatByConversion, OnlyWhereEveryUseIsAnExactlyRescaledMultiply) {
  std::string why;
  std::unique_ptr<TargetMachine> machine = initc::testing::x86Machine(why);
  if (!machine)
    GTEST_SKIP() << why;
  LLVMContext context;
  std::unique_ptr<Module> module = initc::testing::runOnText(
      context, kUnitFloats, initc::target::UnitFloatByConversionPass(*machine));
  ASSERT_TRUE(module);
  for (Function &function : *module) {
    std::string name = function.getName().str();
    bool rewrite = function.getName().starts_with("rewrite");
    EXPECT_EQ(countOpcode(function, Instruction::UIToFP), rewrite ? 1u : 0u) << name;
    EXPECT_EQ(countOpcode(function, Instruction::LShr), rewrite ? 0u : 1u) << name;
    EXPECT_EQ(countOpcode(function, Instruction::BitCast), rewrite ? 0u : 1u) << name;
  }
  // The rescaled constants: 0.2f * 2^-32, and 2 and -3 times 2^-32.
  auto factors = [&](const char *name) {
    std::vector<float> found;
    for (Instruction &inst : instructions(*module->getFunction(name)))
      if (inst.getOpcode() == Instruction::FMul)
        for (Value *operand : inst.operands())
          if (auto *constant = dyn_cast<Constant>(operand))
            if (auto *splat = dyn_cast_or_null<ConstantFP>(constant->getSplatValue()))
              found.push_back(splat->getValueAPF().convertToFloat());
    return found;
  };
  EXPECT_EQ(factors("rewrite_1"), std::vector<float>{std::ldexp(0.2f, -32)});
  EXPECT_EQ(factors("rewrite_1_two_multiplies"),
            (std::vector<float>{std::ldexp(2.0f, -32), std::ldexp(-3.0f, -32)}));
}

// The rewrite's claim, for every unit float and a range of factors: the products are equal bit
// for bit, wherever c * 2^-32 is exact (the last two factors give subnormal products). Factors
// whose rescaling is not exact are the ones the pass leaves alone.
TEST(UnitFloatByConversion, GivesTheSameProducts) {
  const float factors[] = {
      0.2f,   -0.2f,    1.0f,     3.0f, 0x1.fffffep127f, 0x1p-94f,  0x1.8p-94f, 0x1.234568p-90f,
      1e-20f, -7.5e10f, INFINITY, 0.0f, -0.0f,           0x1p-100f, 0x1.8p-110f};
  for (float c : factors) {
    float rescaled = std::ldexp(c, -32);
    ASSERT_EQ(llvm::bit_cast<uint32_t>(std::ldexp(rescaled, 32)), llvm::bit_cast<uint32_t>(c))
        << c << " has no exact rescaling";
    for (uint32_t m = 0; m < (1u << 23); ++m) {
      uint32_t x = (m << 9) | (m * 0x9e37u & 0x1ffu); // the low 9 bits play no part
      float unit = llvm::bit_cast<float>((x >> 9) | 0x3f800000u) - (1.0f - 0x1p-24f);
      float converted = float((x & 0xfffffe00u) | 0x100u);
      float expected = c * unit, got = rescaled * converted;
      ASSERT_EQ(llvm::bit_cast<uint32_t>(got), llvm::bit_cast<uint32_t>(expected))
          << "c = " << c << ", x = " << x;
    }
  }
}

} // namespace
