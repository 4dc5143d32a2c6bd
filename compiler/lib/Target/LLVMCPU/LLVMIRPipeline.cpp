//===- LLVMIRPipeline.cpp - LLVM IR: translation, optimization, codegen ===//
#include "initc/Target/LLVMCPU/LLVMIRPipeline.h"
#include "TargetPipeline.h"
#include "initc/Conversion/KernelsToLLVM/KernelsToLLVM.h"
#include "initc/Target/LLVMCPU/CPUResolution.h"
#include "initc/Support/DiagnosticCollector.h"

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

void optimize(llvm::Module &module, const ResolvedTarget &target, unsigned optLevel) {
  llvm::TargetMachine &machine = *target.machine;
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
  // After every InstCombine, which would turn x86's shuffles back into truncations.
  builder.registerOptimizerLastEPCallback(
      [&](llvm::ModulePassManager &passes, llvm::OptimizationLevel) {
        target.architecture->addIRPasses(passes, machine);
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


/// What TargetMachine::addPassesToEmitFile adds, with the architecture's own machine passes
/// after instruction selection and before the assembly printer (x86's WideConstants.cpp).
/// Returns true when the target cannot emit `fileType`.
bool addCodeGenPasses(const ResolvedTarget &target, llvm::legacy::PassManager &passes,
                      llvm::raw_pwrite_stream &os, llvm::CodeGenFileType fileType) {
  llvm::TargetMachine &machine = *target.machine;
  auto &codeGen = static_cast<llvm::LLVMTargetMachine &>(machine);
  auto *moduleInfo = new llvm::MachineModuleInfoWrapperPass(&codeGen);
  llvm::TargetPassConfig *config = codeGen.createPassConfig(passes);
  config->setDisableVerify(true);
  target.architecture->addMachinePasses(machine, *config);
  passes.add(config);
  passes.add(moduleInfo);
  if (config->addISelPasses())
    return true;
  config->addMachinePasses();
  target.architecture->addLateMachinePasses(machine, passes);
  config->setInitialized();
  if (codeGen.addAsmPrinter(passes, os, nullptr, fileType, moduleInfo->getMMI().getContext()))
    return true;
  passes.add(llvm::createFreeMachineFunctionPass());
  return false;
}
} // namespace

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
  optimize(module, target, optLevel);
  return checkSelfContained(module, kernelNames, error);
}

LogicalResult emitMachineCode(llvm::Module &module, const ResolvedTarget &target,
                              CodeFileKind kind, llvm::raw_pwrite_stream &os,
                              std::string &error) {
  llvm::legacy::PassManager passes;
  auto fileType = kind == CodeFileKind::Assembly ? llvm::CodeGenFileType::AssemblyFile
                                                 : llvm::CodeGenFileType::ObjectFile;
  if (addCodeGenPasses(target, passes, os, fileType)) {
    error = "the LLVM target for '" + target.triple + "' cannot emit this file type";
    return failure();
  }
  passes.run(module);
  return success();
}

LogicalResult lowerToLLVMDialect(ModuleOp module, const TargetOptions &options,
                                 std::string &error) {
  auto converts = [&](llvm::StringRef cpu, std::string &error) {
    return convertsBF16(cpu, options, error);
  };
  return lowerKernelsToLLVM(module, options.cpu, converts, error);
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

} // namespace initc::target
