// Running one of compiler/lib/Target's LLVM IR passes on a module written as text, in the tests
// of the passes that choose by each function's CPU.
#pragma once

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace initc::testing {

/// A target machine for this x86-64 host, whose functions pick their CPU by attributes; null,
/// with `why`, on another architecture (the passes rewrite for x86-64 only) or when LLVM has
/// none (a failure).
inline std::unique_ptr<llvm::TargetMachine> x86Machine(std::string &why) {
  llvm::InitializeNativeTarget();
  std::string triple = llvm::sys::getProcessTriple();
  if (llvm::StringRef(triple).find("x86_64") != 0) {
    why = "an x86-64 rewrite";
    return nullptr;
  }
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, why);
  if (!target) {
    ADD_FAILURE() << why;
    return nullptr;
  }
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(triple, "x86-64", "", llvm::TargetOptions(), std::nullopt));
  if (!machine)
    ADD_FAILURE() << (why = "no target machine for " + triple);
  return machine;
}

/// `text` parsed and `pass` run on each of its functions; null when it does not parse. A module
/// the pass leaves invalid fails the test.
template <typename Pass>
std::unique_ptr<llvm::Module> runOnText(llvm::LLVMContext &context, const char *text, Pass pass) {
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(text, diagnostic, context);
  if (!module) {
    ADD_FAILURE() << diagnostic.getMessage().str();
    return nullptr;
  }
  llvm::FunctionAnalysisManager analyses;
  llvm::PassBuilder builder;
  builder.registerFunctionAnalyses(analyses);
  llvm::FunctionPassManager passes;
  passes.addPass(std::move(pass));
  for (llvm::Function &function : *module)
    passes.run(function, analyses);
  std::string errors;
  llvm::raw_string_ostream os(errors);
  EXPECT_FALSE(llvm::verifyModule(*module, &os)) << errors;
  return module;
}

/// The instructions of `function` for which `is` holds.
template <typename Predicate> unsigned instructionsWhere(llvm::Function &function, Predicate is) {
  unsigned n = 0;
  for (llvm::Instruction &inst : llvm::instructions(function))
    n += is(inst);
  return n;
}

} // namespace initc::testing
