//===- session.cpp - what every initc subcommand shares -------------------===//
//===----------------------------------------------------------------------===//
#include "session.h"

#include "initc/Import/HFConfig.h"
#include "initc/Pipeline/Pipeline.h"
#include "initc/Registration.h"
#include "initc/Transforms/Sharding.h"
#include "initrt/base/atomic_file.h"
#include "initrt/base/safetensors.h"

#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace initc::driver {

int fail(const std::string &message) {
  llvm::errs() << "initc: error: " << message << "\n";
  return 1;
}

/// A command line that cannot run as given (exit 2, as CLI11's own usage errors).
int usageError(const std::string &message) {
  llvm::errs() << "initc: error: " << message << " (see initc --help)\n";
  return 2;
}

Session::Session() {
  initc::registerDialects(registry);
  registerAllToLLVMIRTranslations(registry);
  context = std::make_unique<MLIRContext>(registry);
  context->loadAllAvailableDialects();
  // One message per error: the file and line say where, a dump of the op would only bury it.
  context->printOpOnDiagnostic(false);
  diagnostics = std::make_unique<SourceMgrDiagnosticHandler>(sourceMgr, context.get());
}

int writeOutput(const std::string &path, llvm::function_ref<void(llvm::raw_ostream &)> print,
                llvm::StringRef input) {
  std::error_code ec;
  if (path == "-") {
    print(llvm::outs());
    llvm::outs().flush();
    if (!llvm::outs().has_error())
      return 0;
    ec = llvm::outs().error();
    llvm::outs().clear_error();
    return fail("cannot write to stdout: " + ec.message());
  }
  bool same = false;
  if (!input.empty() && !llvm::sys::fs::equivalent(input, path, same) && same)
    return fail("-o '" + path + "' is the input file: choose another -o");
  std::string text;
  llvm::raw_string_ostream os(text);
  print(os);
  os.flush();
  std::string error;
  if (!initrt::writeFileAtomically(path, text, error))
    return fail(error);
  return 0;
}

std::string modelNameOf(ModuleOp module, llvm::StringRef path) {
  if (auto name = module->getAttrOfType<StringAttr>(initc::import::kModelAttrName))
    return name.getValue().str();
  return llvm::sys::path::stem(path).str();
}

namespace {

/// --mesh and --shard on their own, before the model is read: their mistakes are not the
/// model's, so they are reported without its file and line. (Whether the rules fit the model is
/// the sharding pass's to say.)
int checkMeshAndShard(const std::string &mesh, const std::string &shard) {
  if (mesh.empty())
    return 0;
  initc::MeshSpec spec;
  std::string error;
  if (failed(initc::parseMeshSpec(mesh, spec, error)))
    return fail("--mesh: " + error);
  if (!shard.empty() && !initc::ShardingRules::load(shard, spec, error))
    return fail("--shard: " + error);
  return 0;
}

} // namespace

OwningOpRef<ModuleOp> loadModelForMesh(Session &session, const std::string &path,
                                       const std::string &mesh, const std::string &shard,
                                       int &status) {
  if ((status = checkMeshAndShard(mesh, shard)))
    return nullptr;
  std::string error;
  OwningOpRef<ModuleOp> module = initc::loadModel(*session.context, path, error);
  if (!module)
    status = error.empty() ? 1 : fail(error);
  return module;
}

} // namespace initc::driver
