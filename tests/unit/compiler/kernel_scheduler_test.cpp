// The kernel scheduler: which code it schedules top-down, and that LLVM takes it. That it never
// changes a value is kernel_reference_test's: every CPU variant gives the reference's bytes.
#include "initc/Target/KernelScheduler.h"

#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
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

TEST(KernelScheduler, TopDownForAvx2WithoutAvx512) {
  if (llvm::StringRef(llvm::sys::getProcessTriple()).find("x86_64") == llvm::StringRef::npos)
    GTEST_SKIP() << "x86 CPUs only";
  for (const char *cpu : {"x86-64-v3", "haswell", "znver3"}) {
    auto subtarget = subtargetFor(cpu);
    ASSERT_TRUE(subtarget) << cpu;
    EXPECT_TRUE(initc::target::schedulesTopDown(*subtarget)) << cpu;
  }
  // AVX-512 code has 32 registers and keeps LLVM's order; so does SSE code.
  for (const char *cpu : {"x86-64-v4", "skylake-avx512", "znver4", "x86-64", "x86-64-v2"}) {
    auto subtarget = subtargetFor(cpu);
    ASSERT_TRUE(subtarget) << cpu;
    EXPECT_FALSE(initc::target::schedulesTopDown(*subtarget)) << cpu;
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
