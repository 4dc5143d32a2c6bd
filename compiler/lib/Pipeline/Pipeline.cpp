//===- Pipeline.cpp - from an init module to a program directory ----------===//
#include "initc/Pipeline/Pipeline.h"

#include "initc/Dialect/Init/IR/InitOps.h"
#include "initc/Random/Expand.h"
#include "initc/Support/DType.h"
#include "initc/Support/Nesting.h"
#include "initc/Conversion/Passes.h"
#include "initc/Transforms/Passes.h"
#include "initrt/base/base_checkpoint.h"
#include "initrt/base/checksum.h"
#include "initrt/base/program_io.h"
#include "initrt/base/temporaries.h"

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
    std::optional<bool> converts = target::convertsBF16(cpu, options, error);
    if (!converts)
      return failure();
    if (*converts)
      pipeline.bf16ConvertingCpus.push_back(cpu);
    if (shaped) {
      targets.push_back(entry);
      continue;
    }
    std::optional<std::string> loop = target::defaultVectorLoop(cpu, options, error);
    if (!loop)
      return failure();
    targets.push_back(cpu + *loop);
  }
  return success();
}

namespace {
/// `targets` without those for CPUs with bf16 conversion instructions (x86's `CPU+avx512bf16`,
/// target::addsBF16Conversion) when no kernel converts a sample to bf16 by one
/// (random::kNoNaNOrSubnormalAttr): their code would be the next variant's. A target is left out
/// only while another remains.
std::vector<std::string> variantsWorthBuilding(ModuleOp module,
                                               const std::vector<std::string> &targets) {
  bool converts = false;
  module.walk([&](arith::TruncFOp op) {
    converts = op->hasAttr(random::kNoNaNOrSubnormalAttr);
    return converts ? WalkResult::interrupt() : WalkResult::advance();
  });
  std::vector<std::string> kept;
  for (size_t i = 0; i < targets.size(); ++i) {
    bool forConversions = target::addsBF16Conversion(targetCpuName(targets[i]));
    if (!forConversions || converts || (kept.empty() && i + 1 == targets.size()))
      kept.push_back(targets[i]);
  }
  return kept;
}
} // namespace

StageOptions initc::partitionStageOptions(ModuleOp module, const PipelineOptions &options) {
  StageOptions stageOptions{options.mesh, options.shard, {}, {}};
  stageOptions.targets = variantsWorthBuilding(module, options.kernelTargets);
  for (const std::string &cpu : options.bf16ConvertingCpus)
    if (llvm::any_of(stageOptions.targets,
                     [&](const std::string &t) { return targetCpuName(t) == cpu; }))
      stageOptions.bf16ConvertingCpus.push_back(cpu);
  return stageOptions;
}

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
  auto runStage = [&](Stage stage) -> LogicalResult {
    PassManager pm(context);
    std::optional<TimingScope> stageTiming;
    if (options.timing && stage != Stage::Input && stage != Stage::LLVM) {
      stageTiming = options.timing->nest(stageNames()[size_t(stage)]);
      pm.enableTiming(*stageTiming);
    }
    if (stage == Stage::Input)
      return checkBaseCheckpoints(module);
    if (stage == Stage::LLVM)
      return success();
    addStagePasses(pm, stage,
                   stage == Stage::Partitioned
                       ? partitionStageOptions(module, options)
                       : StageOptions{options.mesh, options.shard, {}, {}});
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
  // The config `initc import hf` read, in the form program.json gives back to the runtime.
  if (auto config = module->getAttrOfType<StringAttr>(init::InitDialect::kHfConfigAttr)) {
    std::string why;
    if (!initrt::canonicalHfConfig(config.getValue().str(), program.hfConfig, why)) {
      error = "the model's " + init::InitDialect::kHfConfigAttr.str() + " " + why;
      return failure();
    }
  }
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
    if (auto stage = param.getStageAttr()) {
      // The verifier checked that the mesh has this stage axis.
      auto axis = meshes[0]->getAttrOfType<StringAttr>(InitDialect::kStageAxisAttr);
      auto names = getMeshAxisNames(meshes[0]);
      p.stageAxis = int(llvm::find(names, axis.getValue().str()) - names.begin());
      p.stage = stage.getInt();
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
