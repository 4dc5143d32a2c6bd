// init.select, C1
init.param @select_mask_of_other_shape : tensor<4x8xf32> {
  %m = init.index_mask dim 0 index 0 : tensor<8x4xi1>
  %a = init.fill 0.0 : tensor<4x8xf32>
  %b = init.fill 1.0 : tensor<4x8xf32>
  // expected-error @+1 {{'init.select' op mask shape must equal the value shape}}
  %0 = init.select %m, %a, %b : tensor<8x4xi1>, tensor<4x8xf32>
  init.yield %0 : tensor<4x8xf32>
}
