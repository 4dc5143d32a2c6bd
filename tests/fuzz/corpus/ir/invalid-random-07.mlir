// init.trunc_normal, C1
init.param @trunc_normal_infinite_bound : tensor<4xf32> {
  // expected-error @+1 {{'init.trunc_normal' op mean, std and bounds must be finite}}
  %0 = init.trunc_normal mean 0.0 std 1.0 bounds [-2.0, 0x7FF0000000000000] stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
