//===- InitDialect.td - the init dialect -------------------*- tablegen -*-===//
//
// The dialect of model initialization: parameters with global shapes and shardings, and the
// recipes that compute their values. Specified in ir-spec/dialect.md.
//
//===----------------------------------------------------------------------===//

#ifndef INITC_DIALECT_INIT_IR_INITDIALECT_TD
#define INITC_DIALECT_INIT_IR_INITDIALECT_TD

include "mlir/IR/OpBase.td"

def Init_Dialect : Dialect {
  let name = "init";
  let cppNamespace = "::initc::init";
  let summary = "Parameters of a model and the recipes that initialize them.";
  let description = [{
    A module of the `init` dialect describes how every parameter of a model is initialized: one
    `init.param` per parameter with its global shape, logical axes and sharding, and a region that
    computes its global value from random sources, fills, index-based values and elementwise math.
    Every element is a pure function of (seed, parameter name, stream, global index): see
    [the RNG contract](../rng.md). Meshes and shardings are the upstream `mesh` dialect's; the
    mesh's axis names are the discardable attribute `init.axis_names` on `mesh.mesh`.
  }];
  let dependentDialects = ["::mlir::mesh::MeshDialect"];
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The discardable attribute naming the axes of a `mesh.mesh`.
    static constexpr ::llvm::StringLiteral kAxisNamesAttr = "init.axis_names";
    /// The discardable attribute naming, on a `mesh.mesh`, the axis whose coordinate is a
    /// pipeline stage: parameters with a `stage` are held only by that stage's ranks.
    static constexpr ::llvm::StringLiteral kStageAxisAttr = "init.stage_axis";
    /// The discardable attribute naming the model on its module.
    static constexpr ::llvm::StringLiteral kModelAttr = "init.model";
    /// The discardable attribute holding, on its module, the Hugging Face config.json the model
    /// was imported from (the text as read).
    static constexpr ::llvm::StringLiteral kHfConfigAttr = "init.hf_config";
  }];
}

class Init_Op<string mnemonic, list<Trait> traits = []>
    : Op<Init_Dialect, mnemonic, traits>;

#endif // INITC_DIALECT_INIT_IR_INITDIALECT_TD
