// init.normal, C3
init.param @normal_negative_stream : tensor<4xf32> {
  // expected-error @+1 {{'init.normal' op stream must be non-negative, but is -2}}
  %0 = init.normal mean 0.0 std 1.0 stream -2 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
