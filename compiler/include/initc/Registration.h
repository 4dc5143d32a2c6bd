//===- Registration.h - every dialect and pass of initc ---------*- C++ -*-===//
#ifndef INITC_REGISTRATION_H
#define INITC_REGISTRATION_H

#include "mlir/IR/DialectRegistry.h"

namespace initc {
/// The init dialect and every upstream dialect an initc module or kernel may contain.
void registerDialects(mlir::DialectRegistry &registry);
/// initc's passes plus the upstream passes its pipelines use (canonicalize, cse, ...).
void registerPasses();
} // namespace initc

#endif // INITC_REGISTRATION_H
