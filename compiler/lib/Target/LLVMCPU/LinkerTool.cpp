//===- LinkerTool.cpp - the C compiler driver that links kernels.so ===//
#include "LinkerTool.h"
#include "initc/Target/LLVMCPU/TargetArchitecture.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/CodeGen/MachineFunctionPass.h"
#include "llvm/CodeGen/MachineModuleInfo.h"
#include "llvm/CodeGen/Passes.h"
#include "llvm/CodeGen/TargetPassConfig.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Operator.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>

using namespace mlir;

namespace initc::target {

std::optional<std::string> findLinker(const TargetOptions &options,
                                      const TargetArchitecture &architecture,
                                      std::string &error) {
  bool native = &architecture == hostArchitecture();
  std::vector<std::string> names = architecture.linkerNames(native);
  // Debian names a cross compiler's package after its triple: gcc-aarch64-linux-gnu.
  std::string package = "gcc";
  if (!native) {
    package = "gcc-" + llvm::StringRef(names.front()).drop_back(4).str();
    std::replace(package.begin(), package.end(), '_', '-');
  }
  std::string advice = "install " + std::string(native ? "gcc" : "a C compiler for " +
                                                                    architecture.name().str()) +
                       " (e.g. `apt-get install " + package +
                       "`) or pass --linker=<path to a C compiler driver>";
  if (options.linker.empty()) {
    for (const std::string &name : names)
      if (llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(name))
        return *path;
    error = "no linker found: none of " + llvm::join(names, ", ") + " is on PATH; " + advice;
    if (!native)
      error = "no linker found for " + architecture.name().str() + " kernels: " +
              llvm::join(names, ", ") + " is not on PATH; " + advice;
    return std::nullopt;
  }
  if (llvm::StringRef(options.linker).contains('/')) {
    if (llvm::sys::fs::can_execute(options.linker))
      return options.linker;
    error = "linker '" + options.linker + "' does not exist or is not executable; " + advice;
    return std::nullopt;
  }
  if (llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(options.linker))
    return *path;
  error = "linker '" + options.linker + "' is not on PATH; " + advice;
  return std::nullopt;
}

/// Symbols the object needs from outside: the linker would reject them (-z defs), but this
/// message names the cause. Compiler helpers (`__truncsfhf2`, ...) come from libgcc.
LogicalResult checkObjectImports(llvm::StringRef objectPath, const llvm::StringSet<> &kernelNames,
                                 std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(objectPath);
  if (!buffer) {
    error = "cannot read '" + objectPath.str() + "': " + buffer.getError().message();
    return failure();
  }
  auto object = llvm::object::ObjectFile::createObjectFile((*buffer)->getMemBufferRef());
  if (!object) {
    error = "cannot parse the emitted object: " + llvm::toString(object.takeError());
    return failure();
  }
  for (const llvm::object::SymbolRef &symbol : (*object)->symbols()) {
    llvm::Expected<uint32_t> flags = symbol.getFlags();
    llvm::Expected<llvm::StringRef> name = symbol.getName();
    if (!flags || !name) {
      llvm::consumeError(flags.takeError());
      llvm::consumeError(name.takeError());
      continue;
    }
    if (!(*flags & llvm::object::SymbolRef::SF_Undefined) || name->empty() ||
        name->starts_with("__") || *name == "_GLOBAL_OFFSET_TABLE_" ||
        kernelNames.contains(*name))
      continue;
    error = "the kernels call '" + name->str() +
            "', but kernels.so links no library: expand such calls (e.g. math ops) into arith "
            "ops before lowering, or pick a CPU that has the instruction";
    return failure();
  }
  return success();
}

LogicalResult runLinker(llvm::StringRef linker, llvm::ArrayRef<std::string> args,
                        const std::string &logPath, std::string &error) {
  llvm::SmallVector<llvm::StringRef> argRefs;
  for (const std::string &arg : args)
    argRefs.push_back(arg);
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), llvm::StringRef(logPath),
                                                llvm::StringRef(logPath)};
  std::string execError;
  int status = llvm::sys::ExecuteAndWait(linker, argRefs, std::nullopt, redirects, 0, 0,
                                         &execError);
  if (status == 0)
    return success();
  std::string output;
  if (auto text = llvm::MemoryBuffer::getFile(logPath))
    output = llvm::StringRef((*text)->getBuffer()).trim().str();
  // A compiler helper that the system's libgcc lacks (__truncsfbf2 for bf16 arithmetic before
  // GCC 13): say what to change rather than only what ld said.
  size_t undefined = output.find("undefined reference to `");
  if (undefined != std::string::npos) {
    size_t begin = undefined + 24, end = output.find('\'', begin);
    std::string symbol = output.substr(begin, end == std::string::npos ? 0 : end - begin);
    error = "the kernels call '" + symbol +
            "', a compiler helper that this system's libgcc does not provide (kernels.so links "
            "no other library): compute in f32 and round with arith.truncf (bf16 rounding is "
            "expanded into integer ops), or pick a CPU that has the instruction";
    return failure();
  }
  error = "linking the kernels with '" + linker.str() + "' failed";
  if (!execError.empty())
    error += " (" + execError + ")";
  if (!output.empty())
    error += ":\n" + output;
  return failure();
}

} // namespace initc::target
