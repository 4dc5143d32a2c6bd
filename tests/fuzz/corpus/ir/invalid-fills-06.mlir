// init.tril, C1
init.param @tril_of_a_vector : tensor<4xi1> {
  // expected-error @+1 {{'init.tril' op needs a tensor of rank 2 or more, but the rank is 1}}
  %0 = init.tril diagonal 0 : tensor<4xi1>
  init.yield %0 : tensor<4xi1>
}
