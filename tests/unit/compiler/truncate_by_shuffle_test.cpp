// The i64 -> i32 vector truncation rewritten as a shuffle: same values, and
// only where it applies.
#include "initc/Target/TruncateByShuffle.h"

#include "llvm/Analysis/ConstantFolding.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace llvm;

namespace {

// One function per case; the name says whether the pass should rewrite it.
constexpr const char *kTruncations = R"ll(
define <16 x i32> @rewrite16(<16 x i64> %x) {
  %t = trunc <16 x i64> %x to <16 x i32>
  ret <16 x i32> %t
}
define <8 x i32> @rewrite8(<8 x i64> %x) {
  %t = trunc <8 x i64> %x to <8 x i32>
  ret <8 x i32> %t
}
define <4 x i32> @rewrite4(<4 x i64> %x) {
  %t = trunc <4 x i64> %x to <4 x i32>
  ret <4 x i32> %t
}
define <2 x i32> @keep_two_lanes(<2 x i64> %x) {
  %t = trunc <2 x i64> %x to <2 x i32>
  ret <2 x i32> %t
}
define <6 x i32> @rewrite6(<6 x i64> %x) {
  %t = trunc <6 x i64> %x to <6 x i32>
  ret <6 x i32> %t
}
define <5 x i32> @keep_odd_lanes(<5 x i64> %x) {
  %t = trunc <5 x i64> %x to <5 x i32>
  ret <5 x i32> %t
}
define <16 x i16> @keep_to_i16(<16 x i64> %x) {
  %t = trunc <16 x i64> %x to <16 x i16>
  ret <16 x i16> %t
}
define <16 x i32> @keep_from_i48(<16 x i48> %x) {
  %t = trunc <16 x i48> %x to <16 x i32>
  ret <16 x i32> %t
}
define i32 @keep_scalar(i64 %x) {
  %t = trunc i64 %x to i32
  ret i32 %t
}
)ll";

std::unique_ptr<Module> parse(LLVMContext &context, const std::string &dataLayout) {
  SMDiagnostic diagnostic;
  std::unique_ptr<Module> module = parseAssemblyString(
      "target datalayout = \"" + dataLayout + "\"\n" + kTruncations, diagnostic, context);
  if (!module) {
    std::string message;
    raw_string_ostream os(message);
    diagnostic.print("truncations", os);
    ADD_FAILURE() << message;
  }
  return module;
}

void runPass(Module &module) {
  FunctionAnalysisManager analyses;
  PassBuilder builder;
  builder.registerFunctionAnalyses(analyses);
  FunctionPassManager passes;
  passes.addPass(initc::target::TruncateByShufflePass());
  for (Function &function : module)
    passes.run(function, analyses);
}

unsigned countOpcode(Function &function, unsigned opcode) {
  unsigned n = 0;
  for (Instruction &inst : instructions(function))
    n += inst.getOpcode() == opcode;
  return n;
}

TEST(TruncateByShuffle, RewritesTruncationsOfEvenI64VectorsOnly) {
  LLVMContext context;
  std::unique_ptr<Module> module = parse(context, "e-i64:64-v512:512");
  ASSERT_TRUE(module);
  runPass(*module);
  std::string errors;
  raw_string_ostream os(errors);
  EXPECT_FALSE(verifyModule(*module, &os)) << errors;
  for (Function &function : *module) {
    bool rewrite = function.getName().starts_with("rewrite");
    EXPECT_EQ(countOpcode(function, Instruction::Trunc), rewrite ? 0u : 1u)
        << function.getName().str();
    EXPECT_EQ(countOpcode(function, Instruction::ShuffleVector), rewrite ? 3u : 0u)
        << function.getName().str();
  }
}

TEST(TruncateByShuffle, LeavesBigEndianTargetsAlone) {
  LLVMContext context;
  std::unique_ptr<Module> module = parse(context, "E-i64:64");
  ASSERT_TRUE(module);
  runPass(*module);
  for (Function &function : *module) {
    EXPECT_EQ(countOpcode(function, Instruction::Trunc), 1u) << function.getName().str();
    EXPECT_EQ(countOpcode(function, Instruction::ShuffleVector), 0u) << function.getName().str();
  }
}

// The shuffle, folded on constants by a little-endian data layout, gives each
// lane's low word.
TEST(TruncateByShuffle, GivesEachLanesLowWord) {
  LLVMContext context;
  DataLayout layout("e-i64:64");
  std::mt19937_64 random(20261123);
  for (unsigned lanes : {4u, 6u, 8u, 16u, 32u}) {
    std::vector<uint64_t> values(lanes);
    for (uint64_t &v : values)
      v = random();
    Constant *x = ConstantDataVector::get(context, values);
    IRBuilder<> b(context);
    Value *folded = initc::target::truncateByShuffle(b, x);
    auto *constant = dyn_cast<Constant>(folded);
    ASSERT_TRUE(constant) << lanes;
    constant = ConstantFoldConstant(constant, layout);
    auto *words = dyn_cast<ConstantDataVector>(constant);
    ASSERT_TRUE(words) << lanes << " lanes did not fold to constant words";
    ASSERT_EQ(words->getNumElements(), lanes);
    for (unsigned k = 0; k < lanes; ++k)
      EXPECT_EQ(words->getElementAsInteger(k), values[k] & 0xffffffffu)
          << "lane " << k << " of " << lanes;
  }
}

} // namespace
