//===- initc-opt.cpp - the initc dialects and passes under MlirOptMain ----===//
#include "initc/Registration.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  initc::registerDialects(registry);
  initc::registerPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "initc optimizer driver\n", registry));
}
