//===- Passes.td - passes of initc -------------------------*- tablegen -*-===//
#ifndef INITC_TRANSFORMS_PASSES_TD
#define INITC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ApplySharding : Pass<"init-apply-sharding", "mlir::ModuleOp"> {
  let summary = "attach a mesh and a sharding to every parameter, by preset or rules file";
  let description = [{
    Creates (or replaces) the module's mesh from `mesh` (`dp=2,tp=2`) and gives every
    parameter a `#mesh.shard` from `shard`: a preset (`replicated`, `fsdp`, `tp`, `fsdp+tp`)
    that maps logical axis names to mesh axes, a trainer's layout (`torchtitan`, `megatron`,
    `maxtext`), or a JSON rules file mapping logical axes or
    parameter-name patterns to mesh axes. Then validates: a mesh axis is used at most once per
    parameter, every axis exists. See ir-spec/sharding.md.

    Before (`--init-apply-sharding="mesh=dp=2,tp=2 shard=tp"`):
    ```mlir
    init.param @"mlp.up_proj.weight" : tensor<1024x256xf32> axes ["mlp", "embed"] { ... }
    ```
    After:
    ```mlir
    mesh.mesh @mesh(shape = 2x2) {init.axis_names = ["dp", "tp"]}
    init.param @"mlp.up_proj.weight" : tensor<1024x256xf32> axes ["mlp", "embed"]
        sharding #mesh.shard<@mesh, [[1]]> { ... }
    ```
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "mesh axes and sizes, e.g. dp=2,tp=2 (empty: keep the module's mesh)">,
    Option<"shard", "shard", "std::string", /*default=*/"\"\"",
           "preset (replicated, fsdp, tp, fsdp+tp, torchtitan, megatron, maxtext) or path "
           "of a JSON rules file">,
  ];
  let dependentDialects = ["mlir::mesh::MeshDialect"];
}

def LoadFromBase : Pass<"init-load-from-base", "mlir::ModuleOp"> {
  let summary = "take every parameter a base checkpoint has from it (init.load)";
  let description = [{
    For fine-tuning, or growing a model: each parameter whose name is a tensor of `file` (a
    safetensors file, or a Hugging Face model.safetensors.index.json) yields `init.load` of
    it instead of its recipe; the others keep their recipes. Tied parameters follow the
    parameter they are tied to. A tensor whose dtype or shape differs from its parameter's is
    an error, and so is a base that has none of the model's names (another model, or another
    naming); tensors of the base the model lacks are warned about. Non-persistent buffers keep
    their recipes: checkpoints do not hold them.

    Before (`--init-load-from-base=file=base.safetensors`, which has `norm.weight`):
    ```mlir
    init.param @"norm.weight" : tensor<64xf32> {
      %0 = init.fill 1.0 : tensor<64xf32>
      init.yield %0 : tensor<64xf32>
    }
    ```
    After:
    ```mlir
    init.param @"norm.weight" : tensor<64xf32> {
      %0 = init.load "base.safetensors" ["norm.weight"] : tensor<64xf32>
      init.yield %0 : tensor<64xf32>
    }
    ```
  }];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "the base checkpoint: a .safetensors file or a Hugging Face index (.json)">,
  ];
}

def EliminateDeadInits : Pass<"init-eliminate-dead-inits", "mlir::ModuleOp"> {
  let summary = "drop initializations whose values never reach a parameter";
  let description = [{
    A parameter initialized twice (a constructor's init, then `model.apply(init_fn)`) keeps
    only the init its body yields; overwritten and unused values are erased, and a `select`
    whose mask is all true or all false keeps one side. Streams are explicit attributes, so no
    surviving value changes. Non-persistent buffers nobody reads are kept: they are part of
    the model.

    Before:
    ```mlir
    %0 = init.uniform -1.0, 1.0 stream 0 : tensor<8x8xf32>
    %1 = init.normal mean 0.0 std 1.0 stream 1 : tensor<8x8xf32>
    init.yield %1 : tensor<8x8xf32>
    ```
    After:
    ```mlir
    %1 = init.normal mean 0.0 std 1.0 stream 1 : tensor<8x8xf32>
    init.yield %1 : tensor<8x8xf32>
    ```
  }];
}

def FuseElementwise : Pass<"init-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "turn a parameter's chain of elementwise ops into one scalar region";
  let description = [{
    Every parameter whose value is built from random sources, fills, index-based values and
    elementwise math becomes one `init.elementwise` whose region computes a single element from
    its global index, with the RNG contract expanded to arith ops. No intermediate tensor is
    left. Non-elementwise ops (`init.orthogonal`, `init.load`) stay as they are.

    Before:
    ```mlir
    %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<8xf32>
    %1 = init.fill 2.0 : tensor<8xf32>
    %2 = init.mul %0, %1 : tensor<8xf32>
    init.yield %2 : tensor<8xf32>
    ```
    After:
    ```mlir
    %0 = init.elementwise : tensor<8xf32> {
    ^bb0(%linear: i64, %i: i64):
      ... philox, box-muller, arith.mulf ...
      init.yield %v : f32
    }
    init.yield %0 : tensor<8xf32>
    ```
  }];
  // vector: init.rope_inv_freq reads its table with vector.extractelement.
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

#endif // INITC_TRANSFORMS_PASSES_TD
