// RUN: initc-opt %s -split-input-file -verify-diagnostics

// One case per verifier message of init.param and init.yield; the labels (C1, C2, ...) are those
// of ir-spec/dialect.md.

// init.param, C1
// expected-error @+1 {{'init.param' op parameter names must be non-empty}}
init.param @"" : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.param, C1
// expected-error @+1 {{'init.param' op parameter name is not valid UTF-8}}
init.param @"byte_\FF_is_not_utf8" : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.param, C2
// expected-note @+1 {{see existing symbol definition here}}
init.param @duplicate_name : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
// expected-error @+1 {{redefinition of symbol named 'duplicate_name'}}
init.param @duplicate_name : tensor<4xf32> {
  %0 = init.fill 1.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.param, C3
// expected-error @+1 {{'init.param' op needs exactly one of a body, 'tied_to' or 'kernel', but has 0}}
init.param @no_value_source : tensor<4xf32>

// -----

// init.param, C3
init.param @tie_target : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
// expected-error @+1 {{'init.param' op needs exactly one of a body, 'tied_to' or 'kernel', but has 2}}
init.param @body_and_tied_to : tensor<4xf32> tied_to @tie_target {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.param, C4
// expected-error @+1 {{'init.param' op body must be one block without arguments}}
init.param @body_with_block_argument : tensor<4xf32> {
^bb0(%x: i64):
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.param, C4
// expected-error @+1 {{'init.param' op body must end with 'init.yield'}}
init.param @body_without_yield : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
}

// -----

// init.param, C4
// expected-error @+1 {{'init.param' op body must end with 'init.yield'}}
init.param @body_with_empty_block : tensor<4xf32> {
^bb0:
}

// -----

// init.param, C4
// expected-error @+1 {{'init.param' op body yields 'tensor<4xbf16>' but the parameter is 'tensor<4xf32>'}}
init.param @body_yields_other_type : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xbf16>
  init.yield %0 : tensor<4xbf16>
}

// -----

// init.param, C5
// expected-error @+1 {{'init.param' op has 1 axis names for a tensor of rank 2}}
init.param @too_few_axis_names : tensor<4x4xf32> axes ["embed"] {
  %0 = init.fill 0.0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}

// -----

// init.param, C6
// expected-error @+1 {{'init.param' op sharding refers to an unknown mesh '@nowhere'}}
init.param @sharding_over_unknown_mesh : tensor<4x4xf32> sharding #mesh.shard<@nowhere, [[0]]> {
  %0 = init.fill 0.0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}

// -----

// init.param, C6
mesh.mesh @mesh(shape = 2x2)
// expected-error @+1 {{'init.param' op sharding splits 3 dims of a tensor of rank 2}}
init.param @sharding_splits_too_many_dims : tensor<4x4xf32> sharding #mesh.shard<@mesh, [[], [], [0]]> {
  %0 = init.fill 0.0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}

// -----

// init.param, C6
mesh.mesh @mesh(shape = 2x2)
// expected-error @+1 {{'init.param' op parameters cannot be partial (sharding has partial axes)}}
init.param @partial_sharding : tensor<4x4xf32> sharding #mesh.shard<@mesh, [[0]], partial = sum[1]> {
  %0 = init.fill 0.0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}

// -----

// init.param, C6
mesh.mesh @mesh(shape = 2x2)
// expected-error @+1 {{'init.param' op sharding uses mesh axis 2 but mesh '@mesh' has 2 axes}}
init.param @sharding_over_missing_mesh_axis : tensor<4x4xf32> sharding #mesh.shard<@mesh, [[2]]> {
  %0 = init.fill 0.0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}

// -----

// init.param, C6: a mesh axis used twice is rejected by #mesh.shard itself.
mesh.mesh @mesh(shape = 2x2)
// expected-error @+1 {{mesh axis duplicated}}
init.param @sharding_uses_axis_twice : tensor<4x4xf32> sharding #mesh.shard<@mesh, [[0], [0]]> {
  %0 = init.fill 0.0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}

// -----

// init.param, C7
func.func private @not_a_param()
// expected-error @+1 {{'init.param' op is tied to '@not_a_param', which is not a parameter}}
init.param @tied_to_a_function : tensor<4xf32> tied_to @not_a_param

// -----

// init.param, C7
init.param @root : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
init.param @middle : tensor<4xf32> tied_to @root
// expected-error @+1 {{'init.param' op is tied to '@middle', which is itself tied; tie to '@root' instead}}
init.param @tied_to_a_tied_param : tensor<4xf32> tied_to @middle

// -----

// init.param, C7: tied to itself.
// expected-error @+1 {{'init.param' op is tied to itself; tie it to the parameter whose value it shares, or give it a body}}
init.param @self : tensor<4xf32> tied_to @self

// -----

// init.param, C7
init.param @embed : tensor<4x8xf32> {
  %0 = init.fill 0.0 : tensor<4x8xf32>
  init.yield %0 : tensor<4x8xf32>
}
// expected-error @+1 {{'init.param' op is tied to '@embed' of type 'tensor<4x8xf32>' but has type 'tensor<4x8xbf16>'}}
init.param @tied_with_other_type : tensor<4x8xbf16> tied_to @embed

// -----

// init.param, C7: a tied parameter has its target's sharding.
mesh.mesh @mesh(shape = 2) {init.axis_names = ["dp"]}
init.param @embed : tensor<4x8xf32> sharding #mesh.shard<@mesh, [[0]]> {
  %0 = init.fill 0.0 : tensor<4x8xf32>
  init.yield %0 : tensor<4x8xf32>
}
// expected-error @+1 {{'init.param' op is tied to '@embed' and so has its sharding: remove this one's, or set it on '@embed'}}
init.param @head : tensor<4x8xf32> sharding #mesh.shard<@mesh, [[], [0]]> tied_to @embed

// -----

// init.param, C7: a saved parameter tied to a buffer the checkpoint does not store.
init.param @mask : tensor<4x4xi1> buffer nonpersistent {
  %0 = init.fill 1.0 : tensor<4x4xi1>
  init.yield %0 : tensor<4x4xi1>
}
init.param @mask_view : tensor<4x4xi1> tied_to @mask buffer nonpersistent
// expected-error @+1 {{'init.param' op is saved but tied to '@mask', a non-persistent buffer the checkpoint does not store, so it would be stored nowhere: make '@mask' persistent, or tie it the other way}}
init.param @saved_mask : tensor<4x4xi1> tied_to @mask buffer

// -----

// init.param, C8
// expected-error @+1 {{'init.param' op 'nonpersistent' applies to buffers only; add 'buffer'}}
init.param @nonpersistent_weight : tensor<4xf32> nonpersistent {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.param, C9
// expected-error @+1 {{'init.param' op names an unknown kernel '@missing_kernel'}}
init.param @unknown_kernel : tensor<4xf32> kernel @missing_kernel

// -----

// init.param, C9: another parameter is not a kernel.
init.param @other : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
// expected-error @+1 {{'init.param' op names '@other', which is not a kernel: a func.func defined with the 'initc.kernel' attribute}}
init.param @kernel_is_a_param : tensor<4xf32> kernel @other

// -----

// init.param, C9: a function of another signature is not a kernel.
func.func @no_args() attributes {initc.kernel} {
  return
}
// expected-error @+1 {{'init.param' op names '@no_args', which is not a kernel}}
init.param @kernel_wrong_signature : tensor<4xf32> kernel @no_args

// -----

// init.param, C9: a declaration has no code to run.
func.func private @declared(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr) attributes {initc.kernel}
// expected-error @+1 {{'init.param' op names '@declared', which is not a kernel}}
init.param @kernel_declared : tensor<4xf32> kernel @declared

// -----

// init.param, C10
// expected-error @+1 {{'init.param' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 64-bit signless integer values}}
init.param @dynamic_shape : tensor<?xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.yield, C1
init.param @elementwise_yields_other_type : tensor<4xf32> {
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %c = arith.constant 1.0 : f64
    // expected-error @+1 {{'init.yield' op yields 'f64' but the element type is 'f32'}}
    init.yield %c : f64
  }
  init.yield %0 : tensor<4xf32>
}

// -----

// init.yield, C2
func.func @yield_in_a_func() {
  %0 = init.fill 0.0 : tensor<4xf32>
  // expected-error @+1 {{'init.yield' op expects parent op to be one of 'init.param, init.elementwise'}}
  init.yield %0 : tensor<4xf32>
}

// -----

// init.param, C12
// expected-error @+1 {{'init.param' op type 'tensor<4294967296x4294967296xf32>' has more bytes than fit in a signed 64-bit integer; check the shape}}
init.param @element_count_overflows : tensor<4294967296x4294967296xf32> {
  %0 = init.fill 0.0 : tensor<4294967296x4294967296xf32>
  init.yield %0 : tensor<4294967296x4294967296xf32>
}
