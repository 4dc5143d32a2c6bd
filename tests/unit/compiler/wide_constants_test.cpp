// WideConstants: AVX2 code takes splat constants as full-width memory operands instead of
// broadcasting each into a register first, and AVX-512 code loads extended constants whole.
// That it never changes a value is kernel_reference_test's: every CPU variant gives the
// reference's bytes.
#include "initc/Target/LLVMCPU/LibraryBuilder.h"

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

// The words of four 8-word runs interleaved, as the f16 kernels store their four Philox words:
// a two-table word permute whose index vector fits in bytes.
constexpr const char *kInterleave = R"(
define void @interleave(ptr noalias %out, ptr noalias %in) {
  %a = load <32 x i16>, ptr %in, align 2
  %p = getelementptr i16, ptr %in, i64 32
  %b = load <32 x i16>, ptr %p, align 2
  %w = shufflevector <32 x i16> %a, <32 x i16> %b, <32 x i32> <i32 0, i32 16, i32 32, i32 48, i32 1, i32 17, i32 33, i32 49, i32 2, i32 18, i32 34, i32 50, i32 3, i32 19, i32 35, i32 51, i32 4, i32 20, i32 36, i32 52, i32 5, i32 21, i32 37, i32 53, i32 6, i32 22, i32 38, i32 54, i32 7, i32 23, i32 39, i32 55>
  store <32 x i16> %w, ptr %out, align 2
  ret void
}
)";

std::string assemblyFor(const std::string &cpu, const char *source = kPolynomial) {
  llvm::LLVMContext context;
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(source, diagnostic, context);
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

// A loop using 20 splat constants twice each: each is loaded into a register, and the register
// allocator, short of registers, reloads it inside the loop, where x86's late constant fixup
// would make the full-width reload a broadcast again.
std::string reusedConstantsLoop() {
  std::string text = "define void @reused(ptr noalias %out, ptr noalias %in, i64 %n) {\n"
                     "entry:\n  br label %loop\nloop:\n"
                     "  %i = phi i64 [ 0, %entry ], [ %next, %loop ]\n"
                     "  %px = getelementptr <8 x float>, ptr %in, i64 %i\n"
                     "  %x = load <8 x float>, ptr %px, align 4\n"
                     "  %i1 = or i64 %i, 1\n"
                     "  %py = getelementptr <8 x float>, ptr %in, i64 %i1\n"
                     "  %y = load <8 x float>, ptr %py, align 4\n"
                     "  %t0 = fadd <8 x float> %x, %y\n";
  for (int k = 1; k <= 20; ++k) {
    std::string n = std::to_string(k), c = "<float " + n + ".5";
    for (int lane = 1; lane < 8; ++lane)
      c += ", float " + n + ".5";
    c += ">";
    text += "  %a" + n + " = fmul <8 x float> %x, " + c + "\n";
    text += "  %b" + n + " = fmul <8 x float> %y, " + c + "\n";
    text += "  %s" + n + " = fadd <8 x float> %a" + n + ", %b" + n + "\n";
    text += "  %t" + n + " = fmul <8 x float> %t" + std::to_string(k - 1) + ", %s" + n + "\n";
  }
  return text + "  %po = getelementptr <8 x float>, ptr %out, i64 %i\n"
                "  store <8 x float> %t20, ptr %po, align 4\n"
                "  %next = add i64 %i, 2\n"
                "  %done = icmp uge i64 %next, %n\n"
                "  br i1 %done, label %exit, label %loop\n"
                "exit:\n  ret void\n}\n";
}

TEST(WideConstants, Avx2ReloadsSplatsWholeInLoops) {
  if (llvm::StringRef(llvm::sys::getProcessTriple()).find("x86_64") == llvm::StringRef::npos)
    GTEST_SKIP() << "x86 CPUs only";
  std::string source = reusedConstantsLoop();
  std::string text = assemblyFor("x86-64-v3", source.c_str());
  EXPECT_EQ(count(text, "vbroadcastss"), 0) << text;
  EXPECT_GE(count(text, "vmovaps\t"), 1) << text; // the reloads, from 32-byte entries
  EXPECT_EQ(count(text, "vmulps"), 60) << text;
}

TEST(WideConstants, SseCodeIsUnchanged) {
  if (llvm::StringRef(llvm::sys::getProcessTriple()).find("x86_64") == llvm::StringRef::npos)
    GTEST_SKIP() << "x86 CPUs only";
  std::string text = assemblyFor("x86-64");
  EXPECT_EQ(count(text, "vbroadcastss"), 0) << text;
  EXPECT_EQ(count(text, ".rodata.cst32"), 0) << text;
  EXPECT_GE(count(text, "mulps"), 2) << text;
}

TEST(WideConstants, Avx512LoadsExtendedConstantsWhole) {
  if (llvm::StringRef(llvm::sys::getProcessTriple()).find("x86_64") == llvm::StringRef::npos)
    GTEST_SKIP() << "x86 CPUs only";
  std::string text = assemblyFor("x86-64-v4", kInterleave);
  // Without the pass: `vpmovsxbw .LCPI..(%rip), %zmmN`, the index from a 32-byte entry.
  EXPECT_EQ(count(text, "vpmovsx"), 0) << text;
  EXPECT_EQ(count(text, "vpermi2w") + count(text, "vpermt2w"), 1) << text;
  EXPECT_EQ(count(text, "vmovdqa64\t"), 1) << text;
  // The whole index in the pool, each word sign-extended from its byte: 0, 16, 32, 48, 1, ...
  EXPECT_NE(text.find(".short\t0\n\t.short\t16\n\t.short\t32\n\t.short\t48\n"),
            std::string::npos)
      << text;
}

} // namespace
