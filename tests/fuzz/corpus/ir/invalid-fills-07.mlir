// init.triu, C1
init.param @triu_of_a_scalar : tensor<f32> {
  // expected-error @+1 {{'init.triu' op needs a tensor of rank 2 or more, but the rank is 0}}
  %0 = init.triu diagonal 0 : tensor<f32>
  init.yield %0 : tensor<f32>
}
