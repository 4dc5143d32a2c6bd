//===- import.cpp - initc import hf ---------------------------------------===//
//
// A HuggingFace config.json into init IR, with --load's checks of the base checkpoint's dtypes
// and shapes before any tensor is read from it.
//
//===----------------------------------------------------------------------===//
#include "session.h"
#include "subcommands.h"

#include "initc/Dialect/Init/IR/InitOps.h"
#include "initc/Import/HFConfig.h"
#include "initc/Transforms/Passes.h"
#include "initrt/base/base_checkpoint.h"
#include "initrt/base/report.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"

#include <cstdio>
#include <map>
#include <vector>

using namespace mlir;

namespace initc::driver {

int runImport(const ImportArgs &args) {
  Session session;
  initc::import::HFImportOptions options;
  options.initStyle = args.initStyle;
  options.dtype = args.dtype;
  if (llvm::StringRef(args.seed).getAsInteger(10, options.seed))
    return fail("--seed '" + args.seed + "' is not an integer from 0 to 18446744073709551615");
  std::string error;
  auto module = initc::import::importHFConfig(*session.context, args.config, options, error);
  if (!module)
    return fail(error);
  if (failed(mlir::verify(*module)))
    return fail("the imported model does not verify (a bug in initc: please report it)");
  if (!args.base.empty()) {
    // Weights of another dtype are --dtype's to fix: say so before the per-tensor check does.
    initrt::BaseFiles files;
    std::string why;
    if (!files.tensorNames(args.base, why))
      return fail("--load: " + why);
    std::map<std::string, std::vector<std::string>> byDtype; // the base's weights the model has
    for (auto param : module->getOps<initc::init::ParamOp>()) {
      std::optional<initrt::BaseTensor> tensor =
          files.find(args.base, param.getSymName().str(), why);
      if (!tensor || param.getBuffer())
        continue;
      std::vector<int64_t> shape(param.getTensorType().getShape());
      if (tensor->entry->shape != shape) {
        std::string shard = initrt::shardOfInitcCheckpoint(*tensor->file);
        if (!shard.empty())
          return fail("--load: " + shard);
        return fail(args.base + " holds " + param.getSymName().str() + " as " +
                    initrt::shapeText(tensor->entry->shape) + " but " + args.config + " makes it " +
                    initrt::shapeText(shape) + ": " + args.base +
                    " is not a checkpoint of this config");
      }
      byDtype[tensor->entry->dtype].push_back(param.getSymName().str());
    }
    if (byDtype.size() > 1) {
      std::string mix;
      for (const auto &[dtype, names] : byDtype)
        mix += (mix.empty() ? "" : ", ") + std::to_string(names.size()) + " " + dtype + " ('" +
               names[0] + "'" + (names.size() > 1 ? ", ..." : "") + ")";
      return fail(args.base + " holds its weights in several dtypes: " + mix +
                  ". init.load copies tensors as they are, and import gives every weight the "
                  "one --dtype: convert the base to one dtype");
    }
    if (byDtype.size() == 1 && byDtype.begin()->first != llvm::StringRef(args.dtype).upper()) {
      std::string lower = llvm::StringRef(byDtype.begin()->first).lower();
      bool importable = lower == "f32" || lower == "bf16" || lower == "f16";
      return fail(args.base + " holds the model's weights as " + byDtype.begin()->first +
                  " but --dtype is " + args.dtype +
                  (importable ? ": import with --dtype " + lower
                              : ", and import makes f32, bf16 or f16 weights: convert the base"));
    }
    initc::BaseLoadSummary summary;
    // Said of the base, not of a line of the config (every imported op is at its 1:1).
    mlir::ScopedDiagnosticHandler plain(session.context.get(), [](mlir::Diagnostic &diag) {
      const char *severity = diag.getSeverity() == mlir::DiagnosticSeverity::Error     ? "error"
                             : diag.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning"
                                                                                       : "note";
      std::fprintf(stderr, "initc: %s: %s\n", severity, diag.str().c_str());
      return mlir::success();
    });
    if (failed(initc::loadFromBase(*module, args.base, summary)))
      return 1;
    if (failed(mlir::verify(*module)))
      return fail("the model does not verify after --load (a bug in initc: please report it)");
    std::string computed;
    for (size_t i = 0; i < summary.computed.size() && i < 3; ++i)
      computed += (i ? ", " : "") + summary.computed[i];
    if (summary.computed.size() > 3)
      computed += ", ...";
    std::fprintf(stderr, "initc: %zu of %zu tensors load from %s%s%s%s\n", summary.loaded.size(),
                 summary.loaded.size() + summary.computed.size(), args.base.c_str(),
                 summary.computed.empty() ? "" : "; the others are initialized (", computed.c_str(),
                 summary.computed.empty() ? "" : ")");
  }
  return writeOutput(
      args.output, [&](llvm::raw_ostream &os) { module->print(os); }, args.config);
}

} // namespace initc::driver
