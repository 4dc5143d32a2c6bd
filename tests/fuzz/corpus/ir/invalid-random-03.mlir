// init.uniform, C4
init.param @uniform_integer_result : tensor<4xi64> {
  // expected-error @+1 {{'init.uniform' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi64>'}}
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<4xi64>
  init.yield %0 : tensor<4xi64>
}
