// init.orthogonal, C1
init.param @orthogonal_vector : tensor<4xf32> {
  // expected-error @+1 {{'init.orthogonal' op needs a tensor of rank 2 or more, but the rank is 1}}
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
