init.param @fill_sub_mul : tensor<4xf64> {
  %a = init.fill 1.0 : tensor<4xf64>
  %b = init.fill 4.0 : tensor<4xf64>
  %c = init.fill 4.0 : tensor<4xf64>
  %0 = init.sub %a, %b : tensor<4xf64>
  %1 = init.mul %0, %c : tensor<4xf64>
  init.yield %1 : tensor<4xf64>
}
