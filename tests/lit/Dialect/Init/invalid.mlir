// RUN: initc-opt %s -split-input-file -verify-diagnostics

// One case per verifier message of the init dialect; the labels (C1, C2, ...) are those of
// ir-spec/dialect.md.

// init.axis_names, C1
// expected-error @+1 {{'init.axis_names' is only valid on a mesh.mesh}}
func.func @axis_names_on_a_func() attributes {init.axis_names = ["dp"]} {
  return
}

// -----

// init.axis_names, C2
// expected-error @+1 {{'init.axis_names' must be an array of strings}}
mesh.mesh @axis_names_not_strings(shape = 2) {init.axis_names = [1]}

// -----

// init.axis_names, C3
// expected-error @+1 {{'init.axis_names' names 1 axes but the mesh has 2}}
mesh.mesh @axis_names_too_few(shape = 2x2) {init.axis_names = ["dp"]}

// -----

// init.axis_names, C4
// expected-error @+1 {{mesh axis names must be non-empty}}
mesh.mesh @axis_name_empty(shape = 2x2) {init.axis_names = ["dp", ""]}

// -----

// init.axis_names, C4
// expected-error @+1 {{mesh axis name 'dp' is used twice}}
mesh.mesh @axis_name_twice(shape = 2x2) {init.axis_names = ["dp", "dp"]}

// -----

// init.axis_names, C4: names print into mesh texts such as dp=2,tp=2.
// expected-error @+1 {{mesh axis name 't,p' must be letters, digits or '_'}}
mesh.mesh @axis_name_comma(shape = 2x2) {init.axis_names = ["dp", "t,p"]}

// -----

// Only init.axis_names is a discardable attribute of the dialect.
// expected-error @+1 {{unknown init dialect attribute 'init.axes'}}
mesh.mesh @unknown_dialect_attribute(shape = 2) {init.axes = ["dp"]}

// -----

// init.seed, C1
init.seed 1
// expected-error @+1 {{'init.seed' op the module already has a seed; keep exactly one 'init.seed'}}
init.seed 2

// -----

// init.seed, C2
func.func @seed_outside_module() {
  // expected-error @+1 {{'init.seed' op expects parent op 'builtin.module'}}
  init.seed 3
  return
}

// -----

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

// init.uniform, C1
init.param @uniform_infinite_bound : tensor<4xf32> {
  // expected-error @+1 {{'init.uniform' op bounds and their difference must be finite in f32, where samples are made}}
  %0 = init.uniform 0xFFF0000000000000, 1.0 stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.uniform, C1: finite as doubles, but infinite in f32, the compute type of f32 tensors.
init.param @uniform_f32_infinite_bound : tensor<4xf32> {
  // expected-error @+1 {{'init.uniform' op bounds and their difference must be finite in f32, where samples are made (also for f64 tensors), but they are -1.000000e+308 and 1.000000e+308}}
  %0 = init.uniform -1.0e308, 1.0e308 stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.uniform, C1: an f64 tensor's samples are made in f32 too (rng.md rule 8), where 1e39 is
// infinite: every element would be -inf + inf * u, NaN.
init.param @uniform_f64_infinite_in_f32 : tensor<4xf64> {
  // expected-error @+1 {{'init.uniform' op bounds and their difference must be finite in f32, where samples are made (also for f64 tensors), but they are -1.000000e+39 and 1.000000e+39}}
  %0 = init.uniform -1.0e39, 1.0e39 stream 0 : tensor<4xf64>
  init.yield %0 : tensor<4xf64>
}

// -----

// init.uniform, C1: finite bounds whose difference overflows f32 (the samples would be NaN).
init.param @uniform_f32_infinite_width : tensor<4xf32> {
  // expected-error @+1 {{'init.uniform' op bounds and their difference must be finite in f32, where samples are made}}
  %0 = init.uniform -3.0e38, 3.0e38 stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.uniform, C2: distinct as doubles, equal in f32.
init.param @uniform_f32_empty_interval : tensor<4xf32> {
  // expected-error @+1 {{'init.uniform' op low (1) must be less than high (1.00000001) in the compute type}}
  %0 = init.uniform 1.0, 1.00000001 stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.uniform, C2
init.param @uniform_empty_interval : tensor<4xf32> {
  // expected-error @+1 {{'init.uniform' op low (1) must be less than high (1) in the compute type}}
  %0 = init.uniform 1.0, 1.0 stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.uniform, C3
init.param @uniform_negative_stream : tensor<4xf32> {
  // expected-error @+1 {{'init.uniform' op stream must be non-negative, but is -1}}
  %0 = init.uniform -1.0, 1.0 stream -1 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.uniform, C4
init.param @uniform_integer_result : tensor<4xi64> {
  // expected-error @+1 {{'init.uniform' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi64>'}}
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<4xi64>
  init.yield %0 : tensor<4xi64>
}

// -----

// init.normal, C1
init.param @normal_nan_mean : tensor<4xf32> {
  // expected-error @+1 {{'init.normal' op mean and std must be finite in f32, where samples are made}}
  %0 = init.normal mean 0x7FF8000000000000 std 1.0 stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.normal, C2
init.param @normal_zero_std : tensor<4xf32> {
  // expected-error @+1 {{'init.normal' op std must be positive in the compute type (f32, or f64 for f64 tensors), but is 0.000000e+00}}
  %0 = init.normal mean 0.0 std 0.0 stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.normal, C2: a std that is 0 in f32.
init.param @normal_f32_zero_std : tensor<4xf32> {
  // expected-error @+1 {{'init.normal' op std must be positive in the compute type (f32, or f64 for f64 tensors), but is 1.000000e-50}}
  %0 = init.normal mean 0.0 std 1.0e-50 stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.normal, C1: a std that is infinite in f32.
init.param @normal_f32_infinite_std : tensor<4xbf16> {
  // expected-error @+1 {{'init.normal' op mean and std must be finite in f32, where samples are made (also for f64 tensors), but they are 0.000000e+00 and 1.000000e+300}}
  %0 = init.normal mean 0.0 std 1.0e300 stream 0 : tensor<4xbf16>
  init.yield %0 : tensor<4xbf16>
}

// -----

// init.normal, C3
init.param @normal_negative_stream : tensor<4xf32> {
  // expected-error @+1 {{'init.normal' op stream must be non-negative, but is -2}}
  %0 = init.normal mean 0.0 std 1.0 stream -2 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.trunc_normal, C1
init.param @trunc_normal_infinite_bound : tensor<4xf32> {
  // expected-error @+1 {{'init.trunc_normal' op mean, std and bounds must be finite in f32, where samples are made}}
  %0 = init.trunc_normal mean 0.0 std 1.0 bounds [-2.0, 0x7FF0000000000000] stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.trunc_normal, C2
init.param @trunc_normal_negative_std : tensor<4xf32> {
  // expected-error @+1 {{'init.trunc_normal' op std must be positive in the compute type (f32, or f64 for f64 tensors), but is -1.000000e+00}}
  %0 = init.trunc_normal mean 0.0 std -1.0 bounds [-2.0, 2.0] stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.trunc_normal, C3
init.param @trunc_normal_reversed_bounds : tensor<4xf32> {
  // expected-error @+1 {{'init.trunc_normal' op truncation bound a (2.000000e+00) must be less than b (-2.000000e+00)}}
  %0 = init.trunc_normal mean 0.0 std 1.0 bounds [2.0, -2.0] stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.trunc_normal, C4
init.param @trunc_normal_negative_stream : tensor<4xf32> {
  // expected-error @+1 {{'init.trunc_normal' op stream must be non-negative, but is -1}}
  %0 = init.trunc_normal mean 0.0 std 1.0 bounds [-2.0, 2.0] stream -1 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.variance_scaling, C1
init.param @variance_scaling_zero_scale : tensor<4x4xf32> {
  // expected-error @+1 {{'init.variance_scaling' op scale must be finite in f32, where samples are made (also for f64 tensors), and positive in the compute type, but is 0.000000e+00}}
  %0 = init.variance_scaling scale 0.0 fan_in uniform stream 0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}

// -----

// init.variance_scaling, C2
init.param @variance_scaling_of_a_vector : tensor<4xf32> {
  // expected-error @+1 {{'init.variance_scaling' op fan in and fan out are undefined for a tensor of rank 1; give explicit bounds with init.uniform or init.normal}}
  %0 = init.variance_scaling scale 1.0 fan_in uniform stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.variance_scaling, C3
init.param @variance_scaling_zero_fan : tensor<4x0xf32> {
  // expected-error @+1 {{'init.variance_scaling' op fan is zero for shape with a zero dim}}
  %0 = init.variance_scaling scale 1.0 fan_in normal stream 0 : tensor<4x0xf32>
  init.yield %0 : tensor<4x0xf32>
}

// -----

// init.variance_scaling, C4
init.param @variance_scaling_negative_stream : tensor<4x4xf32> {
  // expected-error @+1 {{'init.variance_scaling' op stream must be non-negative, but is -1}}
  %0 = init.variance_scaling scale 1.0 fan_avg normal stream -1 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}

// -----

// init.orthogonal, C1
init.param @orthogonal_vector : tensor<4xf32> {
  // expected-error @+1 {{'init.orthogonal' op needs a tensor of rank 2 or more, but the rank is 1}}
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.orthogonal, C2
init.param @orthogonal_infinite_gain : tensor<4x4xf32> {
  // expected-error @+1 {{'init.orthogonal' op gain must be finite in the compute type}}
  %0 = init.orthogonal gain 0x7FF0000000000000 stream 0 strategy redundant : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}

// -----

// init.orthogonal, C3
init.param @orthogonal_negative_stream : tensor<4x4xf32> {
  // expected-error @+1 {{'init.orthogonal' op stream must be non-negative, but is -1}}
  %0 = init.orthogonal gain 1.0 stream -1 strategy redundant : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}

// -----

// init.fill, C1
init.param @mask_fill_of_two : tensor<4xi1> {
  // expected-error @+1 {{'init.fill' op a mask fill must be 0 or 1, but is 2.000000e+00}}
  %0 = init.fill 2.0 : tensor<4xi1>
  init.yield %0 : tensor<4xi1>
}

// -----

// init.fill, C2
init.param @integer_fill_of_a_fraction : tensor<4xi64> {
  // expected-error @+1 {{'init.fill' op an integer fill must be a whole number, but is 5.000000e-01}}
  %0 = init.fill 0.5 : tensor<4xi64>
  init.yield %0 : tensor<4xi64>
}

// -----

// init.fill, C2
init.param @integer_fill_too_large : tensor<4xi64> {
  // expected-error @+1 {{'init.fill' op an integer fill must fit in 64 bits, but is 1.000000e+30}}
  %0 = init.fill 1.0e30 : tensor<4xi64>
  init.yield %0 : tensor<4xi64>
}

// -----

// init.iota, C1
init.param @iota_dim_out_of_range : tensor<1x16xi64> {
  // expected-error @+1 {{'init.iota' op dim 2 is out of range for a tensor of rank 2}}
  %0 = init.iota dim 2 start 0.0 step 1.0 : tensor<1x16xi64>
  init.yield %0 : tensor<1x16xi64>
}

// -----

// init.iota, C2
init.param @iota_mask : tensor<16xi1> {
  // expected-error @+1 {{'init.iota' op cannot produce a mask; use init.index_mask or init.tril}}
  %0 = init.iota dim 0 start 0.0 step 1.0 : tensor<16xi1>
  init.yield %0 : tensor<16xi1>
}

// -----

// init.eye, C1
init.param @eye_of_rank_three : tensor<2x4x4xf32> {
  // expected-error @+1 {{'init.eye' op needs a tensor of rank 2, but the rank is 3}}
  %0 = init.eye : tensor<2x4x4xf32>
  init.yield %0 : tensor<2x4x4xf32>
}

// -----

// init.tril, C1
init.param @tril_of_a_vector : tensor<4xi1> {
  // expected-error @+1 {{'init.tril' op needs a tensor of rank 2 or more, but the rank is 1}}
  %0 = init.tril diagonal 0 : tensor<4xi1>
  init.yield %0 : tensor<4xi1>
}

// -----

// init.triu, C1
init.param @triu_of_a_scalar : tensor<f32> {
  // expected-error @+1 {{'init.triu' op needs a tensor of rank 2 or more, but the rank is 0}}
  %0 = init.triu diagonal 0 : tensor<f32>
  init.yield %0 : tensor<f32>
}

// -----

// init.index_mask, C1
init.param @index_mask_dim_out_of_range : tensor<8x4xi1> {
  // expected-error @+1 {{'init.index_mask' op dim -1 is out of range for a tensor of rank 2}}
  %0 = init.index_mask dim -1 index 0 : tensor<8x4xi1>
  init.yield %0 : tensor<8x4xi1>
}

// -----

// init.index_mask, C2
init.param @index_mask_index_out_of_range : tensor<8x4xi1> {
  // expected-error @+1 {{'init.index_mask' op index 8 is out of range for dim 0 of size 8}}
  %0 = init.index_mask dim 0 index 8 : tensor<8x4xi1>
  init.yield %0 : tensor<8x4xi1>
}

// -----

// init.rope_inv_freq, C1
init.param @rope_zero_theta : tensor<8xf32> {
  // expected-error @+1 {{'init.rope_inv_freq' op theta must be positive and finite}}
  %0 = init.rope_inv_freq theta 0.0 head_dim 16 : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}

// -----

// init.rope_inv_freq, C2
init.param @rope_odd_head_dim : tensor<8xf32> {
  // expected-error @+1 {{'init.rope_inv_freq' op head_dim must be positive and even, but is 15}}
  %0 = init.rope_inv_freq theta 10000.0 head_dim 15 : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}

// -----

// init.rope_inv_freq, C3
init.param @rope_wrong_length : tensor<16xf32> {
  // expected-error @+1 {{'init.rope_inv_freq' op result must be a 1-d tensor of head_dim / 2 = 8 elements}}
  %0 = init.rope_inv_freq theta 10000.0 head_dim 16 : tensor<16xf32>
  init.yield %0 : tensor<16xf32>
}

// -----

// init.load, C1
init.param @load_without_tensor_name : tensor<4xf32> {
  // expected-error @+1 {{'init.load' op needs a file and a tensor name}}
  %0 = init.load "base.safetensors" [""] : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.load, C2
init.param @nul_in_path : tensor<4xf32> {
  // expected-error @+1 {{'init.load' op file name contains a NUL character}}
  %0 = init.load "base.safetensors\00.txt" ["w"] : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.load, C3: a file name of Latin-1 bytes.
init.param @latin1_path : tensor<4xf32> {
  // expected-error @+1 {{'init.load' op file name is not valid UTF-8: rename the file}}
  %0 = init.load "b\FF\FE.safetensors" ["w"] : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.load, C3
init.param @latin1_tensor : tensor<4xf32> {
  // expected-error @+1 {{'init.load' op tensor name is not valid UTF-8}}
  %0 = init.load "base.safetensors" ["w\E9"] : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// elementwise ops, C1
init.param @add_mixed_types : tensor<4xf32> {
  %a = init.fill 1.0 : tensor<4xf32>
  %b = init.fill 1.0 : tensor<4xbf16>
  // expected-error @+1 {{'init.add' op requires the same type for all operands and results}}
  %0 = "init.add"(%a, %b) : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.clamp, C1
init.param @clamp_reversed_bounds : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  // expected-error @+1 {{'init.clamp' op min (1.000000e+00) must not exceed max (-1.000000e+00)}}
  %0 = init.clamp %x min 1.0 max -1.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.select, C1
init.param @select_mask_of_other_shape : tensor<4x8xf32> {
  %m = init.index_mask dim 0 index 0 : tensor<8x4xi1>
  %a = init.fill 0.0 : tensor<4x8xf32>
  %b = init.fill 1.0 : tensor<4x8xf32>
  // expected-error @+1 {{'init.select' op mask shape must equal the value shape}}
  %0 = init.select %m, %a, %b : tensor<8x4xi1>, tensor<4x8xf32>
  init.yield %0 : tensor<4x8xf32>
}

// -----

// init.cast, C1
init.param @cast_changes_shape : tensor<8xbf16> {
  %x = init.fill 1.0 : tensor<4xf32>
  // expected-error @+1 {{'init.cast' op cannot change the shape, only the element type}}
  %0 = init.cast %x : tensor<4xf32> to tensor<8xbf16>
  init.yield %0 : tensor<8xbf16>
}

// -----

// init.elementwise, C1
init.param @elementwise_missing_index : tensor<4x8xf32> {
  // expected-error @+1 {{'init.elementwise' op region must take 3 i64 arguments (linear index, then one index per dim)}}
  %0 = init.elementwise : tensor<4x8xf32> {
  ^bb0(%linear: i64, %i: i64):
    %c = arith.constant 1.0 : f32
    init.yield %c : f32
  }
  init.yield %0 : tensor<4x8xf32>
}

// -----

// init.elementwise, C1
init.param @elementwise_index_type : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise' op region must take 2 i64 arguments (linear index, then one index per dim)}}
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: index):
    %c = arith.constant 1.0 : f32
    init.yield %c : f32
  }
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise, C1
init.param @elementwise_missing_key_argument : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise' op region must take 3 i64 arguments (linear index, then one index per dim), then one per 'args' entry}}
  %0 = init.elementwise {args = array<i64: 5>} : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %c = arith.constant 1.0 : f32
    init.yield %c : f32
  }
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise, C2
init.param @elementwise_without_yield : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise' op region must end with 'init.yield'}}
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %c = arith.constant 1.0 : f32
  }
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise, C4: memory would read whatever the allocation held
init.param @elementwise_reads_memory : tensor<4xf32> {
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    // expected-error @+1 {{'memref.alloc' op is not allowed in an 'init.elementwise' region: an element is computed by scalar arith, math and vector ops only}}
    %m = memref.alloc() : memref<4xf32>
    %c0 = arith.constant 0 : index
    %v = memref.load %m[%c0] : memref<4xf32>
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise, C4: no loops
init.param @elementwise_loops : tensor<4xf32> {
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %init = arith.constant 0.0 : f32
    // expected-error @+1 {{'scf.for' op is not allowed in an 'init.elementwise' region}}
    %r = scf.for %k = %c0 to %c1 step %c1 iter_args(%acc = %init) -> (f32) {
      scf.yield %acc : f32
    }
    init.yield %r : f32
  }
  init.yield %0 : tensor<4xf32>
}

// -----

// init.param, C12
// expected-error @+1 {{'init.param' op type 'tensor<4294967296x4294967296xf32>' has more bytes than fit in a signed 64-bit integer; check the shape}}
init.param @element_count_overflows : tensor<4294967296x4294967296xf32> {
  %0 = init.fill 0.0 : tensor<4294967296x4294967296xf32>
  init.yield %0 : tensor<4294967296x4294967296xf32>
}

// -----

// init.model, C1
// expected-error @+1 {{'init.model' must be a string on a builtin.module}}
mesh.mesh @model_name_on_a_mesh(shape = 2) {init.model = "llama"}

// -----

// init.elementwise_like, C1
func.func private @not_a_param()
init.param @like_a_function : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op 'like' names '@not_a_param', which is not a parameter}}
  %0 = init.elementwise_like @not_a_param : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise_like, C1: one step, not a chain.
init.param @source : tensor<4xf32> {
  %0 = init.elementwise {args = array<i64: 1>} : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64, %key: i64):
    %v = arith.uitofp %key : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}
init.param @first : tensor<4xf32> {
  %0 = init.elementwise_like @source {args = array<i64: 2>} : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
init.param @second : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op 'like' names '@first', which is itself an 'init.elementwise_like' of '@source': name '@source' (chains are not allowed)}}
  %0 = init.elementwise_like @first {args = array<i64: 3>} : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise_like, C1: not the parameter it is in.
init.param @itself : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op 'like' names its own parameter '@itself': name the parameter whose body holds the init.elementwise}}
  %0 = init.elementwise_like @itself : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise_like, C1: not a tied parameter, which has no body.
init.param @source : tensor<4xf32> {
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %v = arith.uitofp %linear : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}
init.param @tied : tensor<4xf32> tied_to @source
init.param @like_tied : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op 'like' names '@tied', which is tied to '@source' and has no body: name the parameter that holds the init.elementwise}}
  %0 = init.elementwise_like @tied : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise_like, C2: the type.
init.param @source : tensor<4xf32> {
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %v = arith.uitofp %linear : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}
init.param @wider : tensor<8xf32> {
  // expected-error @+1 {{'init.elementwise_like' op has type 'tensor<8xf32>' but '@source' computes 'tensor<4xf32>'}}
  %0 = init.elementwise_like @source : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}

// -----

// init.elementwise_like, C2: one value per trailing argument.
init.param @source : tensor<4xf32> {
  %0 = init.elementwise {args = array<i64: 1>} : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64, %key: i64):
    %v = arith.uitofp %key : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}
init.param @keyless : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op has 0 args but the region of '@source' takes 1}}
  %0 = init.elementwise_like @source : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
