// The LLVM IR passes that give the Philox words' movements to shuffles: i64 -> i32 truncations
// (TruncateByShuffle) and `>> 32` whose high half no user reads (HighWordsByShuffle). The same
// values, and only where each applies.
#include "initc/Target/LLVMCPU/X86/HighWordsByShuffle.h"
#include "initc/Target/LLVMCPU/X86/TruncateByShuffle.h"

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

std::unique_ptr<Module> parse(LLVMContext &context, const std::string &dataLayout,
                              const std::string &functions) {
  SMDiagnostic diagnostic;
  std::unique_ptr<Module> module = parseAssemblyString(
      "target datalayout = \"" + dataLayout + "\"\n" + functions, diagnostic, context);
  if (!module) {
    std::string message;
    raw_string_ostream os(message);
    diagnostic.print("functions", os);
    ADD_FAILURE() << message;
  }
  return module;
}

template <typename Pass> void runPass(Module &module) {
  FunctionAnalysisManager analyses;
  PassBuilder builder;
  builder.registerFunctionAnalyses(analyses);
  FunctionPassManager passes;
  passes.addPass(Pass());
  for (Function &function : module)
    passes.run(function, analyses);
}

unsigned countOpcode(Function &function, unsigned opcode) {
  unsigned n = 0;
  for (Instruction &inst : instructions(function))
    n += inst.getOpcode() == opcode;
  return n;
}

/// Whether `module` verifies; the verifier's messages are added to the test's failure.
void expectValid(Module &module) {
  std::string errors;
  raw_string_ostream os(errors);
  EXPECT_FALSE(verifyModule(module, &os)) << errors;
}

// TruncateByShuffle

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

TEST(TruncateByShuffle, RewritesTruncationsOfEvenI64VectorsOnly) {
  LLVMContext context;
  std::unique_ptr<Module> module = parse(context, "e-i64:64-v512:512", kTruncations);
  ASSERT_TRUE(module);
  runPass<initc::target::TruncateByShufflePass>(*module);
  expectValid(*module);
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
  std::unique_ptr<Module> module = parse(context, "E-i64:64", kTruncations);
  ASSERT_TRUE(module);
  runPass<initc::target::TruncateByShufflePass>(*module);
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

// HighWordsByShuffle

// One function per case; the name says whether the pass should rewrite it. SPLAT(T, V) stands
// for a constant vector of 8 x V.
constexpr const char *kShifts = R"ll(
define <8 x i64> @rewrite_philox_product(<8 x i64> %x, <8 x i64> %c) {
  %h = lshr <8 x i64> %x, SPLAT(i64, 32)
  %n = xor <8 x i64> %h, %c
  %m = and <8 x i64> %n, SPLAT(i64, 4294967295)
  %p = mul <8 x i64> %m, SPLAT(i64, 3528531795)
  ret <8 x i64> %p
}
define <8 x i32> @rewrite_truncated(<8 x i64> %x) {
  %h = lshr <8 x i64> %x, SPLAT(i64, 32)
  %t = trunc <8 x i64> %h to <8 x i32>
  ret <8 x i32> %t
}
define <8 x i64> @keep_whole_result(<8 x i64> %x) {
  %h = lshr <8 x i64> %x, SPLAT(i64, 32)
  ret <8 x i64> %h
}
define <8 x i64> @keep_high_half_read(<8 x i64> %x) {
  %h = lshr <8 x i64> %x, SPLAT(i64, 32)
  %s = shl <8 x i64> %h, SPLAT(i64, 16)
  ret <8 x i64> %s
}
define <8 x i32> @keep_other_amount(<8 x i64> %x) {
  %h = lshr <8 x i64> %x, SPLAT(i64, 31)
  %t = trunc <8 x i64> %h to <8 x i32>
  ret <8 x i32> %t
}
define <8 x i32> @keep_i32_lanes(<8 x i32> %x) {
  %h = lshr <8 x i32> %x, SPLAT(i32, 16)
  %m = and <8 x i32> %h, SPLAT(i32, 255)
  ret <8 x i32> %m
}
define i32 @keep_scalar(i64 %x) {
  %h = lshr i64 %x, 32
  %t = trunc i64 %h to i32
  ret i32 %t
}
)ll";

std::string withSplats(std::string text) {
  for (size_t at; (at = text.find("SPLAT(")) != std::string::npos;) {
    size_t comma = text.find(',', at), close = text.find(')', at);
    std::string type = text.substr(at + 6, comma - at - 6);
    std::string value = text.substr(comma + 2, close - comma - 2);
    std::string vector = "<";
    for (int k = 0; k < 8; ++k)
      vector += (k ? ", " : "") + type + " " + value;
    text.replace(at, close + 1 - at, vector + ">");
  }
  return text;
}

TEST(HighWordsByShuffle, RewritesShiftsWhoseHighHalfNoUserReads) {
  LLVMContext context;
  std::unique_ptr<Module> module = parse(context, "e-i64:64-v512:512", withSplats(kShifts));
  ASSERT_TRUE(module);
  runPass<initc::target::HighWordsByShufflePass>(*module);
  expectValid(*module);
  for (Function &function : *module) {
    bool rewrite = function.getName().starts_with("rewrite");
    EXPECT_EQ(countOpcode(function, Instruction::LShr), rewrite ? 0u : 1u)
        << function.getName().str();
    EXPECT_EQ(countOpcode(function, Instruction::ShuffleVector), rewrite ? 1u : 0u)
        << function.getName().str();
  }
}

TEST(HighWordsByShuffle, LeavesBigEndianTargetsAlone) {
  LLVMContext context;
  std::unique_ptr<Module> module = parse(context, "E-i64:64", withSplats(kShifts));
  ASSERT_TRUE(module);
  runPass<initc::target::HighWordsByShufflePass>(*module);
  for (Function &function : *module) {
    EXPECT_EQ(countOpcode(function, Instruction::LShr), 1u) << function.getName().str();
    EXPECT_EQ(countOpcode(function, Instruction::ShuffleVector), 0u) << function.getName().str();
  }
}

// The shuffle, folded on constants by a little-endian data layout, gives each lane's high word
// in both its words: the low word is that of `x >> 32`.
TEST(HighWordsByShuffle, GivesEachLanesHighWordInItsLowWord) {
  LLVMContext context;
  DataLayout layout("e-i64:64");
  std::mt19937_64 random(20261126);
  for (unsigned lanes : {2u, 4u, 8u, 16u}) {
    std::vector<uint64_t> values(lanes);
    for (uint64_t &v : values)
      v = random();
    Constant *x = ConstantDataVector::get(context, values);
    IRBuilder<> b(context);
    auto *constant = dyn_cast<Constant>(initc::target::highWordsByShuffle(b, x));
    ASSERT_TRUE(constant) << lanes;
    auto *folded = dyn_cast<ConstantDataVector>(ConstantFoldConstant(constant, layout));
    ASSERT_TRUE(folded) << lanes << " lanes did not fold to constant lanes";
    ASSERT_EQ(folded->getNumElements(), lanes);
    for (unsigned k = 0; k < lanes; ++k) {
      uint64_t high = values[k] >> 32;
      EXPECT_EQ(folded->getElementAsInteger(k), high << 32 | high) << "lane " << k;
    }
  }
}

} // namespace
