// init.rope_inv_freq, C3
init.param @rope_wrong_length : tensor<16xf32> {
  // expected-error @+1 {{'init.rope_inv_freq' op result must be a 1-d tensor of head_dim / 2 = 8 elements}}
  %0 = init.rope_inv_freq theta 10000.0 head_dim 16 : tensor<16xf32>
  init.yield %0 : tensor<16xf32>
}
