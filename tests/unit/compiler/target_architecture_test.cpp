// Target/LLVMCPU/TargetArchitecture.cpp and its use by CPUResolution: a CPU name belongs to one
// architecture, a program to one architecture, and each architecture's variants record what
// their code needs.
#include "initc/Target/LLVMCPU/CPUResolution.h"
#include "initc/Target/LLVMCPU/TargetArchitecture.h"

#include <gtest/gtest.h>

#include <elf.h>
#include <set>
#include <string>

using initc::target::TargetOptions;

namespace {

std::string architectureName(const char *cpu) {
  std::string error;
  const initc::target::TargetArchitecture *architecture =
      initc::target::architectureOfCpu(cpu, error);
  return architecture ? architecture->name().str() : "error: " + error;
}

std::set<std::string> extensions(const char *cpu, const char *targetCpu) {
  TargetOptions options;
  options.cpu = targetCpu;
  std::string error;
  std::optional<std::vector<std::string>> found =
      initc::target::cpuExtensions(cpu, options, error);
  EXPECT_TRUE(found) << error;
  return found ? std::set<std::string>(found->begin(), found->end()) : std::set<std::string>();
}

TEST(TargetArchitectureTest, CpuNamesResolveToTheirArchitecture) {
  for (const char *cpu : {"x86-64", "x86-64-v3", "x86-64-v4+avx512bf16", "znver4", "generic"})
    EXPECT_EQ(architectureName(cpu), "x86-64") << cpu;
  for (const char *cpu : {"aarch64", "neoverse-v2", "neoverse-n1", "neoverse-v2+sve2-aes"})
    EXPECT_EQ(architectureName(cpu), "AArch64") << cpu;
  const initc::target::TargetArchitecture *host = initc::target::hostArchitecture();
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(architectureName("native"), host->name().str());
  EXPECT_EQ(initc::target::targetArchitectures().size(), 2u);
  EXPECT_EQ(architectureName("x86-64"), initc::target::targetArchitectures()[0]->name().str());
}

TEST(TargetArchitectureTest, UnknownCpuListsEveryArchitecturesNames) {
  std::string error;
  EXPECT_EQ(initc::target::architectureOfCpu("pentium-9000", error), nullptr);
  for (const char *part : {"unknown target CPU 'pentium-9000'", "x86-64: x86-64, x86-64-v3",
                           "AArch64: aarch64", "neoverse-v2", "llc -mtriple=aarch64 -mcpu=help",
                           "llc -mtriple=x86_64 -mcpu=help", "native"})
    EXPECT_NE(error.find(part), std::string::npos) << part << " in " << error;
}

TEST(TargetArchitectureTest, EachArchitectureHasItsTripleAndMachine) {
  auto all = initc::target::targetArchitectures();
  EXPECT_EQ(all[0]->elfMachine(), EM_X86_64);
  EXPECT_EQ(llvm::StringRef(all[0]->triple()).split('-').first, "x86_64");
  EXPECT_EQ(all[1]->elfMachine(), EM_AARCH64);
  EXPECT_EQ(llvm::StringRef(all[1]->triple()).split('-').first, "aarch64");
  // Each default list names CPUs of its own architecture only.
  for (const initc::target::TargetArchitecture *architecture : all) {
    llvm::SmallVector<llvm::StringRef> cpus;
    architecture->defaultCpus().split(cpus, ',');
    for (llvm::StringRef cpu : cpus)
      EXPECT_EQ(architectureName(cpu.str().c_str()), architecture->name().str()) << cpu.str();
  }
}

TEST(TargetArchitectureTest, AArch64VariantsRecordTheExtensionsTheirCodeMayUse) {
  EXPECT_TRUE(extensions("aarch64", "aarch64").empty());
  std::set<std::string> v2 = extensions("neoverse-v2", "aarch64");
  for (const char *name : {"sve", "sve2", "bf16", "i8mm", "fullfp16", "dotprod"})
    EXPECT_EQ(v2.count(name), 1u) << name;
  // Atomics-only features are not checked: the kernels have no atomic operations.
  EXPECT_EQ(v2.count("lse"), 0u);
  std::set<std::string> n1 = extensions("neoverse-n1", "aarch64");
  EXPECT_EQ(n1.count("sve"), 0u);
  EXPECT_EQ(n1.count("dotprod"), 1u);
  // An extension added by name is recorded too.
  EXPECT_EQ(extensions("aarch64+sve", "aarch64").count("sve"), 1u);
}

TEST(TargetArchitectureTest, AProgramIsForOneArchitecture) {
  TargetOptions options;
  options.cpu = "aarch64";
  std::string error;
  EXPECT_FALSE(initc::target::cpuExtensions("x86-64-v3", options, error));
  EXPECT_NE(error.find("'x86-64-v3' is an x86-64 CPU"), std::string::npos) << error;
  EXPECT_NE(error.find("for AArch64"), std::string::npos) << error;
  options.cpu = "x86-64-v3";
  EXPECT_FALSE(initc::target::cpuExtensions("neoverse-v2", options, error));
  EXPECT_NE(error.find("'neoverse-v2' is an AArch64 CPU"), std::string::npos) << error;
}

TEST(TargetArchitectureTest, VectorLoopsAndBF16ConversionsAreTheArchitecturesChoice) {
  auto loop = [](const char *cpu) {
    TargetOptions options;
    options.cpu = cpu;
    std::string error;
    std::optional<std::string> shape = initc::target::defaultVectorLoop(cpu, options, error);
    EXPECT_TRUE(shape) << error;
    return shape.value_or("");
  };
  EXPECT_EQ(loop("x86-64-v4"), ":3x16");
  EXPECT_EQ(loop("x86-64-v3"), ":2p"); // AVX2 without AVX-512: software-pipelined
  EXPECT_EQ(loop("x86-64"), ":2");
  EXPECT_EQ(loop("neoverse-v2"), ":2");
  EXPECT_TRUE(initc::target::addsBF16Conversion("x86-64-v4+avx512bf16"));
  EXPECT_FALSE(initc::target::addsBF16Conversion("x86-64-v4"));
  // BFCVT is not used: AArch64 kernels round bf16 in integer ops.
  EXPECT_FALSE(initc::target::addsBF16Conversion("neoverse-v2+bf16"));
  TargetOptions options;
  options.cpu = "neoverse-v2";
  std::string error;
  EXPECT_EQ(initc::target::convertsBF16("neoverse-v2", options, error), std::optional<bool>(false))
      << error;
  options.cpu = "x86-64-v4";
  EXPECT_EQ(initc::target::convertsBF16("x86-64-v4+avx512bf16", options, error),
            std::optional<bool>(true))
      << error;
}

} // namespace
