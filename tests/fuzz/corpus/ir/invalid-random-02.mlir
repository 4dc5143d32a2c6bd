// init.uniform, C3
init.param @uniform_negative_stream : tensor<4xf32> {
  // expected-error @+1 {{'init.uniform' op stream must be non-negative, but is -1}}
  %0 = init.uniform -1.0, 1.0 stream -1 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
