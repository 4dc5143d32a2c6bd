// elementwise ops, C1
init.param @add_mixed_types : tensor<4xf32> {
  %a = init.fill 1.0 : tensor<4xf32>
  %b = init.fill 1.0 : tensor<4xbf16>
  // expected-error @+1 {{'init.add' op requires the same type for all operands and results}}
  %0 = "init.add"(%a, %b) : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
