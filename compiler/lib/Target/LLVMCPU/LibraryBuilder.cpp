//===- LibraryBuilder.cpp - kernels.so from a module of kernels ===//
#include "initc/Target/LLVMCPU/LibraryBuilder.h"
#include "LinkerTool.h"
#include "TargetPipeline.h"
#include "initrt/base/temporaries.h"

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

namespace {
/// RAII removal of a temporary file.
class TemporaryFile {
public:
  TemporaryFile() = default;
  explicit TemporaryFile(llvm::StringRef path) : path(path.str()) {}
  TemporaryFile(const TemporaryFile &) = delete;
  TemporaryFile &operator=(const TemporaryFile &) = delete;
  ~TemporaryFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
  void keep() { path.clear(); }
  std::string path;
};

/// RAII removal of a temporary directory of files, also when a signal ends the process.
class TemporaryDirectory {
public:
  explicit TemporaryDirectory(llvm::StringRef path)
      : path(path.str()), signalSlot(initrt::registerTemporary(this->path, /*directory=*/true)) {}
  TemporaryDirectory(const TemporaryDirectory &) = delete;
  TemporaryDirectory &operator=(const TemporaryDirectory &) = delete;
  ~TemporaryDirectory() {
    llvm::sys::fs::remove_directories(path);
    initrt::unregisterTemporary(signalSlot);
  }
  std::string path;

private:
  int signalSlot;
};

/// Writes `module`'s machine code to the object file `objectPath` and checks what it imports. A
/// failed write (a full disk, `ulimit -f`) is an error here: a raw_fd_ostream destroyed with
/// its error unchecked ends the process.
LogicalResult writeObjectFile(llvm::Module &module, const ResolvedTarget &target,
                              const llvm::StringSet<> &kernelNames, const std::string &objectPath,
                              std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream os(objectPath, ec);
  if (ec) {
    error = "cannot write '" + objectPath + "': " + ec.message();
    return failure();
  }
  LogicalResult emitted = emitMachineCode(module, target, CodeFileKind::Object, os, error);
  os.close();
  if (os.has_error()) {
    error = "cannot write '" + objectPath + "': " + os.error().message();
    os.clear_error();
    return failure();
  }
  if (failed(emitted))
    return failure();
  return checkObjectImports(objectPath, kernelNames, error);
}

/// Optimizes and compiles one partition, given as bitcode, in its own LLVM context (contexts and
/// target machines are not shared between threads) into the object file `objectPath`.
LogicalResult compilePartition(llvm::StringRef bitcode, const TargetOptions &options,
                               const llvm::StringSet<> &kernelNames,
                               const std::string &objectPath, std::string &error) {
  llvm::LLVMContext ctx;
  llvm::Expected<std::unique_ptr<llvm::Module>> module =
      llvm::parseBitcodeFile(llvm::MemoryBufferRef(bitcode, "partition"), ctx);
  if (!module) {
    error = "cannot read back a kernel partition: " + llvm::toString(module.takeError());
    return failure();
  }
  std::optional<ResolvedTarget> target = createTargetMachine(options, error);
  if (!target ||
      failed(optimizeAndCheck(**module, *target, options.optLevel, kernelNames, error)))
    return failure();
  return writeObjectFile(**module, *target, kernelNames, objectPath, error);
}

/// Optimizes and compiles `module` into object files in `dir`, in parallel. The partitions
/// depend only on the module, never on the thread count, so kernels.so is reproducible.
LogicalResult compileToObjects(std::unique_ptr<llvm::Module> module,
                               const TargetOptions &options, const ResolvedTarget &target,
                               const std::string &dir, llvm::SmallVectorImpl<std::string> &objects,
                               std::string &error) {
  // Small enough to spread 1,000 kernels over many cores, large enough that the per-partition
  // cost (a bitcode round trip, a target machine, pipeline setup) stays negligible. A module of
  // a few kernels still gets up to kMinPartitions of them: a model's program has a handful
  // (one per recipe), each tens of milliseconds of codegen, and one partition used one core.
  constexpr unsigned kFunctionsPerPartition = 32;
  constexpr unsigned kMinPartitions = 8;
  constexpr unsigned kMaxPartitions = 256;
  llvm::SmallVector<const llvm::Function *> kernels;
  for (llvm::Function &function : *module)
    if (!function.isDeclaration() && !function.hasLocalLinkage())
      kernels.push_back(&function);
  llvm::StringSet<> kernelNames;
  for (const llvm::Function *kernel : kernels)
    kernelNames.insert(kernel->getName());
  unsigned partitions = std::clamp<unsigned>(
      std::max<size_t>((kernels.size() + kFunctionsPerPartition - 1) / kFunctionsPerPartition,
                       std::min<size_t>(kernels.size(), kMinPartitions)),
      1, kMaxPartitions);
  if (partitions == 1) {
    std::string objectPath = dir + "/kernels.o";
    if (failed(optimizeAndCheck(*module, target, options.optLevel, kernelNames, error)))
      return failure();
    objects.push_back(objectPath);
    return writeObjectFile(*module, target, kernelNames, objectPath, error);
  }

  // Each partition gets a contiguous run of kernels plus a copy of every internal function and
  // global: a helper shared by all kernels must not pull them all into one partition. Copies
  // stay internal, unused ones are dropped by the pipeline.
  std::vector<llvm::SmallVector<char, 0>> bitcodes(partitions);
  for (unsigned p = 0; p < partitions; ++p) {
    size_t first = kernels.size() * p / partitions, last = kernels.size() * (p + 1) / partitions;
    llvm::SmallPtrSet<const llvm::GlobalValue *, 32> chunk(kernels.begin() + first,
                                                           kernels.begin() + last);
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> part =
        llvm::CloneModule(*module, map, [&](const llvm::GlobalValue *value) {
          return value->hasLocalLinkage() || chunk.contains(value);
        });
    llvm::raw_svector_ostream os(bitcodes[p]);
    llvm::WriteBitcodeToFile(*part, os);
  }
  module.reset();

  std::vector<std::string> errors(bitcodes.size());
  std::vector<char> failed(bitcodes.size(), 0);
  for (size_t i = 0; i < bitcodes.size(); ++i)
    objects.push_back(dir + "/kernels-" + std::to_string(i) + ".o");
  unsigned threads = options.threads ? options.threads
                                     : llvm::hardware_concurrency().compute_thread_count();
  {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(
        std::min<unsigned>(threads, bitcodes.size())));
    for (size_t i = 0; i < bitcodes.size(); ++i)
      pool.async([&, i] {
        llvm::StringRef bitcode(bitcodes[i].data(), bitcodes[i].size());
        failed[i] = mlir::failed(
            compilePartition(bitcode, options, kernelNames, objects[i], errors[i]));
      });
    pool.wait();
  }
  for (size_t i = 0; i < bitcodes.size(); ++i)
    if (failed[i]) {
      error = errors[i];
      return failure();
    }
  return success();
}
} // namespace

LogicalResult emitSharedObject(ModuleOp module, llvm::StringRef soPath,
                               const TargetOptions &options, std::string &error) {
  // Check everything that does not need the compile first: a bad path or a missing linker
  // should not cost a full compile.
  std::optional<ResolvedTarget> target = createTargetMachine(options, error);
  if (!target)
    return failure();
  std::optional<std::string> linker = findLinker(options, *target->architecture, error);
  if (!linker)
    return failure();

  llvm::SmallString<256> outPath(soPath);
  if (std::error_code ec = llvm::sys::fs::make_absolute(outPath)) {
    error = "cannot resolve '" + soPath.str() + "': " + ec.message();
    return failure();
  }
  llvm::SmallString<256> tempSoPath;
  int tempSoFd;
  std::string tempModel = outPath.str().str() + ".tmp-%%%%%%";
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(tempModel, tempSoFd, tempSoPath)) {
    error = "cannot write '" + outPath.str().str() + "': " + ec.message() +
            " (does the directory exist and is it writable?)";
    return failure();
  }
  llvm::sys::Process::SafelyCloseFileDescriptor(tempSoFd);
  TemporaryFile tempSo(tempSoPath);

  llvm::SmallString<128> workPath;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("initc-kernels", workPath)) {
    error = "cannot create a temporary directory: " + ec.message();
    return failure();
  }
  TemporaryDirectory work(workPath);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translate(module, llvmContext, options, *target, error);
  if (!llvmModule)
    return failure();
  llvm::SmallVector<std::string> exported;
  for (llvm::Function &function : *llvmModule)
    if (!function.isDeclaration() && function.hasExternalLinkage())
      exported.push_back(function.getName().str());

  llvm::SmallVector<std::string> objects;
  if (failed(compileToObjects(std::move(llvmModule), options, *target, work.path, objects,
                              error)))
    return failure();

  // Export exactly the kernels: the version script hides whatever the linker or libgcc adds.
  std::string scriptPath = work.path + "/exports.map";
  {
    std::error_code ec;
    llvm::raw_fd_ostream scriptStream(scriptPath, ec);
    if (ec) {
      error = "cannot write '" + scriptPath + "': " + ec.message();
      return failure();
    }
    scriptStream << "{\n";
    if (!exported.empty()) {
      scriptStream << "global:\n";
      for (const std::string &name : exported)
        scriptStream << "  " << name << ";\n";
    }
    scriptStream << "local: *;\n};\n";
    scriptStream.close();
    if (scriptStream.has_error()) {
      error = "cannot write '" + scriptPath + "': " + scriptStream.error().message();
      scriptStream.clear_error();
      return failure();
    }
  }

  // -nostdlib: kernels call nothing, so kernels.so needs no libc, no crt files, and loads into
  // any process. libgcc (static, hidden) covers helpers such as f16 conversions on CPUs
  // without F16C. -z defs turns any other undefined symbol into a link error; -Bsymbolic binds
  // a kernel's call to another kernel inside the library (no PLT, no interposition).
  std::vector<std::string> args = {*linker, "-shared", "-nostdlib", "-o", tempSoPath.str().str()};
  args.insert(args.end(), objects.begin(), objects.end());
  args.insert(args.end(), {"-Wl,--version-script=" + scriptPath, "-Wl,-z,defs",
                           "-Wl,-z,noexecstack", "-Wl,-Bsymbolic", "-lgcc"});
  if (failed(runLinker(*linker, args, work.path + "/link.log", error)))
    return failure();
  // A linker that exits 0 without writing a shared object (a wrong --linker) is caught here,
  // not when prog/init fails to load it.
  {
    char magic[4] = {};
    std::ifstream written(tempSoPath.str().str(), std::ios::binary);
    if (!written.read(magic, sizeof(magic)) || std::memcmp(magic, "\x7f" "ELF", 4) != 0) {
      error = "the linker '" + *linker + "' exited successfully but wrote no shared object to '" +
              tempSoPath.str().str() + "': pass a C compiler driver (cc, gcc, clang) with --linker";
      return failure();
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(tempSoPath, outPath)) {
    error = "cannot rename '" + tempSoPath.str().str() + "' to '" + outPath.str().str() +
            "': " + ec.message();
    return failure();
  }
  tempSo.keep();
  return success();
}

} // namespace initc::target
