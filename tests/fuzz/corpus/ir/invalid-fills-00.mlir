// init.fill, C1
init.param @mask_fill_of_two : tensor<4xi1> {
  // expected-error @+1 {{'init.fill' op a mask fill must be 0 or 1, but is 2.000000e+00}}
  %0 = init.fill 2.0 : tensor<4xi1>
  init.yield %0 : tensor<4xi1>
}
