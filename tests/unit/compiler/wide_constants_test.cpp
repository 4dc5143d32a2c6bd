// WideConstants: AVX2 code takes splat constants as full-width memory operands instead of
// broadcasting each into a register first. That it never changes a value is
// kernel_reference_test's: every CPU variant gives the reference's bytes.
#include "initc/Target/SharedObject.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <gtest/gtest.h>

#include <string>

namespace {

// Eight splat constants, each used once: x * 1.5 + 2.5 ... as a polynomial would.
constexpr const char *kPolynomial = R"(
define void @poly(ptr noalias %out, ptr noalias %in) {
  %x = load <8 x float>, ptr %in, align 4
  %p1 = fmul <8 x float> %x, <float 1.5, float 1.5, float 1.5, float 1.5, float 1.5, float 1.5, float 1.5, float 1.5>
  %p2 = fadd <8 x float> %p1, <float 2.5, float 2.5, float 2.5, float 2.5, float 2.5, float 2.5, float 2.5, float 2.5>
  %p3 = fmul <8 x float> %p2, %x
  %p4 = fadd <8 x float> %p3, <float 3.5, float 3.5, float 3.5, float 3.5, float 3.5, float 3.5, float 3.5, float 3.5>
  %p5 = fmul <8 x float> %p4, %x
  %p6 = fadd <8 x float> %p5, <float 4.5, float 4.5, float 4.5, float 4.5, float 4.5, float 4.5, float 4.5, float 4.5>
  store <8 x float> %p6, ptr %out, align 4
  ret void
}
)";

std::string assemblyFor(const std::string &cpu) {
  llvm::LLVMContext context;
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module =
      llvm::parseAssemblyString(kPolynomial, diagnostic, context);
  if (!module)
    return "parse error: " + diagnostic.getMessage().str();
  module->setTargetTriple(llvm::sys::getProcessTriple());
  initc::target::TargetOptions options;
  options.cpu = cpu;
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream os(text);
  std::string error;
  if (mlir::failed(initc::target::emitMachineCode(*module, options,
                                           initc::target::CodeFileKind::Assembly, os, error)))
    return "codegen error: " + error;
  return text.str().str();
}

int count(llvm::StringRef text, llvm::StringRef what) {
  int n = 0;
  for (size_t at = text.find(what); at != llvm::StringRef::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

TEST(WideConstants, Avx2FoldsSplatsIntoTheirUsers) {
  if (llvm::StringRef(llvm::sys::getProcessTriple()).find("x86_64") == llvm::StringRef::npos)
    GTEST_SKIP() << "x86 CPUs only";
  std::string text = assemblyFor("x86-64-v3");
  // Without the pass: four `vbroadcastss .LCPI..(%rip), %ymmN`, each followed by its user.
  EXPECT_EQ(count(text, "vbroadcastss"), 0) << text;
  EXPECT_EQ(count(text, "(%rip), %ymm"), 4) << text;
  EXPECT_NE(text.find(".rodata.cst32"), std::string::npos) << text;
}

TEST(WideConstants, SseCodeIsUnchanged) {
  if (llvm::StringRef(llvm::sys::getProcessTriple()).find("x86_64") == llvm::StringRef::npos)
    GTEST_SKIP() << "x86 CPUs only";
  std::string text = assemblyFor("x86-64");
  EXPECT_EQ(count(text, "vbroadcastss"), 0) << text;
  EXPECT_EQ(count(text, ".rodata.cst32"), 0) << text;
  EXPECT_GE(count(text, "mulps"), 2) << text;
}

} // namespace
