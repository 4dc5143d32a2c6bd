// init.variance_scaling, C2
init.param @variance_scaling_of_a_vector : tensor<4xf32> {
  // expected-error @+1 {{'init.variance_scaling' op fan in and fan out are undefined for a tensor of rank 1; give explicit bounds with init.uniform or init.normal}}
  %0 = init.variance_scaling scale 1.0 fan_in uniform stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
