#include "initc/Target/SharedObject.h"
#include "initc/Random/Expand.h"
#include "initc/Target/HighWordsByShuffle.h"
#include "initc/Target/KernelScheduler.h"
#include "initc/Target/PairBF16Conversions.h"
#include "initc/Target/TruncateByShuffle.h"
#include "initc/Target/UnitFloatByConversion.h"
#include "initc/Target/WideConstants.h"
#include "initrt/base/cpu.h"
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

/// Collects the error diagnostics emitted while it lives, one per line, with their locations.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &diag) {
          if (diag.getSeverity() != DiagnosticSeverity::Error)
            return success();
          llvm::raw_string_ostream os(messages);
          if (!messages.empty())
            os << "\n";
          os << diag.getLocation() << ": " << diag.str();
          for (const Diagnostic &note : diag.getNotes())
            os << "\n  note: " << note.str();
          return success();
        }) {}

  std::string take(llvm::StringRef fallback) {
    return messages.empty() ? fallback.str() : messages;
  }

private:
  std::string messages;
  ScopedDiagnosticHandler handler;
};

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

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

bool isKnownFeature(const llvm::MCSubtargetInfo &subtarget, llvm::StringRef name) {
  return llvm::any_of(subtarget.getAllProcessorFeatures(),
                      [&](const llvm::SubtargetFeatureKV &kv) { return name == kv.Key; });
}

/// The feature string for code compiled for `cpu` (as the user wrote it): the host's features
/// for "native", then the user's extra features. Every named feature must exist for the
/// target, or LLVM would only print a warning on stderr and ignore it.
std::optional<std::string> resolveFeatures(llvm::StringRef cpu, const TargetOptions &options,
                                           const llvm::MCSubtargetInfo &subtarget,
                                           std::string &error) {
  llvm::SmallVector<std::string> features;
  if (cpu == "native")
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features.push_back((feature.second ? "+" : "-") + feature.first().str());
  llvm::SmallVector<llvm::StringRef> extra;
  llvm::StringRef(options.features).split(extra, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef feature : extra) {
    feature = feature.trim();
    if (feature.empty())
      continue;
    if (feature[0] != '+' && feature[0] != '-') {
      error = "target feature '" + feature.str() +
              "' must start with '+' (enable) or '-' (disable), e.g. +avx512f";
      return std::nullopt;
    }
    if (!isKnownFeature(subtarget, feature.drop_front())) {
      error = "unknown target feature '" + feature.drop_front().str() +
              "' (list the valid ones with `llc -march=x86-64 -mattr=help`)";
      return std::nullopt;
    }
    features.push_back(feature.str());
  }
  return llvm::join(features, ",");
}

/// A CPU and feature string a function is compiled for, and the extensions they let it use.
struct CpuTarget {
  std::string cpu;
  std::string features;
  std::vector<std::string> extensions; // initrt::detectableCpuExtensions() it has
};

struct ResolvedTarget {
  std::string triple;
  const llvm::Target *llvmTarget = nullptr;
  std::string cpu;
  std::string features;
  std::unique_ptr<llvm::TargetMachine> machine;
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget; // to resolve the kernels' own CPUs
};

/// Turns off, in `resolved`, the extensions its CPU has that the runtime cannot detect (so a
/// variant never needs what prog/init does not check), then lists the detectable ones it uses.
void settleExtensions(CpuTarget &resolved, const ResolvedTarget &target) {
  auto enabled = [&](const std::vector<std::string_view> &names) {
    std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
        target.llvmTarget->createMCSubtargetInfo(target.triple, resolved.cpu, resolved.features));
    std::vector<std::string> found;
    for (std::string_view name : names)
      if (isKnownFeature(*subtarget, llvm::StringRef(name.data(), name.size())) &&
          subtarget->checkFeatures("+" + std::string(name)))
        found.emplace_back(name);
    return found;
  };
  for (const std::string &name : enabled(initrt::undetectableCpuExtensions()))
    resolved.features += (resolved.features.empty() ? "-" : ",-") + name;
  resolved.extensions = enabled(initrt::detectableCpuExtensions());
}

/// `cpu` (as the user wrote it, "native" allowed) resolved and checked against `target`.
std::optional<CpuTarget> resolveCpu(llvm::StringRef cpu, const TargetOptions &options,
                                    const ResolvedTarget &target, std::string &error) {
  // CPU+FEATURE+...: a CPU with extensions of its own (x86-64-v4+avx512bf16).
  auto [name, extra] = cpu.split('+');
  CpuTarget resolved;
  resolved.cpu = name == "native" ? llvm::sys::getHostCPUName().str() : name.str();
  if (!target.subtarget->isCPUStringValid(resolved.cpu)) {
    error = "unknown target CPU '" + resolved.cpu +
            "' (use x86-64-v3, x86-64-v4, native, or a name from `llc -mcpu=help`)";
    return std::nullopt;
  }
  TargetOptions withExtra = options;
  if (cpu.contains('+')) {
    llvm::SmallVector<llvm::StringRef> added;
    extra.split(added, '+');
    for (llvm::StringRef feature : added) {
      if (feature.empty() || feature[0] == '-') {
        error = "target CPU '" + cpu.str() +
                "' names no extension after a '+': write CPU+EXTENSION, e.g. "
                "x86-64-v4+avx512bf16";
        return std::nullopt;
      }
      withExtra.features += (withExtra.features.empty() ? "+" : ",+") + feature.str();
    }
  }
  std::optional<std::string> features =
      resolveFeatures(name, withExtra, *target.subtarget, error);
  if (!features)
    return std::nullopt;
  resolved.features = *features;
  // The kernels are 64-bit code: a 32-bit CPU (i686, pentium4, ...) would abort LLVM.
  if (target.triple.find("x86_64") == 0) {
    std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
        target.llvmTarget->createMCSubtargetInfo(target.triple, resolved.cpu, resolved.features));
    if (!subtarget->checkFeatures("+64bit")) {
      error = "target CPU '" + resolved.cpu +
              "' runs only 32-bit code, and the kernels are x86-64 code: use x86-64, "
              "x86-64-v3, x86-64-v4, native or a 64-bit CPU name";
      return std::nullopt;
    }
    // AVX-512 added to a CPU without it (x86-64-v3+avx512f) comes without LLVM's evex512 (the
    // code generator adds it only to generic CPUs), so 512-bit vectors would be illegal in the
    // kernels' AVX-512 loop: add it, as clang's -mavx512f does.
    if (subtarget->checkFeatures("+avx512f")) {
      llvm::StringRef features(resolved.features);
      if (features.contains("-evex512")) {
        error = "target CPU '" + cpu.str() +
                "' has AVX-512 without 512-bit vectors (-evex512), which the kernels' AVX-512 "
                "loop needs: drop -evex512, or compile for x86-64-v3";
        return std::nullopt;
      }
      std::unique_ptr<llvm::MCSubtargetInfo> plain(
          target.llvmTarget->createMCSubtargetInfo(target.triple, resolved.cpu, ""));
      if (!plain->checkFeatures("+avx512f") && !features.contains("+evex512"))
        resolved.features += ",+evex512";
    }
  }
  settleExtensions(resolved, target);
  return resolved;
}

std::optional<ResolvedTarget> createTargetMachine(const TargetOptions &options,
                                                  std::string &error) {
  initializeNativeTarget();
  useKernelScheduler();
  if (options.optLevel > 3) {
    error = "optimization level " + std::to_string(options.optLevel) + " is out of range 0..3";
    return std::nullopt;
  }
  ResolvedTarget target;
  // Kernels run where they are compiled or on a cluster of the same architecture: the host's
  // triple, with a deliberately chosen CPU.
  target.triple = llvm::sys::getProcessTriple();
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!llvmTarget) {
    error = "no LLVM code generator for '" + target.triple + "': " + error;
    return std::nullopt;
  }
  target.llvmTarget = llvmTarget;
  target.subtarget.reset(llvmTarget->createMCSubtargetInfo(target.triple, "", ""));
  if (!target.subtarget) {
    error = "no LLVM subtarget information for '" + target.triple + "'";
    return std::nullopt;
  }
  std::optional<CpuTarget> cpu = resolveCpu(options.cpu, options, target, error);
  if (!cpu)
    return std::nullopt;
  target.cpu = cpu->cpu;
  target.features = cpu->features;

  llvm::TargetOptions targetOptions;
  // Bits must not depend on the CPU or the vector width: never fuse a*b+c into an FMA, never
  // relax IEEE semantics.
  targetOptions.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  targetOptions.UnsafeFPMath = false;
  targetOptions.NoInfsFPMath = false;
  targetOptions.NoNaNsFPMath = false;
  targetOptions.NoSignedZerosFPMath = false;
  targetOptions.ApproxFuncFPMath = false;
  static const llvm::CodeGenOptLevel levels[] = {
      llvm::CodeGenOptLevel::None, llvm::CodeGenOptLevel::Less,
      llvm::CodeGenOptLevel::Default, llvm::CodeGenOptLevel::Aggressive};
  target.machine.reset(llvmTarget->createTargetMachine(
      target.triple, target.cpu, target.features, targetOptions, llvm::Reloc::PIC_,
      llvm::CodeModel::Small, levels[options.optLevel]));
  if (!target.machine) {
    error = "could not create an LLVM target machine for '" + target.triple + "', CPU '" +
            target.cpu + "'";
    return std::nullopt;
  }
  return target;
}

bool isInLLVMDialect(ModuleOp module) {
  auto *llvmDialect = module->getContext()->getLoadedDialect<LLVM::LLVMDialect>();
  bool allLLVM = true;
  module.getBody()->walk([&](Operation *op) {
    if (!llvmDialect || op->getDialect() != llvmDialect) {
      allLLVM = false;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return allLLVM;
}

/// The module's C symbol names, used in a linker version script: refuse what would be read as a
/// pattern or break the script.
LogicalResult checkSymbolName(llvm::StringRef name, std::string &error) {
  for (char c : name) {
    if (llvm::isAlnum(c) || c == '_' || c == '.' || c == '$')
      continue;
    error = "kernel name '" + name.str() +
            "' is not a valid symbol: use letters, digits, '_', '.' and '$' only";
    return failure();
  }
  return success();
}

/// Everything that makes the optimized code independent of the compiling machine's defaults.
/// A function listed in `kernelCpus` is compiled for its own CPU, the others for the target's.
void prepareForTarget(llvm::Module &module, const ResolvedTarget &target,
                      const llvm::StringMap<CpuTarget> &kernelCpus) {
  module.setTargetTriple(target.triple);
  module.setDataLayout(target.machine->createDataLayout());
  static const char *const relaxedMathAttributes[] = {
      "unsafe-fp-math", "no-infs-fp-math", "no-nans-fp-math", "no-signed-zeros-fp-math",
      "approx-func-fp-math"};
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    // Only the kernels are visible outside kernels.so; the rest can be inlined and dropped.
    if (function.hasExternalLinkage())
      function.setVisibility(llvm::GlobalValue::DefaultVisibility);
    else if (!function.hasLocalLinkage())
      function.setLinkage(llvm::GlobalValue::InternalLinkage);
    auto own = kernelCpus.find(function.getName());
    const CpuTarget cpu = own != kernelCpus.end() ? own->second
                                                  : CpuTarget{target.cpu, target.features};
    function.addFnAttr("target-cpu", cpu.cpu);
    if (cpu.features.empty())
      function.removeFnAttr("target-features");
    else
      function.addFnAttr("target-features", cpu.features);
    // No libcall may be invented (a zero-fill loop turned into memset): kernels.so links no libc.
    function.addFnAttr("no-builtins");
    function.addFnAttr(llvm::Attribute::NoUnwind);
    for (const char *name : relaxedMathAttributes)
      function.removeFnAttr(name);
    for (llvm::Instruction &inst : llvm::instructions(function))
      if (llvm::isa<llvm::FPMathOperator>(inst))
        inst.copyFastMathFlags(llvm::FastMathFlags());
  }
  for (llvm::GlobalVariable &global : module.globals())
    if (!global.isDeclaration() && !global.hasLocalLinkage())
      global.setLinkage(llvm::GlobalValue::InternalLinkage);
}

void optimize(llvm::Module &module, llvm::TargetMachine &machine, unsigned optLevel) {
  llvm::LoopAnalysisManager loopAnalyses;
  llvm::FunctionAnalysisManager functionAnalyses;
  llvm::CGSCCAnalysisManager cgsccAnalyses;
  llvm::ModuleAnalysisManager moduleAnalyses;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = optLevel >= 2;
  tuning.SLPVectorization = optLevel >= 2;
  tuning.LoopUnrolling = optLevel >= 1;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(moduleAnalyses);
  builder.registerCGSCCAnalyses(cgsccAnalyses);
  builder.registerFunctionAnalyses(functionAnalyses);
  builder.registerLoopAnalyses(loopAnalyses);
  builder.crossRegisterProxies(loopAnalyses, functionAnalyses, cgsccAnalyses, moduleAnalyses);
  // After every InstCombine, which would turn the shuffles back into truncations.
  builder.registerOptimizerLastEPCallback(
      [&machine](llvm::ModulePassManager &passes, llvm::OptimizationLevel) {
        passes.addPass(llvm::createModuleToFunctionPassAdaptor(TruncateByShufflePass()));
        passes.addPass(llvm::createModuleToFunctionPassAdaptor(HighWordsByShufflePass()));
        passes.addPass(llvm::createModuleToFunctionPassAdaptor(PairBF16ConversionsPass(machine)));
        passes.addPass(llvm::createModuleToFunctionPassAdaptor(UnitFloatByConversionPass(machine)));
      });
  static const llvm::OptimizationLevel levels[] = {
      llvm::OptimizationLevel::O0, llvm::OptimizationLevel::O1, llvm::OptimizationLevel::O2,
      llvm::OptimizationLevel::O3};
  llvm::ModulePassManager passes =
      optLevel == 0 ? builder.buildO0DefaultPipeline(levels[0])
                    : builder.buildPerModuleDefaultPipeline(levels[optLevel]);
  passes.run(module, moduleAnalyses);
}

/// Kernels may call only each other and LLVM intrinsics that compile to instructions.
/// `kernelNames` lists the kernels of the whole module when `module` is one partition of it.
LogicalResult checkSelfContained(llvm::Module &module, const llvm::StringSet<> &kernelNames,
                                 std::string &error) {
  for (llvm::Function &function : module) {
    if (!function.isDeclaration() || function.isIntrinsic() || function.use_empty() ||
        kernelNames.contains(function.getName()))
      continue;
    std::string user = "?";
    for (llvm::User *use : function.users())
      if (auto *inst = llvm::dyn_cast<llvm::Instruction>(use)) {
        user = inst->getFunction()->getName().str();
        break;
      }
    error = "kernel '" + user + "' calls external function '" + function.getName().str() +
            "', but kernels.so links no library: expand such calls (e.g. math ops) into "
            "arith ops before lowering";
    return failure();
  }
  return success();
}

/// MLIR module -> LLVM IR prepared for the target, not yet optimized. Kernels that carry
/// `initc.target_cpu` (init-partition's targets option) are compiled for that CPU.
std::unique_ptr<llvm::Module> translate(ModuleOp module, llvm::LLVMContext &ctx,
                                        const TargetOptions &options,
                                        const ResolvedTarget &target, std::string &error) {
  llvm::StringMap<CpuTarget> kernelCpus;
  // Kernels are func.func here, or llvm.func when the caller lowered the module first (initc
  // compile --emit=llvm|asm); both keep the attribute.
  for (Operation &func : module.getBody()->getOperations()) {
    auto cpu = func.getAttrOfType<StringAttr>("initc.target_cpu");
    auto name = func.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
    if (!cpu || !name)
      continue;
    std::optional<CpuTarget> resolved = resolveCpu(cpu.getValue(), options, target, error);
    if (!resolved)
      return nullptr;
    kernelCpus[name.getValue()] = *resolved;
  }
  if (!isInLLVMDialect(module) && failed(lowerToLLVMDialect(module, options, error)))
    return nullptr;
  MLIRContext *mlirContext = module->getContext();
  registerBuiltinDialectTranslation(*mlirContext);
  registerLLVMDialectTranslation(*mlirContext);
  DiagnosticCollector diagnostics(mlirContext);
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(module, ctx, "kernels");
  if (!llvmModule) {
    error = "translation to LLVM IR failed: " + diagnostics.take("no diagnostic");
    return nullptr;
  }
  prepareForTarget(*llvmModule, target, kernelCpus);
  std::string verifierMessages;
  llvm::raw_string_ostream verifierStream(verifierMessages);
  if (llvm::verifyModule(*llvmModule, &verifierStream)) {
    error = "translated LLVM IR is invalid: " + verifierMessages;
    return nullptr;
  }
  return llvmModule;
}

LogicalResult optimizeAndCheck(llvm::Module &module, const ResolvedTarget &target,
                               unsigned optLevel, const llvm::StringSet<> &kernelNames,
                               std::string &error) {
  optimize(module, *target.machine, optLevel);
  return checkSelfContained(module, kernelNames, error);
}

/// What TargetMachine::addPassesToEmitFile adds, with the kernels' own machine passes after
/// instruction selection and before the assembly printer (WideConstants.cpp). Returns true
/// when the target cannot emit `fileType`.
bool addCodeGenPasses(llvm::TargetMachine &machine, llvm::legacy::PassManager &passes,
                      llvm::raw_pwrite_stream &os, llvm::CodeGenFileType fileType) {
  auto &codeGen = static_cast<llvm::LLVMTargetMachine &>(machine);
  auto *moduleInfo = new llvm::MachineModuleInfoWrapperPass(&codeGen);
  llvm::TargetPassConfig *config = codeGen.createPassConfig(passes);
  config->setDisableVerify(true);
  // Early machine LICM has hoisted the constants out of the loops by then; the register
  // allocator then folds them into their users as memory operands (of the constant pool when
  // rematerialized, of a spill slot when spilled).
  if (machine.getOptLevel() != llvm::CodeGenOptLevel::None)
    config->insertPass(&llvm::EarlyMachineLICMID, createWideConstantsPass());
  passes.add(config);
  passes.add(moduleInfo);
  if (config->addISelPasses())
    return true;
  config->addMachinePasses();
  // After x86's constant fixup, the last pass to shrink constant loads.
  if (machine.getOptLevel() != llvm::CodeGenOptLevel::None)
    passes.add(createWideExtensionLoadsPass());
  config->setInitialized();
  if (codeGen.addAsmPrinter(passes, os, nullptr, fileType, moduleInfo->getMMI().getContext()))
    return true;
  passes.add(llvm::createFreeMachineFunctionPass());
  return false;
}

LogicalResult emitMachineCode(llvm::Module &module, const ResolvedTarget &target,
                              CodeFileKind kind, llvm::raw_pwrite_stream &os,
                              std::string &error) {
  llvm::legacy::PassManager passes;
  auto fileType = kind == CodeFileKind::Assembly ? llvm::CodeGenFileType::AssemblyFile
                                                 : llvm::CodeGenFileType::ObjectFile;
  if (addCodeGenPasses(*target.machine, passes, os, fileType)) {
    error = "the LLVM target for '" + target.triple + "' cannot emit this file type";
    return failure();
  }
  passes.run(module);
  return success();
}

/// The C compiler driver that links the object into a shared library.
std::optional<std::string> findLinker(const TargetOptions &options, std::string &error) {
  const char *advice = "install gcc (e.g. `apt-get install gcc`) or pass --linker=<path to a C "
                       "compiler driver>";
  if (options.linker.empty()) {
    for (const char *name : {"cc", "c++", "gcc"})
      if (llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(name))
        return *path;
    error = "no linker found: none of cc, c++, gcc is on PATH; " + std::string(advice);
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
  // cost (a bitcode round trip, a target machine, pipeline setup) stays negligible.
  constexpr unsigned kFunctionsPerPartition = 32;
  constexpr unsigned kMaxPartitions = 256;
  llvm::SmallVector<const llvm::Function *> kernels;
  for (llvm::Function &function : *module)
    if (!function.isDeclaration() && !function.hasLocalLinkage())
      kernels.push_back(&function);
  llvm::StringSet<> kernelNames;
  for (const llvm::Function *kernel : kernels)
    kernelNames.insert(kernel->getName());
  unsigned partitions = std::clamp<unsigned>(
      (kernels.size() + kFunctionsPerPartition - 1) / kFunctionsPerPartition, 1, kMaxPartitions);
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

std::string resolveTargetCpu(const TargetOptions &options) {
  auto [name, extra] = llvm::StringRef(options.cpu).split('+');
  if (name == "native")
    return llvm::sys::getHostCPUName().str() + (extra.empty() ? "" : "+" + extra.str());
  return options.cpu;
}

std::optional<std::vector<std::string>> cpuExtensions(llvm::StringRef cpu,
                                                      const TargetOptions &options,
                                                      std::string &error) {
  std::optional<ResolvedTarget> target = createTargetMachine(options, error);
  if (!target)
    return std::nullopt;
  std::optional<CpuTarget> resolved = resolveCpu(cpu, options, *target, error);
  if (!resolved)
    return std::nullopt;
  return resolved->extensions;
}

std::optional<unsigned> vectorRegisters(llvm::StringRef cpu, const TargetOptions &options,
                                        std::string &error) {
  std::optional<std::vector<std::string>> extensions = cpuExtensions(cpu, options, error);
  if (!extensions)
    return std::nullopt;
  // AVX-512 has 32 vector registers; AVX and SSE on x86-64 have 16.
  return llvm::is_contained(*extensions, "avx512f") ? 32u : 16u;
}

namespace {
bool hasElementType(Value value, bool (Type::*is)() const) {
  return (getElementTypeOrSelf(value.getType()).*is)();
}

/// A table read past its end (`vector.extractelement` at a computed position) would be LLVM's
/// poison, whose bits may differ between kernel variants: clamped (unsigned), it reads the last
/// entry. In-range positions are unchanged, and a position LLVM knows to be in range (an index
/// along the table's own dim) costs nothing.
void clampTablePositions(ModuleOp module) {
  module.walk([](vector::ExtractElementOp op) {
    Value position = op.getPosition();
    if (!position)
      return;
    OpBuilder builder(op);
    Location loc = op.getLoc();
    int64_t last = op.getSourceVectorType().getNumElements() - 1;
    Value bound = builder.create<arith::ConstantOp>(
        loc, position.getType(), builder.getIntegerAttr(position.getType(), last));
    Value clamped = builder.create<arith::MinUIOp>(loc, position, bound);
    op.getPositionMutable().assign(clamped);
  });
}

/// bf16 conversions in integer ops (rule 8), but where a kernel's CPU converts to bf16 in one
/// instruction (AVX512-BF16: vcvtneps2bf16, which flushes subnormal inputs to zero) and the
/// conversion is marked kNoNaNOrSubnormalAttr: there the instruction gives rule 8's bits. A
/// marked conversion needs no NaN case either, and one whose operand is bounded well below
/// overflow rounds by a split (random::BF16Operand). Widening bf16 is exact: a shift.
LogicalResult expandBF16Conversions(ModuleOp module, const TargetOptions &options,
                                    std::string &error) {
  llvm::StringMap<bool> convertsByCpu;
  for (auto func : module.getOps<func::FuncOp>()) {
    SmallVector<Operation *> conversions;
    func.walk([&](Operation *op) {
      if ((isa<arith::TruncFOp>(op) && hasElementType(op->getOperand(0), &Type::isF32) &&
           hasElementType(op->getResult(0), &Type::isBF16)) ||
          (isa<arith::ExtFOp>(op) && hasElementType(op->getOperand(0), &Type::isBF16) &&
           hasElementType(op->getResult(0), &Type::isF32)))
        conversions.push_back(op);
    });
    if (conversions.empty())
      continue;
    auto cpuAttr = func->getAttrOfType<StringAttr>("initc.target_cpu");
    std::string cpu = cpuAttr ? cpuAttr.str() : options.cpu;
    auto [known, inserted] = convertsByCpu.try_emplace(cpu, false);
    if (inserted) {
      std::optional<std::vector<std::string>> extensions = cpuExtensions(cpu, options, error);
      if (!extensions)
        return failure();
      known->second = llvm::is_contained(*extensions, "avx512bf16");
    }
    for (Operation *op : conversions) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      Value in = op->getOperand(0), replacement;
      Type shape = in.getType();
      auto like = [&](Type element) -> Type {
        if (auto vector = dyn_cast<VectorType>(shape))
          return VectorType::get(vector.getShape(), element);
        return element;
      };
      auto splat = [&](Type type, int64_t value) -> Value {
        auto attr = b.getIntegerAttr(getElementTypeOrSelf(type), value);
        if (auto vector = dyn_cast<VectorType>(type))
          return b.create<arith::ConstantOp>(loc, DenseElementsAttr::get(vector, attr));
        return b.create<arith::ConstantOp>(loc, attr);
      };
      if (isa<arith::TruncFOp>(op)) {
        random::BF16Operand operand = random::bf16OperandOf(op);
        if (operand != random::BF16Operand::Any && known->second)
          continue;
        Value bits = random::emitRoundToBF16Bits(b, loc, in, operand);
        replacement = b.create<arith::BitcastOp>(loc, op->getResult(0).getType(), bits);
      } else {
        Type i32 = like(b.getI32Type());
        Value bits = b.create<arith::BitcastOp>(loc, like(b.getI16Type()), in);
        Value word = b.create<arith::ExtUIOp>(loc, i32, bits);
        word = b.create<arith::ShLIOp>(loc, word, splat(i32, 16));
        replacement = b.create<arith::BitcastOp>(loc, op->getResult(0).getType(), word);
      }
      op->getResult(0).replaceAllUsesWith(replacement);
      op->erase();
    }
  }
  return success();
}
} // namespace

LogicalResult lowerToLLVMDialect(ModuleOp module, const TargetOptions &options,
                                 std::string &error) {
  MLIRContext *ctx = module->getContext();
  DiagnosticCollector diagnostics(ctx);
  if (failed(verify(module))) {
    error = "the kernel module is invalid: " + diagnostics.take("verifier failed");
    return failure();
  }
  if (failed(expandBF16Conversions(module, options, error)))
    return failure();
  clampTablePositions(module);
  // func-to-llvm keeps every function external; only the public ones are kernels.
  auto internal = LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal);
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate() && !func.isDeclaration() && !func->hasAttr("llvm.linkage"))
      func->setAttr("llvm.linkage", internal);
    if (func.isPublic() && failed(checkSymbolName(func.getSymName(), error)))
      return failure();
  }

  PassManager pm(ctx);
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  funcPm.addPass(createLowerAffinePass());
  funcPm.addPass(createConvertVectorToSCFPass());
  // Expands ops that have no direct LLVM form (ceildivsi, maximumf, ...); the bf16 conversions
  // are expandBF16Conversions's.
  funcPm.addPass(arith::createArithExpandOpsPass());
  funcPm.addPass(createConvertSCFToCFPass());
  funcPm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(module))) {
    error = "lowering to the LLVM dialect failed: " + diagnostics.take("a pass failed");
    return failure();
  }
  // An op no conversion knows (math.tanh, math.erf, ...) is left as it is; name it here rather
  // than let the translation fail on a missing dialect interface.
  Operation *unlowered = nullptr;
  module.walk([&](Operation *op) {
    if (op != module.getOperation() && !isa<LLVM::LLVMDialect>(op->getDialect())) {
      unlowered = op;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (unlowered) {
    std::string where = "no source location";
    unlowered->getLoc()->walk([&](Location loc) {
      if (auto file = dyn_cast<FileLineColLoc>(loc)) {
        where = file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" +
                std::to_string(file.getColumn());
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    error = "'" + unlowered->getName().getStringRef().str() + "' (" + where +
            ") has no lowering to native code: expand it into arith ops (ir-spec/lowering.md, "
            "\"What a kernel may contain\")";
    return failure();
  }
  return success();
}

std::unique_ptr<llvm::Module> translateAndOptimize(ModuleOp module, llvm::LLVMContext &ctx,
                                                   const TargetOptions &options,
                                                   std::string &error) {
  std::optional<ResolvedTarget> target = createTargetMachine(options, error);
  if (!target)
    return nullptr;
  std::unique_ptr<llvm::Module> llvmModule = translate(module, ctx, options, *target, error);
  if (!llvmModule)
    return nullptr;
  llvm::StringSet<> kernelNames;
  for (llvm::Function &function : *llvmModule)
    if (!function.isDeclaration() && !function.hasLocalLinkage())
      kernelNames.insert(function.getName());
  if (failed(optimizeAndCheck(*llvmModule, *target, options.optLevel, kernelNames, error)))
    return nullptr;
  return llvmModule;
}

LogicalResult emitMachineCode(llvm::Module &module, const TargetOptions &options,
                              CodeFileKind kind, llvm::raw_pwrite_stream &os,
                              std::string &error) {
  std::optional<ResolvedTarget> target = createTargetMachine(options, error);
  if (!target)
    return failure();
  return emitMachineCode(module, *target, kind, os, error);
}

LogicalResult emitSharedObject(ModuleOp module, llvm::StringRef soPath,
                               const TargetOptions &options, std::string &error) {
  // Check everything that does not need the compile first: a bad path or a missing linker
  // should not cost a full compile.
  std::optional<std::string> linker = findLinker(options, error);
  if (!linker)
    return failure();
  std::optional<ResolvedTarget> target = createTargetMachine(options, error);
  if (!target)
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
