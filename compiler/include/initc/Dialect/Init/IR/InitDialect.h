//===- InitDialect.h - the init dialect -------------------------*- C++ -*-===//
#ifndef INITC_DIALECT_INIT_IR_INITDIALECT_H
#define INITC_DIALECT_INIT_IR_INITDIALECT_H

#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/IR/Dialect.h"

#include "initc/Dialect/Init/IR/InitOpsDialect.h.inc"

#endif // INITC_DIALECT_INIT_IR_INITDIALECT_H
