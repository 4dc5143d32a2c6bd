//===- compile.cpp - initc compile ----------------------------------------===//
//
// A model for a mesh into a program directory (kernels.so, program.json, the runtime), or, with
// --emit, the IR after a stage, the kernels' LLVM IR or their assembly.
//
//===----------------------------------------------------------------------===//
#include "session.h"
#include "subcommands.h"

#include "initc/Pipeline/Pipeline.h"
#include "initc/Target/LLVMCPU/LibraryBuilder.h"
#include "initrt/base/program.h"
#include "initrt/base/report.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <chrono>
#include <set>

using namespace mlir;

namespace initc::driver {

namespace {

/// "x86-64-v4, x86-64-v3" for a program with kernels for both.
std::string targetsText(const initrt::Program &program) {
  std::string text;
  for (const initrt::KernelVariant &variant : program.kernelVariants)
    text += (text.empty() ? "" : ", ") + variant.targetCpu;
  return text;
}

/// The prog/init built beside initc: for kernels of this machine's architecture.
std::string runtimePath() {
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  llvm::SmallString<256> path(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(path, "init");
  return path.str().str();
}

} // namespace

int runCompile(const CompileArgs &args) {
  auto start = std::chrono::steady_clock::now();
  Session session;
  int status = 0;
  OwningOpRef<ModuleOp> module =
      loadModelForMesh(session, args.model, args.mesh, args.shard, status);
  if (!module)
    return status;
  // IR already partitioned (--stage=partitioned) has its kernels' CPUs: a --target-cpu would be
  // ignored, and the program run on a CPU its kernels were not built for.
  if (args.targetCpuGiven) {
    llvm::SetVector<llvm::StringRef> built;
    for (auto func : module->getOps<func::FuncOp>())
      if (auto cpu = func->getAttrOfType<StringAttr>("initc.target_cpu"))
        built.insert(cpu.getValue());
    if (!built.empty())
      return fail(args.model + " is already partitioned, with kernels for " +
                  llvm::join(built, ", ") +
                  ": --target-cpu cannot change them; drop it, or compile IR from before "
                  "partitioning (--emit=mlir --stage=fused)");
  }
  // --timing: one report on stderr at the end, each stage's passes and then native code.
  DefaultTimingManager timingManager;
  timingManager.setEnabled(args.timing);
  TimingScope timing = timingManager.getRootScope();
  initc::PipelineOptions options{args.mesh, args.shard};
  if (args.timing)
    options.timing = &timing;
  initc::target::TargetOptions targetOptions;
  targetOptions.linker = args.linker;
  llvm::SmallVector<llvm::StringRef> cpuList;
  llvm::StringRef(args.targetCpu).split(cpuList, ',');
  std::vector<std::string> cpus;
  for (llvm::StringRef cpu : cpuList) {
    if (cpu.trim().empty())
      return fail("--target-cpu '" + args.targetCpu +
                  "' has an empty entry: list CPUs separated by commas, e.g. x86-64-v4,x86-64-v3");
    cpus.push_back(cpu.trim().str());
  }
  // The target machine's own CPU: the last, most portable one (every kernel names its own).
  targetOptions.cpu = initc::targetCpuName(cpus.back());
  {
    std::string error;
    if (failed(initc::kernelTargets(cpus, targetOptions, options, error)))
      return fail(error);
  }

  initc::Stage stage = initc::Stage::Partitioned;
  if (!initc::parseStage(args.stage, stage))
    return fail("unknown --stage '" + args.stage + "'");
  if (args.stageGiven && args.emit != "mlir")
    return usageError("--stage applies to --emit=mlir only: add --emit=mlir, or drop --stage");
  if (!args.emit.empty()) {
    if (args.emit != "mlir")
      stage = initc::Stage::Partitioned;
    if (failed(initc::runPipeline(*module, options, stage)))
      return 1;
    std::string output = args.output.empty() ? "-" : args.output;
    if (args.emit == "mlir" && stage != initc::Stage::LLVM)
      return writeOutput(
          output, [&](llvm::raw_ostream &os) { module->print(os); }, args.model);
    auto kernels = initc::extractKernels(*module);
    std::string error;
    if (failed(initc::target::lowerToLLVMDialect(*kernels, targetOptions, error)))
      return fail(error);
    if (args.emit == "mlir")
      return writeOutput(
          output, [&](llvm::raw_ostream &os) { kernels->print(os); }, args.model);
    llvm::LLVMContext llvmContext;
    auto llvmModule =
        initc::target::translateAndOptimize(*kernels, llvmContext, targetOptions, error);
    if (!llvmModule)
      return fail(error);
    if (args.emit == "llvm")
      return writeOutput(
          output, [&](llvm::raw_ostream &os) { llvmModule->print(os, nullptr); }, args.model);
    llvm::SmallString<0> assembly;
    llvm::raw_svector_ostream assemblyStream(assembly);
    if (failed(initc::target::emitMachineCode(*llvmModule, targetOptions,
                                              initc::target::CodeFileKind::Assembly,
                                              assemblyStream, error)))
      return fail(error);
    return writeOutput(
        output, [&](llvm::raw_ostream &os) { os << assembly; }, args.model);
  }

  if (args.output.empty())
    return usageError("compile needs -o DIR (the program directory), or --emit=mlir|llvm|asm");
  if (args.output == "-")
    return usageError(
        "-o -: a program is a directory, not a stream: name the directory, or print the "
        "IR, LLVM IR or assembly with --emit=mlir|llvm|asm");
  if (failed(initc::runPipeline(*module, options, initc::Stage::Partitioned)))
    return 1;
  initrt::Program program;
  std::string error;
  TimingScope codegenTiming = timing.nest("native code, program directory");
  if (failed(initc::writeProgramDir(*module, modelNameOf(*module, args.model), args.output,
                                    args.runtime.empty() ? runtimePath() : args.runtime,
                                    targetOptions, program, error)))
    return fail(error);
  codegenTiming.stop();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::set<std::string> kernelNames; // one per recipe, whatever the number of targets
  for (const auto &param : program.params)
    if (!param.kernel.empty())
      kernelNames.insert(param.kernel);
  size_t kernels = kernelNames.size();
  uint64_t bytes = 0;
  for (auto &p : program.params)
    bytes += p.numElements() * initrt::dtypeBytes(p.dtype);
  std::string dir = args.output;
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  llvm::outs() << "compiled " << program.modelName << ": " << program.params.size() << " tensors ("
               << initrt::formatBytes(bytes) << "), " << kernels << " kernels, "
               << program.mesh.size() << (program.mesh.size() == 1 ? " rank" : " ranks")
               << ", target " << targetsText(program) << ", in " << llvm::format("%.2f", seconds)
               << " s -> " << dir << "\n"
               << "run it: mpirun -np " << program.mesh.size() << " ";
  // The command as a shell takes it: a directory with spaces or quotes is quoted.
  auto printInit = [&] {
    std::string init = dir + "/init";
    bool plain = llvm::all_of(
        init, [](char c) { return llvm::isAlnum(c) || llvm::StringRef("_./-+=:,@%").contains(c); });
    llvm::sys::printArg(llvm::outs(), init, /*Quote=*/!plain);
  };
  printInit();
  llvm::outs() << " --out CKPT_DIR   (or ";
  printInit();
  llvm::outs() << " --rank K --out CKPT_DIR for one rank)\n";
  return 0;
}

} // namespace initc::driver
