//===- ProgramDirectory.cpp - kernels.so, program.json and prog/init ------===//
#include "initc/Pipeline/Pipeline.h"

#include "initc/Dialect/Init/IR/InitOps.h"
#include "initc/Target/LLVMCPU/CPUResolution.h"
#include "initrt/base/checksum.h"
#include "initrt/base/cpu.h"
#include "initrt/base/program_io.h"
#include "initrt/base/temporaries.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <cerrno>
#include <fstream>
#include <csignal>
#include <unistd.h>

using namespace mlir;
using namespace initc;
using namespace initc::init;

OwningOpRef<ModuleOp> initc::extractKernels(ModuleOp module) {
  OpBuilder builder(module.getContext());
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(module.getLoc());
  builder.setInsertionPointToEnd(kernels->getBody());
  for (auto func : llvm::to_vector(module.getOps<func::FuncOp>()))
    if (func->hasAttr("initc.kernel"))
      builder.clone(*func);
  return kernels;
}

FailureOr<std::vector<initrt::KernelVariant>>
initc::kernelVariants(ModuleOp kernels, const target::TargetOptions &options, std::string &error) {
  std::vector<std::pair<std::string, std::string>> cpus; // CPU, symbol suffix
  llvm::StringRef first;
  for (auto func : kernels.getOps<func::FuncOp>()) {
    auto cpu = func->getAttrOfType<StringAttr>("initc.target_cpu");
    if (!cpu)
      continue;
    llvm::StringRef name = func.getSymName();
    if (first.empty())
      first = name;
    if (name != first && !(name.starts_with(first) && name[first.size()] == '.'))
      break;
    cpus.push_back({cpu.getValue().str(), name.drop_front(first.size()).str()});
  }
  if (cpus.empty())
    cpus.push_back({options.cpu, ""});
  std::vector<initrt::KernelVariant> variants;
  for (const auto &[cpu, suffix] : cpus) {
    target::TargetOptions variant = options;
    variant.cpu = cpu;
    std::optional<std::vector<std::string>> extensions =
        target::cpuExtensions(cpu, options, error);
    if (!extensions)
      return failure();
    variants.push_back({target::resolveTargetCpu(variant), suffix, *extensions});
  }
  return variants;
}

LogicalResult initc::writeProgramDir(ModuleOp partitioned, llvm::StringRef modelName,
                                     llvm::StringRef dir, llvm::StringRef runtimePath,
                                     const target::TargetOptions &targetOptions,
                                     initrt::Program &program, std::string &error) {
  namespace fs = llvm::sys::fs;
  if (failed(buildProgram(partitioned, modelName, program, error)))
    return failure();
  if (!fs::exists(runtimePath)) {
    error = "the runtime '" + runtimePath.str() +
            "' is missing: build the target init, or reinstall initc";
    return failure();
  }
  // prog/init runs the kernels in its own process: both must be for the same architecture.
  const target::TargetArchitecture *architecture =
      target::targetArchitecture(targetOptions, error);
  if (!architecture)
    return failure();
  {
    unsigned char header[64] = {};
    std::ifstream runtime(runtimePath.str(), std::ios::binary);
    runtime.read(reinterpret_cast<char *>(header), sizeof header);
    std::string foreign = initrt::foreignElfArchitecture(header, size_t(runtime.gcount()),
                                                         architecture->elfMachine());
    if (!foreign.empty()) {
      error = "the runtime '" + runtimePath.str() + "' is " + foreign +
              " code, and the kernels are for " + architecture->name().str() +
              ": pass --runtime with prog/init built for " + architecture->name().str() +
              " (README, \"Other architectures\")";
      return failure();
    }
  }
  // `prog/` and `prog` are the same directory; the temporary one is its sibling.
  std::string dirPath = dir.str();
  while (dirPath.size() > 1 && dirPath.back() == '/')
    dirPath.pop_back();
  {
    llvm::SmallString<256> absolute(dirPath), cwd;
    if (fs::exists(dirPath))
      (void)fs::real_path(dirPath, absolute);
    else
      (void)fs::make_absolute(absolute);
    llvm::sys::path::remove_dots(absolute, /*remove_dot_dot=*/true);
    (void)fs::current_path(cwd);
    llvm::StringRef here(cwd);
    if (absolute == "/" || here == absolute.str() || here.starts_with((absolute + "/").str())) {
      error = "-o '" + dir.str() +
              "' contains the current directory, which would be replaced: name a program "
              "directory, e.g. -o prog";
      return failure();
    }
  }
  // A directory that exists must hold a program and nothing else: replacing it must not take a
  // checkpoint or anything else with it.
  if (fs::exists(dirPath)) {
    if (!fs::is_directory(dirPath)) {
      error = "refusing to replace '" + dir.str() + "': it is not a directory; choose another -o";
      return failure();
    }
    std::error_code ec;
    bool isProgram = fs::exists(dirPath + "/program.json");
    for (fs::directory_iterator it(dirPath, ec), end; it != end && !ec; it.increment(ec)) {
      llvm::StringRef name = llvm::sys::path::filename(it->path());
      if (!isProgram) {
        error = "refusing to replace '" + dir.str() +
                "': it exists and is not a program directory; choose another -o";
        return failure();
      }
      if (name != "program.json" && name != program.kernelsFile && name != "init") {
        error = "refusing to replace the program in '" + dir.str() + "': it also holds '" +
                name.str() + "', which is not part of a program; move it or choose another -o";
        return failure();
      }
    }
    if (ec) {
      error = "cannot read '" + dir.str() + "': " + ec.message();
      return failure();
    }
  }
  // What an interrupted compile left next to it: DIR.tmp-PID and DIR.old-PID of processes that
  // are gone (a kill(pid, 0) of ESRCH; a live compile's are left alone).
  {
    llvm::StringRef parent = llvm::sys::path::parent_path(dirPath);
    std::string base = llvm::sys::path::filename(dirPath).str();
    std::error_code ec;
    for (fs::directory_iterator it(parent.empty() ? "." : parent, ec), end; it != end && !ec;
         it.increment(ec)) {
      llvm::StringRef name = llvm::sys::path::filename(it->path()), pidText;
      if (name.starts_with(base + ".tmp-"))
        pidText = name.drop_front(base.size() + 5);
      else if (name.starts_with(base + ".old-"))
        pidText = name.drop_front(base.size() + 5);
      int pid = 0;
      if (!pidText.empty() && !pidText.getAsInteger(10, pid) && pid > 0 &&
          ::kill(pid, 0) != 0 && errno == ESRCH)
        (void)fs::remove_directories(it->path());
    }
  }
  std::string tmp = dirPath + ".tmp-" + std::to_string(::getpid());
  (void)fs::remove_directories(tmp);
  // Readable and runnable by all, as the umask allows (the default would leave out others).
  if (auto ec = fs::create_directories(tmp, /*IgnoreExisting=*/true, fs::all_all)) {
    error = "cannot create '" + tmp + "': " + ec.message();
    return failure();
  }
  // An interrupt removes it too (files only: it never holds a subdirectory).
  int tmpSlot = initrt::registerTemporary(tmp, /*directory=*/true);
  auto fail = [&](std::string message) {
    error = std::move(message);
    (void)fs::remove_directories(tmp);
    initrt::unregisterTemporary(tmpSlot);
    return failure();
  };

  OwningOpRef<ModuleOp> kernels = extractKernels(partitioned);
  FailureOr<std::vector<initrt::KernelVariant>> variants =
      kernelVariants(*kernels, targetOptions, error);
  if (failed(variants))
    return fail(error);
  program.kernelVariants = std::move(*variants);
  std::string soPath = tmp + "/" + program.kernelsFile;
  std::string targetError;
  if (failed(target::emitSharedObject(*kernels, soPath, targetOptions, targetError)))
    return fail("generating native code failed: " + targetError);
  auto so = llvm::MemoryBuffer::getFile(soPath);
  if (!so)
    return fail("cannot read back '" + soPath + "': " + so.getError().message());
  program.kernelsChecksum =
      initrt::checksumHex((*so)->getBufferStart(), (*so)->getBufferSize());
  // The id covers everything that decides the bytes: model, seed, mesh, shardings, kernels.
  program.programId.clear();
  std::string identity = initrt::programToJson(program);
  program.programId = initrt::checksumHex(identity.data(), identity.size());
  std::string ioError;
  if (!initrt::writeProgramJson(tmp + "/program.json", program, ioError))
    return fail(ioError);
  std::string initPath = tmp + "/init";
  if (auto ec = fs::copy_file(runtimePath, initPath))
    return fail("cannot copy the runtime into '" + initPath + "': " + ec.message());
  if (auto ec = fs::setPermissions(initPath, fs::all_read | fs::all_exe | fs::owner_write))
    return fail("cannot make '" + initPath + "' executable: " + ec.message());

  // The old program moves aside before the new one moves in, so that a failure leaves one of
  // them whole under the final name.
  std::string old = dirPath + ".old-" + std::to_string(::getpid());
  bool replacing = fs::exists(dirPath);
  if (replacing) {
    (void)fs::remove_directories(old);
    if (auto ec = fs::rename(dirPath, old))
      return fail("cannot replace '" + dir.str() + "': " + ec.message());
  }
  if (auto ec = fs::rename(tmp, dirPath)) {
    if (replacing)
      (void)fs::rename(old, dirPath);
    return fail("cannot move the program into '" + dir.str() + "': " + ec.message());
  }
  initrt::unregisterTemporary(tmpSlot); // a signal before this finds nothing under tmp
  if (replacing)
    (void)fs::remove_directories(old);
  return success();
}
