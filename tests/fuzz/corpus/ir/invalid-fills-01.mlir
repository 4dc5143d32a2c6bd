// init.fill, C2
init.param @integer_fill_of_a_fraction : tensor<4xi64> {
  // expected-error @+1 {{'init.fill' op an integer fill must be a whole number, but is 5.000000e-01}}
  %0 = init.fill 0.5 : tensor<4xi64>
  init.yield %0 : tensor<4xi64>
}
