// The kernel scheduler: which kernels it schedules top-down, and that LLVM takes it. That it never
// changes a value is kernel_reference_test's: every CPU variant gives the reference's bytes.
#include "initc/Target/LLVMCPU/X86/KernelScheduler.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace {

std::unique_ptr<llvm::MCSubtargetInfo> subtargetFor(const std::string &cpu) {
  llvm::InitializeNativeTarget();
  std::string triple = llvm::sys::getProcessTriple(), error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  return std::unique_ptr<llvm::MCSubtargetInfo>(target->createMCSubtargetInfo(triple, cpu, ""));
}

// A uniform-like kernel: one chain of 3 float ops (scale, offset, negate) past integer ops;
// a polynomial: a Horner chain of 4 steps (8 ops), then a sqrt, in another block; and a short
// chain ending in a paired bf16 conversion.
constexpr const char *kKernels = R"(
define <8 x float> @short(<8 x i32> %bits) {
  %shifted = lshr <8 x i32> %bits, <i32 8, i32 8, i32 8, i32 8, i32 8, i32 8, i32 8, i32 8>
  %x = sitofp <8 x i32> %shifted to <8 x float>
  %scaled = fmul <8 x float> %x, %x
  %offset = fadd <8 x float> %scaled, %x
  %other = fadd <8 x float> %x, %x
  %negated = fneg <8 x float> %offset
  ret <8 x float> %negated
}
define float @polynomial(float %x, float %c) {
entry:
  %m0 = fmul float %x, %c
  %a0 = fadd float %m0, %c
  %m1 = fmul float %a0, %x
  %a1 = fadd float %m1, %c
  br label %next
next:
  %m2 = fmul float %a1, %x
  %a2 = fadd float %m2, %c
  %m3 = fmul float %a2, %x
  %a3 = fadd float %m3, %c
  %m4 = fmul float %a3, %x
  %a4 = fadd float %m4, %c
  %m5 = fmul float %a4, %x
  %a5 = fadd float %m5, %c
  %r = call float @llvm.sqrt.f32(float %a5)
  ret float %r
}
declare float @llvm.sqrt.f32(float)
define <32 x bfloat> @pairs(<16 x float> %a, <16 x float> %b) {
  %scaled = fmul <16 x float> %a, %b
  %r = call <32 x bfloat> @llvm.x86.avx512bf16.cvtne2ps2bf16.512(<16 x float> %scaled, <16 x float> %b)
  ret <32 x bfloat> %r
}
declare <32 x bfloat> @llvm.x86.avx512bf16.cvtne2ps2bf16.512(<16 x float>, <16 x float>)
)";

struct Kernels {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module;
  Kernels() {
    llvm::SMDiagnostic diagnostic;
    module = llvm::parseAssemblyString(kKernels, diagnostic, context);
  }
};

TEST(KernelScheduler, MeasuresTheLongestFloatChainWithinABlock) {
  Kernels kernels;
  ASSERT_TRUE(kernels.module);
  EXPECT_EQ(initc::target::longestFloatChain(*kernels.module->getFunction("short")), 3u);
  // The chain restarts at the block boundary: 8 float ops and the sqrt in the second block.
  EXPECT_EQ(initc::target::longestFloatChain(*kernels.module->getFunction("polynomial")), 9u);
}

TEST(KernelScheduler, FindsPairedBF16Conversions) {
  Kernels kernels;
  ASSERT_TRUE(kernels.module);
  EXPECT_TRUE(initc::target::pairsBF16Conversions(*kernels.module->getFunction("pairs")));
  EXPECT_FALSE(initc::target::pairsBF16Conversions(*kernels.module->getFunction("short")));
}

TEST(KernelScheduler, TopDownForAvx2AndLatencyBoundOrPairedAvx512) {
  if (llvm::StringRef(llvm::sys::getProcessTriple()).find("x86_64") == llvm::StringRef::npos)
    GTEST_SKIP() << "x86 CPUs only";
  Kernels kernels;
  ASSERT_TRUE(kernels.module);
  const llvm::Function &shortChain = *kernels.module->getFunction("short");
  const llvm::Function &polynomial = *kernels.module->getFunction("polynomial");
  for (const char *cpu : {"x86-64-v3", "haswell", "znver3"}) {
    auto subtarget = subtargetFor(cpu);
    ASSERT_TRUE(subtarget) << cpu;
    EXPECT_TRUE(initc::target::schedulesTopDown(*subtarget, shortChain)) << cpu;
    EXPECT_TRUE(initc::target::schedulesTopDown(*subtarget, polynomial)) << cpu;
  }
  // AVX-512 code has 32 registers: only a long float chain or paired bf16 conversions go
  // top-down.
  const llvm::Function &pairs = *kernels.module->getFunction("pairs");
  for (const char *cpu : {"x86-64-v4", "skylake-avx512", "znver4", "sapphirerapids"}) {
    auto subtarget = subtargetFor(cpu);
    ASSERT_TRUE(subtarget) << cpu;
    EXPECT_FALSE(initc::target::schedulesTopDown(*subtarget, shortChain)) << cpu;
    EXPECT_TRUE(initc::target::schedulesTopDown(*subtarget, polynomial)) << cpu;
    EXPECT_TRUE(initc::target::schedulesTopDown(*subtarget, pairs)) << cpu;
  }
  // SSE code keeps LLVM's order.
  for (const char *cpu : {"x86-64", "x86-64-v2"}) {
    auto subtarget = subtargetFor(cpu);
    ASSERT_TRUE(subtarget) << cpu;
    EXPECT_FALSE(initc::target::schedulesTopDown(*subtarget, shortChain)) << cpu;
    EXPECT_FALSE(initc::target::schedulesTopDown(*subtarget, polynomial)) << cpu;
  }
}

TEST(KernelScheduler, LlvmTakesIt) {
  EXPECT_TRUE(initc::target::useKernelScheduler());
  EXPECT_TRUE(initc::target::useKernelScheduler()) << "a second call changes nothing";
  auto &options = llvm::cl::getRegisteredOptions();
  ASSERT_TRUE(options.count("misched"));
  EXPECT_EQ(options["misched"]->getNumOccurrences(), 1);
}

} // namespace
