// init.eye, C1
init.param @eye_of_rank_three : tensor<2x4x4xf32> {
  // expected-error @+1 {{'init.eye' op needs a tensor of rank 2, but the rank is 3}}
  %0 = init.eye : tensor<2x4x4xf32>
  init.yield %0 : tensor<2x4x4xf32>
}
