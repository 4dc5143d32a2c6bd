//===- InitDialect.cpp - the init dialect ---------------------------------===//
#include "initc/Dialect/Init/IR/InitDialect.h"
#include "initc/Dialect/Init/IR/InitOps.h"
#include "initc/Support/Nesting.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace initc::init;

#include "initc/Dialect/Init/IR/InitOpsDialect.cpp.inc"

void InitDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "initc/Dialect/Init/IR/InitOps.cpp.inc"
      >();
}

// `init.axis_names` on a `mesh.mesh`: one unique, non-empty name per mesh axis (ir-spec C: mesh).
LogicalResult InitDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  // `init.model` on a module: the model's name (its model_type, for imported configs).
  if (attr.getName() == kModelAttr) {
    if (!isa<ModuleOp>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << kModelAttr << "' must be a string on a builtin.module";
    return success();
  }
  // `init.hf_config` on a module: the config.json text, which program.json carries as an object
  // and the hf checkpoint layout writes back beside the weights.
  if (attr.getName() == kHfConfigAttr) {
    auto text = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !text)
      return op->emitError() << "'" << kHfConfigAttr << "' must be a string on a builtin.module";
    if (initc::lineNestedDeeperThan(text.getValue()))
      return op->emitError() << "'" << kHfConfigAttr << "' nests more than "
                             << initc::kMaxNesting << " levels deep";
    llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text.getValue());
    if (!parsed)
      return op->emitError() << "'" << kHfConfigAttr
                             << "' is not valid JSON: " << llvm::toString(parsed.takeError());
    if (!parsed->getAsObject())
      return op->emitError() << "'" << kHfConfigAttr
                             << "' must hold a JSON object, as a config.json does";
    return success();
  }
  // `init.stage_axis` on a `mesh.mesh`: one of its axes, by name (ir-spec/sharding.md).
  if (attr.getName() == kStageAxisAttr) {
    auto mesh = dyn_cast<mesh::MeshOp>(op);
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!mesh || !name)
      return op->emitError() << "'" << kStageAxisAttr << "' must be a string on a mesh.mesh";
    if (!llvm::is_contained(getMeshAxisNames(mesh), name.getValue().str()))
      return op->emitError() << "'" << kStageAxisAttr << "' names '" << name.getValue()
                             << "', which is not an axis of mesh '@" << mesh.getSymName() << "'";
    return success();
  }
  if (attr.getName() != kAxisNamesAttr)
    return op->emitError() << "unknown init dialect attribute '" << attr.getName().getValue()
                           << "'";
  auto mesh = dyn_cast<mesh::MeshOp>(op);
  if (!mesh)
    return op->emitError() << "'" << kAxisNamesAttr << "' is only valid on a mesh.mesh";
  auto names = dyn_cast<ArrayAttr>(attr.getValue());
  if (!names || llvm::any_of(names, [](Attribute a) { return !isa<StringAttr>(a); }))
    return op->emitError() << "'" << kAxisNamesAttr << "' must be an array of strings";
  if ((int64_t)names.size() != mesh.getRank())
    return op->emitError() << "'" << kAxisNamesAttr << "' names " << names.size()
                           << " axes but the mesh has " << mesh.getRank();
  llvm::StringSet<> seen;
  for (Attribute a : names) {
    StringRef name = cast<StringAttr>(a).getValue();
    if (name.empty())
      return op->emitError() << "mesh axis names must be non-empty";
    // As --mesh has them: names that print back into a mesh text such as dp=2,tp=4.
    if (!llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
      return op->emitError() << "mesh axis name '" << name
                             << "' must be letters, digits or '_'";
    if (!seen.insert(name).second)
      return op->emitError() << "mesh axis name '" << name << "' is used twice";
  }
  return success();
}
