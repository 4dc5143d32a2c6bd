//===- HFConfig.h - Hugging Face config.json -> init IR ---------*- C++ -*-===//
//
// Imports the state dict of a Hugging Face transformers model from its config.json: one
// `init.param` per tensor, with the names, shapes, logical axes and initialization that
// transformers (or plain PyTorch) would give it. Specified in ir-spec/import-hf.md.
//
//===----------------------------------------------------------------------===//
#ifndef INITC_IMPORT_HFCONFIG_H
#define INITC_IMPORT_HFCONFIG_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace initc::import {

struct HFImportOptions {
  /// "hf": transformers' `_init_weights`; "torch": the PyTorch module constructors' defaults.
  std::string initStyle = "hf";
  /// Element type of weights: "f32", "bf16" or "f16". Masks are i1 and inv_freq f32 regardless.
  std::string dtype = "f32";
  /// The value of the module's `init.seed`.
  uint64_t seed = 0;
};

/// The discardable module attribute holding the config's model_type.
constexpr llvm::StringLiteral kModelAttrName = "init.model";

/// The model_type values the importer understands.
llvm::ArrayRef<llvm::StringRef> supportedModelTypes();

/// Parses config.json (llvm::json) and builds a module: `init.seed`, one `init.param` per state-dict
/// tensor. On error returns null and sets `error` to one message naming the file, the field and what
/// to do.
mlir::OwningOpRef<mlir::ModuleOp> importHFConfig(mlir::MLIRContext &ctx, llvm::StringRef path,
                                                 const HFImportOptions &options,
                                                 std::string &error);

/// Same, from the JSON text (for tests and fuzzing); `name` is used in messages.
mlir::OwningOpRef<mlir::ModuleOp> importHFConfigText(mlir::MLIRContext &ctx, llvm::StringRef text,
                                                     llvm::StringRef name,
                                                     const HFImportOptions &options,
                                                     std::string &error);

} // namespace initc::import

#endif // INITC_IMPORT_HFCONFIG_H
