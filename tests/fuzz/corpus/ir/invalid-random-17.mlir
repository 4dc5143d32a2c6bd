// init.orthogonal, C3
init.param @orthogonal_negative_stream : tensor<4x4xf32> {
  // expected-error @+1 {{'init.orthogonal' op stream must be non-negative, but is -1}}
  %0 = init.orthogonal gain 1.0 stream -1 strategy redundant : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}
