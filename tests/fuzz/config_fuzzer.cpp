//===- config_fuzzer.cpp - libFuzzer target: the HF config importer ------===//
//
// Imports the input as a config.json (importHFConfigText, which also verifies the module it
// builds), in both init styles. Any crash, sanitizer report or hang is a bug; errors are
// expected and discarded.
//
//===----------------------------------------------------------------------===//
#include "initc/Import/HFConfig.h"
#include "initc/Registration.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    mlir::DialectRegistry registry;
    initc::registerDialects(registry);
    auto *c = new mlir::MLIRContext(registry, mlir::MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    c->getDiagEngine().registerHandler([](mlir::Diagnostic &) { return mlir::success(); });
    return c;
  }();
  std::string text(reinterpret_cast<const char *>(data), size);
  for (const char *style : {"hf", "torch"}) {
    initc::import::HFImportOptions options;
    options.initStyle = style;
    options.dtype = size % 2 ? "bf16" : "f32";
    std::string error;
    mlir::OwningOpRef<mlir::ModuleOp> module =
        initc::import::importHFConfigText(*context, text, "fuzz.json", options, error);
    if (!module && error.empty())
      __builtin_trap(); // a failure must say why
  }
  return 0;
}
