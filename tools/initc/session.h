//===- session.h - what every initc subcommand shares ---------------------===//
//
// The MLIR context with initc's dialects, the two kinds of error, writing an output file, and
// reading the model that inspect and compile take with --mesh and --shard.
//
//===----------------------------------------------------------------------===//
#ifndef INITC_TOOLS_INITC_SESSION_H
#define INITC_TOOLS_INITC_SESSION_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace initc::driver {

/// Prints "initc: error: MESSAGE" and returns the exit code 1.
int fail(const std::string &message);

/// A command line that cannot run as given (exit 2, as CLI11's own usage errors).
int usageError(const std::string &message);

/// One MLIR context with every dialect initc reads, and diagnostics printed with file and line.
struct Session {
  mlir::DialectRegistry registry;
  std::unique_ptr<mlir::MLIRContext> context;
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> diagnostics;
  Session();
};

/// Writes to `path` ("-" for stdout) atomically (initrt::AtomicFile: a temporary name next to it,
/// then a rename, so that a full disk or a kill never leaves a partial file under the final name;
/// a pipe or a device is written as it is). `input`, when given, is the file the output was made
/// from: writing over it is refused.
int writeOutput(const std::string &path, llvm::function_ref<void(llvm::raw_ostream &)> print,
                llvm::StringRef input = {});

/// The model's name: its init.model attribute, else the stem of the file it was read from.
std::string modelNameOf(mlir::ModuleOp module, llvm::StringRef path);

/// The model at `path` for inspect and compile, once --mesh and --shard are found usable; null
/// after an error was reported, with the exit code in `status`.
mlir::OwningOpRef<mlir::ModuleOp> loadModelForMesh(Session &session, const std::string &path,
                                                   const std::string &mesh,
                                                   const std::string &shard, int &status);

} // namespace initc::driver

#endif // INITC_TOOLS_INITC_SESSION_H
