// RUN: initc-opt %s -split-input-file -verify-diagnostics

// One case per verifier message of the fills and index-based values, init.fill to
// init.rope_inv_freq; the labels (C1, C2, ...) are those of ir-spec/dialect.md.

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

// init.linspace, C1
init.param @linspace_dim_out_of_range : tensor<12xf32> {
  // expected-error @+1 {{'init.linspace' op dim 1 is out of range for a tensor of rank 1}}
  %0 = init.linspace dim 1 start 0.0 end 1.0 : tensor<12xf32>
  init.yield %0 : tensor<12xf32>
}

// -----

// init.linspace, C2
init.param @linspace_f64 : tensor<12xf64> {
  // expected-error @+1 {{'init.linspace' op cannot produce f64: its fused multiply-add has no exact f64 form in the kernels; compute it in f32 and cast, or load the values}}
  %0 = init.linspace dim 0 start 0.0 end 1.0 : tensor<12xf64>
  init.yield %0 : tensor<12xf64>
}

// -----

// init.linspace, C3
init.param @linspace_end_overflows_f16 : tensor<12xf16> {
  // expected-error @+1 {{'init.linspace' op end (7.000000e+04) is not finite in 'f16'}}
  %0 = init.linspace dim 0 start 0.0 end 70000.0 : tensor<12xf16>
  init.yield %0 : tensor<12xf16>
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
