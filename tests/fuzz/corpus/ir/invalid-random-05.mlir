// init.normal, C2
init.param @normal_zero_std : tensor<4xf32> {
  // expected-error @+1 {{'init.normal' op std must be positive, but is 0.000000e+00}}
  %0 = init.normal mean 0.0 std 0.0 stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
