// init.fill, C2
init.param @integer_fill_too_large : tensor<4xi64> {
  // expected-error @+1 {{'init.fill' op an integer fill must fit in 64 bits, but is 1.000000e+30}}
  %0 = init.fill 1.0e30 : tensor<4xi64>
  init.yield %0 : tensor<4xi64>
}
