// init.rope_inv_freq, C2
init.param @rope_odd_head_dim : tensor<8xf32> {
  // expected-error @+1 {{'init.rope_inv_freq' op head_dim must be positive and even, but is 15}}
  %0 = init.rope_inv_freq theta 10000.0 head_dim 15 : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}
