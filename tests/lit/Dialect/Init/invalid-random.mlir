// RUN: initc-opt %s -split-input-file -verify-diagnostics

// One case per verifier message of the random sources, init.uniform to init.orthogonal; the
// labels (C1, C2, ...) are those of ir-spec/dialect.md.

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
