// init.uniform, C1
init.param @uniform_infinite_bound : tensor<4xf32> {
  // expected-error @+1 {{'init.uniform' op bounds must be finite}}
  %0 = init.uniform 0xFFF0000000000000, 1.0 stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
