// init.normal, C1
init.param @normal_nan_mean : tensor<4xf32> {
  // expected-error @+1 {{'init.normal' op mean and std must be finite}}
  %0 = init.normal mean 0x7FF8000000000000 std 1.0 stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
