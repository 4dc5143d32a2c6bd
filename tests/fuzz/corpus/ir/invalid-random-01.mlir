// init.uniform, C2
init.param @uniform_empty_interval : tensor<4xf32> {
  // expected-error @+1 {{'init.uniform' op low (1.000000e+00) must be less than high (1.000000e+00)}}
  %0 = init.uniform 1.0, 1.0 stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
