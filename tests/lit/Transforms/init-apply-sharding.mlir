// The output parses back (round trip through initc-opt), replicated parameters included.
// RUN: initc-opt %s --init-apply-sharding="mesh=dp=2,tp=2 shard=replicated" | initc-opt | FileCheck %s --check-prefixes=MESH,REPL
// RUN: initc-opt %s --init-apply-sharding="mesh=dp=2,tp=2 shard=fsdp" | initc-opt | FileCheck %s --check-prefixes=MESH,FSDP
// RUN: initc-opt %s --init-apply-sharding="mesh=dp=2,tp=2 shard=tp" | initc-opt | FileCheck %s --check-prefixes=MESH,TP
// RUN: initc-opt %s --init-apply-sharding="mesh=dp=2,tp=2 shard=fsdp+tp" | initc-opt | FileCheck %s --check-prefixes=MESH,FSDPTP
// RUN: initc-opt %s --init-apply-sharding="mesh=dp=2,tp=2 shard=%S/Inputs/rules.json" | initc-opt | FileCheck %s --check-prefixes=MESH,RULES
// The old mesh is replaced; the new one comes right after the seed.
// RUN: initc-opt %s --init-apply-sharding="mesh=data=4,model=2 shard=fsdp+tp" | FileCheck %s --check-prefix=RENAMED

// Errors.
// RUN: not initc-opt %s --init-apply-sharding="mesh=dp2 shard=tp" 2>&1 | FileCheck %s --check-prefix=BAD-MESH
// RUN: not initc-opt %s --init-apply-sharding="mesh=dp=2,dp=2 shard=tp" 2>&1 | FileCheck %s --check-prefix=MESH-AXIS-TWICE
// RUN: not initc-opt %s --init-apply-sharding="mesh=dp=4 shard=tp" 2>&1 | FileCheck %s --check-prefix=NO-TP-AXIS
// RUN: not initc-opt %s --init-apply-sharding="mesh=dp=2,tp=2 shard=%S/Inputs/rules_unknown_axis.json" 2>&1 | FileCheck %s --check-prefix=UNKNOWN-AXIS
// RUN: not initc-opt %s --init-apply-sharding="mesh=dp=2,tp=2 shard=%S/Inputs/rules_axis_twice.json" 2>&1 | FileCheck %s --check-prefix=AXIS-TWICE
// RUN: not initc-opt %s --init-apply-sharding="mesh=dp=2,tp=2 shard=%S/Inputs/rules_unmatched_pattern.json" 2>&1 | FileCheck %s --check-prefix=UNMATCHED
// RUN: not initc-opt %s --init-apply-sharding="mesh=dp=2,tp=2 shard=%S/Inputs/rules_bad_json.json" 2>&1 | FileCheck %s --check-prefix=BAD-JSON
// RUN: not initc-opt %s --init-apply-sharding="mesh=dp=2,tp=2 shard=%S/Inputs/no_such_rules.json" 2>&1 | FileCheck %s --check-prefix=NO-FILE

init.seed 7
mesh.mesh @old(shape = 8) {init.axis_names = ["x"]}

// MESH:        init.seed 7
// MESH-NEXT:   mesh.mesh @mesh(shape = 2x2) {init.axis_names = ["dp", "tp"]}
// MESH-NOT:    @old
// RENAMED:     init.seed 7
// RENAMED-NEXT: mesh.mesh @mesh(shape = 4x2) {init.axis_names = ["data", "model"]}

// MESH-LABEL: init.param @model.embed_tokens.weight
// REPL-SAME:    sharding #mesh.shard<@mesh, {{\[\[}}]]>
// FSDP-SAME:    sharding #mesh.shard<@mesh, {{\[\[}}0]]>
// TP-SAME:      sharding #mesh.shard<@mesh, {{\[\[}}1]]>
// FSDPTP-SAME:  sharding #mesh.shard<@mesh, {{\[\[}}1], [0]]>
// RULES-SAME:   sharding #mesh.shard<@mesh, {{\[\[}}1, 0]]>
// RENAMED-LABEL: init.param @model.embed_tokens.weight
// RENAMED-SAME:   sharding #mesh.shard<@mesh, {{\[\[}}1], [0]]>
init.param @"model.embed_tokens.weight" : tensor<64x32xf32> axes ["vocab", "embed"] {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<64x32xf32>
  init.yield %0 : tensor<64x32xf32>
}

// MESH-LABEL: init.param @model.layers.0.self_attn.o_proj.weight
// REPL-SAME:    sharding #mesh.shard<@mesh, {{\[\[}}]]>
// FSDP-SAME:    sharding #mesh.shard<@mesh, {{\[\[}}0]]>
// TP-SAME:      sharding #mesh.shard<@mesh, {{\[\[}}], [1]]>
// FSDPTP-SAME:  sharding #mesh.shard<@mesh, {{\[\[}}0], [1]]>
// RULES-SAME:   sharding #mesh.shard<@mesh, {{\[\[}}], [1]]>
init.param @"model.layers.0.self_attn.o_proj.weight" : tensor<32x32xf32> axes ["embed", "heads"] {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<32x32xf32>
  init.yield %0 : tensor<32x32xf32>
}

// MESH-LABEL: init.param @model.layers.0.mlp.up_proj.weight
// FSDP-SAME:    sharding #mesh.shard<@mesh, {{\[\[}}0]]>
// TP-SAME:      sharding #mesh.shard<@mesh, {{\[\[}}1]]>
// FSDPTP-SAME:  sharding #mesh.shard<@mesh, {{\[\[}}1], [0]]>
// RULES-SAME:   sharding #mesh.shard<@mesh, {{\[\[}}1]]>
init.param @"model.layers.0.mlp.up_proj.weight" : tensor<64x32xf32> axes ["mlp", "embed"] {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<64x32xf32>
  init.yield %0 : tensor<64x32xf32>
}

// Uneven: 5 rows over tp=2 are chunks of 3 and 2 (ir-spec/sharding.md); the attribute is the
// same as for an even dim, nothing is padded.
// MESH-LABEL: init.param @model.layers.0.mlp.uneven : tensor<5x3xf32>
// FSDP-SAME:    sharding #mesh.shard<@mesh, {{\[\[}}0]]>
// TP-SAME:      sharding #mesh.shard<@mesh, {{\[\[}}1]]>
// FSDPTP-SAME:  sharding #mesh.shard<@mesh, {{\[\[}}1], [0]]>
init.param @"model.layers.0.mlp.uneven" : tensor<5x3xf32> axes ["mlp", "embed"] {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<5x3xf32>
  init.yield %0 : tensor<5x3xf32>
}

// fsdp takes the first dim that has at least as many rows as dp has parts: here dim 1.
// MESH-LABEL: init.param @model.layers.0.short : tensor<1x5xf32>
// REPL-SAME:    sharding #mesh.shard<@mesh, {{\[\[}}]]>
// FSDP-SAME:    sharding #mesh.shard<@mesh, {{\[\[}}], [0]]>
// TP-SAME:      sharding #mesh.shard<@mesh, {{\[\[}}]]>
init.param @"model.layers.0.short" : tensor<1x5xf32> axes ["embed", "embed"] {
  %0 = init.fill 1.0 : tensor<1x5xf32>
  init.yield %0 : tensor<1x5xf32>
}

// MESH-LABEL: init.param @model.norm.weight
// REPL-SAME:    sharding #mesh.shard<@mesh, {{\[\[}}]]>
// FSDP-SAME:    sharding #mesh.shard<@mesh, {{\[\[}}0]]>
// TP-SAME:      sharding #mesh.shard<@mesh, {{\[\[}}]]>
// FSDPTP-SAME:  sharding #mesh.shard<@mesh, {{\[\[}}0]]>
// RULES-SAME:   sharding #mesh.shard<@mesh, {{\[\[}}0]]>
init.param @"model.norm.weight" : tensor<32xf32> axes ["embed"] {
  %0 = init.fill 1.0 : tensor<32xf32>
  init.yield %0 : tensor<32xf32>
}

// A scalar is never split.
// MESH-LABEL: init.param @scale : tensor<f32>
// FSDPTP-SAME:  sharding #mesh.shard<@mesh, {{\[\[}}]]>
init.param @scale : tensor<f32> {
  %0 = init.fill 1.0 : tensor<f32>
  init.yield %0 : tensor<f32>
}

// BAD-MESH: error: --mesh: malformed mesh axis 'dp2': write the mesh as NAME=SIZE pairs separated by commas, e.g. dp=2,tp=4
// MESH-AXIS-TWICE: error: --mesh: mesh axis 'dp' is named twice
// NO-TP-AXIS: error: --shard: preset 'tp' needs a mesh axis named tp (or model); the mesh is dp=4
// UNKNOWN-AXIS: error: --shard: rules file '{{.*}}rules_unknown_axis.json': logical axis 'mlp' uses mesh axis 'pp', which the mesh dp=2,tp=2 does not have
// AXIS-TWICE: error: parameter 'model.layers.0.mlp.up_proj.weight': mesh axis 'tp' would split two dims; a mesh axis can split at most one dim of a parameter
// UNMATCHED: error: rules file '{{.*}}rules_unmatched_pattern.json': pattern 'decoder.*' matches no parameter; fix or remove the rule
// BAD-JSON: error: --shard: rules file '{{.*}}rules_bad_json.json' is not valid JSON:
// NO-FILE: error: --shard: --shard '{{.*}}no_such_rules.json' is neither a preset (replicated, fsdp, tp, fsdp+tp, torchtitan, megatron, maxtext) nor a readable rules file: No such file or directory
