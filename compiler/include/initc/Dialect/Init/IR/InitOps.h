//===- InitOps.h - operations of the init dialect ---------------*- C++ -*-===//
#ifndef INITC_DIALECT_INIT_IR_INITOPS_H
#define INITC_DIALECT_INIT_IR_INITOPS_H

#include "initc/Dialect/Init/IR/InitDialect.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "initc/Dialect/Init/IR/InitEnums.h.inc"

#define GET_OP_CLASSES
#include "initc/Dialect/Init/IR/InitOps.h.inc"

namespace initc::init {

/// fan_in and fan_out of a global shape, as torch.nn.init._calculate_fan_in_and_fan_out computes
/// them. Fails for shapes of rank < 2 (where torch raises).
mlir::LogicalResult computeFans(llvm::ArrayRef<int64_t> shape, double &fanIn, double &fanOut);

/// Module-level checks no single op can make: exactly one init.seed when anything is random, at
/// most one mesh unless every sharding names its mesh. Reports errors on `module`.
mlir::LogicalResult verifyModel(mlir::ModuleOp module);

/// The module's seed (0 if none).
uint64_t getModelSeed(mlir::ModuleOp module);

/// The axis names of a mesh: `init.axis_names`, or "axis0", "axis1", ... when absent.
llvm::SmallVector<std::string> getMeshAxisNames(mlir::mesh::MeshOp mesh);

} // namespace initc::init

#endif // INITC_DIALECT_INIT_IR_INITOPS_H
