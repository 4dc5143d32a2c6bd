// f32 -> bf16 conversions of 32 lanes rewritten as AVX512-BF16's two-source conversion: only in
// functions whose CPU has it, and with every conversion a shuffle shares left valid. The values
// are checked against the reference by kernel_reference_test on hosts with AVX512-BF16.
#include "initc/Target/LLVMCPU/X86/PairBF16Conversions.h"
#include "target_pass_testing.h"

#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsX86.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

using namespace llvm;
using initc::testing::instructionsWhere;

namespace {

// One function per case: `pairs_N` should end with N two-source conversions and no fptrunc,
// `keep` (its CPU lacks AVX512-BF16) as it is.
constexpr const char *kConversions = R"ll(
define <64 x bfloat> @pairs_2(<16 x float> %a, <16 x float> %b) #0 {
  %x = fptrunc <16 x float> %a to <16 x bfloat>
  %y = fptrunc <16 x float> %b to <16 x bfloat>
  %joined = shufflevector <16 x bfloat> %x, <16 x bfloat> %y, <32 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15, i32 16, i32 17, i32 18, i32 19, i32 20, i32 21, i32 22, i32 23, i32 24, i32 25, i32 26, i32 27, i32 28, i32 29, i32 30, i32 31>
  %mixed = shufflevector <16 x bfloat> %y, <16 x bfloat> %x, <32 x i32> <i32 0, i32 16, i32 1, i32 17, i32 2, i32 18, i32 3, i32 19, i32 4, i32 20, i32 5, i32 21, i32 6, i32 22, i32 7, i32 23, i32 8, i32 24, i32 9, i32 25, i32 10, i32 26, i32 11, i32 27, i32 12, i32 28, i32 13, i32 29, i32 14, i32 30, i32 15, i32 31>
  %both = shufflevector <32 x bfloat> %joined, <32 x bfloat> %mixed, <64 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15, i32 16, i32 17, i32 18, i32 19, i32 20, i32 21, i32 22, i32 23, i32 24, i32 25, i32 26, i32 27, i32 28, i32 29, i32 30, i32 31, i32 32, i32 33, i32 34, i32 35, i32 36, i32 37, i32 38, i32 39, i32 40, i32 41, i32 42, i32 43, i32 44, i32 45, i32 46, i32 47, i32 48, i32 49, i32 50, i32 51, i32 52, i32 53, i32 54, i32 55, i32 56, i32 57, i32 58, i32 59, i32 60, i32 61, i32 62, i32 63>
  ret <64 x bfloat> %both
}
define <32 x bfloat> @pairs_1(<32 x float> %a) #0 {
  %x = fptrunc <32 x float> %a to <32 x bfloat>
  ret <32 x bfloat> %x
}
define <32 x bfloat> @pairs_1_shuffled_first(<16 x float> %a, <16 x float> %b) #0 {
  %s = shufflevector <16 x float> %a, <16 x float> %b, <32 x i32> <i32 0, i32 16, i32 1, i32 17, i32 2, i32 18, i32 3, i32 19, i32 4, i32 20, i32 5, i32 21, i32 6, i32 22, i32 7, i32 23, i32 8, i32 24, i32 9, i32 25, i32 10, i32 26, i32 11, i32 27, i32 12, i32 28, i32 13, i32 29, i32 14, i32 30, i32 15, i32 31>
  %x = fptrunc <32 x float> %s to <32 x bfloat>
  ret <32 x bfloat> %x
}
define <16 x bfloat> @pairs_0_one_vector(<16 x float> %a) #0 {
  %x = fptrunc <16 x float> %a to <16 x bfloat>
  ret <16 x bfloat> %x
}
define <32 x bfloat> @keep(<32 x float> %a) #1 {
  %x = fptrunc <32 x float> %a to <32 x bfloat>
  ret <32 x bfloat> %x
}
attributes #0 = { "target-cpu"="x86-64-v4" "target-features"="+avx512bf16" }
attributes #1 = { "target-cpu"="x86-64-v4" }
)ll";

bool isPairConversion(Instruction &inst) {
  auto *call = dyn_cast<IntrinsicInst>(&inst);
  return call && call->getIntrinsicID() == Intrinsic::x86_avx512bf16_cvtne2ps2bf16_512;
}

TEST(PairBF16Conversions, OnlyWhereTheCpuHasTheInstruction) {
  std::string why;
  std::unique_ptr<TargetMachine> machine = initc::testing::x86Machine(why);
  if (!machine)
    GTEST_SKIP() << why;
  LLVMContext context;
  std::unique_ptr<Module> module = initc::testing::runOnText(
      context, kConversions, initc::target::PairBF16ConversionsPass(*machine));
  ASSERT_TRUE(module);
  auto isConversion = [](Instruction &inst) { return isa<FPTruncInst>(inst); };
  for (Function &function : *module) {
    if (function.isDeclaration())
      continue; // the intrinsic
    std::string name = function.getName().str();
    unsigned pairs = name == "keep" ? 0 : name[6] - '0';
    EXPECT_EQ(instructionsWhere(function, isPairConversion), pairs) << name;
    EXPECT_EQ(instructionsWhere(function, isConversion), pairs ? 0u : 1u) << name;
  }
}

} // namespace
