//===- initc-opt.cpp - the initc dialects and passes under MlirOptMain ----===//
//
// MlirOptMain, with one check first: input nested deeper than initc::kMaxNesting brackets is
// refused with a message, since the MLIR parser recurses once per level and would overflow the
// stack (a crash, not an error).
//
//===----------------------------------------------------------------------===//
#include "initc/Registration.h"
#include "initc/Support/Nesting.h"

#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  initc::registerDialects(registry);
  initc::registerPasses();
  auto [inputFilename, outputFilename] =
      mlir::registerAndParseCLIOptions(argc, argv, "initc optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> input = mlir::openInputFile(inputFilename, &message);
  if (!input) {
    llvm::errs() << message << "\n";
    return 1;
  }
  if (unsigned line = initc::lineNestedDeeperThan(input->getBuffer())) {
    llvm::errs() << (inputFilename == "-" ? "<stdin>" : inputFilename) << ":" << line << ": error: brackets nest more than "
                 << initc::kMaxNesting << " levels deep: this is not IR initc-opt reads\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output = mlir::openOutputFile(outputFilename, &message);
  if (!output) {
    llvm::errs() << message << "\n";
    return 1;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
