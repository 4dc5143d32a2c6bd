//===- DiagnosticCollector.h - MLIR errors as one message -------*- C++ -*-===//
#pragma once

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace initc {

/// Collects the error diagnostics emitted while it lives, one per line, with their locations.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext *ctx)
      : handler(ctx, [this](mlir::Diagnostic &diag) {
          if (diag.getSeverity() != mlir::DiagnosticSeverity::Error)
            return mlir::success();
          llvm::raw_string_ostream os(messages);
          if (!messages.empty())
            os << "\n";
          os << diag.getLocation() << ": " << diag.str();
          for (const mlir::Diagnostic &note : diag.getNotes())
            os << "\n  note: " << note.str();
          return mlir::success();
        }) {}

  std::string take(llvm::StringRef fallback) {
    return messages.empty() ? fallback.str() : messages;
  }

private:
  std::string messages;
  mlir::ScopedDiagnosticHandler handler;
};

} // namespace initc
