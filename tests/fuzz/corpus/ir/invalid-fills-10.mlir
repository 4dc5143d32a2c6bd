// init.rope_inv_freq, C1
init.param @rope_zero_theta : tensor<8xf32> {
  // expected-error @+1 {{'init.rope_inv_freq' op theta must be positive and finite}}
  %0 = init.rope_inv_freq theta 0.0 head_dim 16 : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}
