//===- Registration.cpp - every dialect and pass of initc -----------------===//
#include "initc/Registration.h"

#include "initc/Dialect/Init/IR/InitOps.h"
#include "initc/Conversion/Passes.h"
#include "initc/Pipeline/PassPipelines.h"
#include "initc/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/Passes.h"

void initc::registerDialects(mlir::DialectRegistry &registry) {
  registry.insert<init::InitDialect, mlir::mesh::MeshDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::func::FuncDialect, mlir::scf::SCFDialect,
                  mlir::memref::MemRefDialect, mlir::vector::VectorDialect,
                  mlir::LLVM::LLVMDialect>();
}

void initc::registerPasses() {
  registerInitPasses();
  registerInitConversionPasses();
  registerStagePipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
}
