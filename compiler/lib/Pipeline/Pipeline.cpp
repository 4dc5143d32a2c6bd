//===- Pipeline.cpp - from an init module to a program directory ----------===//
#include "initc/Pipeline/Pipeline.h"

#include "initc/Dialect/Init/IR/InitOps.h"
#include "initc/Random/Expand.h"
#include "initc/Support/DType.h"
#include "initc/Support/Nesting.h"
#include "initc/Conversion/Passes.h"
#include "initc/Transforms/Passes.h"
#include "initrt/base_checkpoint.h"
#include "initrt/checksum.h"
#include "initrt/program_io.h"
#include "initrt/temporaries.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"

#include <cerrno>
#include <csignal>
#include <unistd.h>

using namespace mlir;
using namespace initc;
using namespace initc::init;

llvm::ArrayRef<llvm::StringRef> initc::stageNames() {
  static const llvm::StringRef names[] = {"input", "sharded",     "canonical", "dead-inits",
                                          "fused", "partitioned", "llvm"};
  return names;
}

bool initc::parseStage(llvm::StringRef name, Stage &stage) {
  auto names = stageNames();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) {
      stage = (Stage)i;
      return true;
    }
  return false;
}

OwningOpRef<ModuleOp> initc::loadModel(MLIRContext &context, llvm::StringRef path,
                                       std::string &error) {
  if (path != "-" && llvm::sys::fs::is_directory(path)) {
    llvm::StringRef dir = path.size() > 1 ? path.rtrim('/') : path;
    llvm::SmallString<256> program(dir);
    llvm::sys::path::append(program, "program.json");
    error =
        path.str() +
        (llvm::sys::fs::exists(program)
             ? " is a program that `initc compile` wrote: pass the init IR (.mlir) it was "
               "compiled from; its parameters are also in " +
                   std::string(program) + ", and `" + dir.str() + "/init --help` says how to run it"
             : std::string(" is a directory, not init IR: pass the .mlir that `initc "
                           "import` writes (or hand-written IR)"));
    return nullptr;
  }
  auto file = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!file) {
    error = "cannot read " + path.str() + ": " + file.getError().message();
    return nullptr;
  }
  // What people pass by mistake: a config, a checkpoint or a program file. IR is text that
  // starts with an op or a comment, never with '{'.
  llvm::StringRef text = (*file)->getBuffer();
  if (text.take_front(4096).contains('\0')) {
    error = path.str() + " is a binary file, not init IR: pass the .mlir that `initc import` "
                         "writes (or hand-written IR)";
    return nullptr;
  }
  // ("{-#" opens MLIR's file metadata, which may come first.)
  if (text.ltrim().starts_with("{") && !text.ltrim().starts_with("{-#")) {
    error = path.str() + " is JSON, not init IR: " +
            (text.contains("\"model_type\"")
                 ? "for a HuggingFace config, run `initc import hf " + path.str() +
                       " -o model.mlir` and pass model.mlir"
                 : std::string("pass the .mlir that `initc import` writes (or hand-written IR)"));
    return nullptr;
  }
  if (unsigned line = lineNestedDeeperThan((*file)->getBuffer())) {
    emitError(FileLineColLoc::get(&context, path, line, 0))
        << "brackets nest more than " << kMaxNesting
        << " levels deep: this is not a model initc reads; check the file";
    return nullptr;
  }
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return nullptr;
  if (failed(verifyModel(*module)))
    return nullptr;
  return module;
}

LogicalResult initc::kernelTargets(llvm::ArrayRef<std::string> cpus,
                                   const target::TargetOptions &options,
                                   PipelineOptions &pipeline, std::string &error) {
  std::vector<std::string> &targets = pipeline.kernelTargets;
  targets.clear();
  pipeline.bf16ConvertingCpus.clear();
  llvm::StringSet<> seen;
  for (const std::string &entry : cpus) {
    // `CPU`, or `CPU:GROUPS[xBLOCKS]` to choose the vector loop's shape (init-partition checks
    // it): for measuring what suits a machine.
    std::string cpu = targetCpuName(entry);
    bool shaped = cpu.size() != entry.size();
    if (!seen.insert(cpu).second) {
      error = "target CPU '" + cpu + "' is listed twice";
      return failure();
    }
    std::optional<unsigned> registers = target::vectorRegisters(cpu, options, error);
    if (!registers)
      return failure();
    std::optional<std::vector<std::string>> extensions =
        target::cpuExtensions(cpu, options, error);
    if (!extensions)
      return failure();
    if (llvm::is_contained(*extensions, "avx512bf16"))
      pipeline.bf16ConvertingCpus.push_back(cpu);
    if (shaped) {
      targets.push_back(entry);
      continue;
    }
    // Several groups of blocks per iteration, so that independent chains hide the latency of
    // Philox's multiplies and of the polynomials: three of 16 blocks with AVX-512 (32 registers
    // of 16 floats), so that the float transforms run at full width, else two of 8. With AVX2,
    // two groups of 8 run 9-29% faster than one, though the second spills; with AVX-512 three
    // groups run uniform 6-13% and normal 3-4% faster than two (ir-spec/lowering.md).
    targets.push_back(cpu + (*registers >= 32 ? ":3x16" : ":2"));
  }
  return success();
}

namespace {
/// `targets` without those for CPUs with bf16 conversion instructions (`CPU+avx512bf16`) when no
/// kernel converts a sample to bf16 by one (random::kNoNaNOrSubnormalAttr): their code would be
/// the next variant's. A target is left out only while another remains.
std::vector<std::string> variantsWorthBuilding(ModuleOp module,
                                               const std::vector<std::string> &targets) {
  bool converts = false;
  module.walk([&](arith::TruncFOp op) {
    converts = op->hasAttr(random::kNoNaNOrSubnormalAttr);
    return converts ? WalkResult::interrupt() : WalkResult::advance();
  });
  std::vector<std::string> kept;
  for (size_t i = 0; i < targets.size(); ++i) {
    bool forConversions = llvm::StringRef(targetCpuName(targets[i])).ends_with("+avx512bf16");
    if (!forConversions || converts || (kept.empty() && i + 1 == targets.size()))
      kept.push_back(targets[i]);
  }
  return kept;
}
} // namespace

// The tensors init.load reads, checked against the parameter types where the files are: a
// mismatch found now costs no job. A file that is not here may be on the hosts that run the
// program (its path is relative to their working directory), so it is only warned about.
static LogicalResult checkBaseCheckpoints(ModuleOp module) {
  initrt::BaseFiles files;
  llvm::StringSet<> absent, said;
  bool ok = true;
  module.walk([&](LoadOp load) {
    std::string file = load.getFile().str(), error;
    // The file, or the file of an index that holds the tensor.
    std::optional<std::string> path =
        llvm::sys::fs::exists(file) ? files.locate(file, load.getTensor().str(), error) : file;
    if (path && !llvm::sys::fs::exists(*path)) {
      if (absent.insert(*path).second)
        load.emitWarning() << "'" << *path
                           << "' does not exist here: it is read when prog/init runs"
                           << (llvm::sys::path::is_absolute(*path)
                                   ? ""
                                   : ", from the directory it runs in");
      return;
    }
    auto param = load->getParentOfType<ParamOp>();
    auto type = cast<RankedTensorType>(load.getType());
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    initrt::DType dtype;
    std::optional<initrt::BaseTensor> tensor =
        path ? files.find(file, load.getTensor().str(), error) : std::nullopt;
    if (tensor && (!param || !dtypeOf(type.getElementType(), dtype) ||
                   initrt::checkBaseTensor(*tensor, param.getSymName().str(), dtype, shape, error)))
      return; // the op verifiers report a load outside a parameter or of an unknown type
    ok = false;
    if (said.insert(error).second) // a file that cannot be read: once, at its first load
      load.emitError() << error;
  });
  return success(ok);
}

LogicalResult initc::runPipeline(ModuleOp module, const PipelineOptions &options, Stage last) {
  MLIRContext *context = module.getContext();
  // The partition stage's, which outlive its pass manager.
  std::vector<std::string> targets, bf16ConvertingCpus;
  auto runStage = [&](Stage stage) -> LogicalResult {
    PassManager pm(context);
    std::optional<TimingScope> stageTiming;
    if (options.timing && stage != Stage::Input && stage != Stage::LLVM) {
      stageTiming = options.timing->nest(stageNames()[size_t(stage)]);
      pm.enableTiming(*stageTiming);
    }
    switch (stage) {
    case Stage::Input:
      return checkBaseCheckpoints(module);
    case Stage::LLVM:
      return success();
    case Stage::Sharded: {
      ApplyShardingOptions sharding;
      sharding.mesh = options.mesh;
      sharding.shard = options.shard;
      pm.addPass(createApplySharding(sharding));
      break;
    }
    case Stage::Canonical:
      pm.addPass(createCanonicalizerPass());
      pm.addPass(createCSEPass());
      break;
    case Stage::DeadInitsEliminated:
      pm.addPass(createEliminateDeadInits());
      break;
    case Stage::Fused:
      pm.addPass(createFuseElementwise());
      break;
    case Stage::Partitioned: {
      PartitionOptions partition;
      targets = variantsWorthBuilding(module, options.kernelTargets);
      partition.targets = targets;
      for (const std::string &cpu : options.bf16ConvertingCpus)
        if (llvm::any_of(targets, [&](const std::string &t) { return targetCpuName(t) == cpu; }))
          bf16ConvertingCpus.push_back(cpu);
      partition.bf16ConvertingCpus = bf16ConvertingCpus;
      pm.addPass(createPartition(partition));
      break;
    }
    }
    return pm.run(module);
  };
  for (int s = (int)options.first; s <= (int)last; ++s)
    if (failed(runStage((Stage)s)))
      return failure();
  return success();
}

LogicalResult initc::buildProgram(ModuleOp module, llvm::StringRef modelName,
                                  initrt::Program &program, std::string &error) {
  program = initrt::Program();
  program.modelName = modelName.str();
  program.seed = getModelSeed(module);
  auto meshes = llvm::to_vector(module.getOps<mesh::MeshOp>());
  // "file:line: " of a mesh, for messages that are not diagnostics.
  auto where = [](mesh::MeshOp mesh) {
    auto at = dyn_cast<FileLineColLoc>(mesh.getLoc());
    return at ? at.getFilename().str() + ":" + std::to_string(at.getLine()) + ": " : "";
  };
  if (meshes.size() > 1) {
    error = where(meshes[1]) + "the model has " + std::to_string(meshes.size()) + " meshes (@" +
            meshes[0].getSymName().str() + ", @" + meshes[1].getSymName().str() +
            (meshes.size() > 2 ? ", ..." : "") +
            "); keep one, or pass --mesh and --shard to replace them";
    return failure();
  }
  if (!meshes.empty()) {
    for (auto &name : getMeshAxisNames(meshes[0]))
      program.mesh.axisNames.push_back(name);
    program.mesh.shape.assign(meshes[0].getShape().begin(), meshes[0].getShape().end());
    for (int64_t size : program.mesh.shape)
      if (size <= 0) {
        error = where(meshes[0]) + "mesh '@" + meshes[0].getSymName().str() +
                "' has a dynamic or empty axis: give every axis a size, or pass --mesh and "
                "--shard to replace it";
        return failure();
      }
  }
  llvm::StringMap<size_t> indexOf;
  for (ParamOp param : module.getOps<ParamOp>()) {
    if (param.getTiedTo())
      continue;
    initrt::Param p;
    p.name = param.getSymName().str();
    RankedTensorType type = param.getTensorType();
    if (!dtypeOf(type.getElementType(), p.dtype)) {
      error = "parameter '" + p.name + "' has an unsupported element type";
      return failure();
    }
    p.shape.assign(type.getShape().begin(), type.getShape().end());
    if (auto sharding = param.getMeshSharding()) {
      for (auto axes : sharding.getSplitAxes()) {
        std::vector<int> dim;
        for (int16_t a : axes.asArrayRef())
          dim.push_back(a);
        p.splitAxes.push_back(dim);
      }
      // Unsplit trailing dims (`[[]]` for a replicated one) are left out: replicated is `[]`.
      while (!p.splitAxes.empty() && p.splitAxes.back().empty())
        p.splitAxes.pop_back();
    }
    if (auto kernel = param.getKernelAttr())
      p.kernel = kernel.getValue().str();
    if (auto args = param.getKernelArgsAttr())
      for (int64_t arg : args.asArrayRef())
        p.kernelArgs.push_back((uint64_t)arg);
    p.buffer = param.getBuffer();
    p.persistent = !param.getNonpersistent();
    // Set by init-partition on parameters whose kernel yields the input of a whole-tensor step.
    if (auto transform = param->getAttrOfType<StringAttr>("initc.transform")) {
      p.transform = transform.getValue().str();
      if (auto gain = param->getAttrOfType<FloatAttr>("initc.gain"))
        p.gain = gain.getValueAsDouble();
    }
    // A parameter that yields an init.load keeps it through init-partition: the runtime reads it.
    if (Value yielded = param.getYieldedValue())
      if (auto load = yielded.getDefiningOp<LoadOp>())
        p.load = initrt::Param::Load{load.getFile().str(), load.getTensor().str()};
    indexOf[p.name] = program.params.size();
    program.params.push_back(std::move(p));
  }
  for (ParamOp param : module.getOps<ParamOp>())
    if (auto tied = param.getTiedToAttr())
      program.params[indexOf.lookup(tied.getValue())].aliases.push_back(
          param.getSymName().str());
  return success();
}

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
            "' is missing: build the target initrt-run, or reinstall initc";
    return failure();
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
