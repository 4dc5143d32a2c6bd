// 1 / x is not x.
init.param @one_over_x_stays : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  %one = init.fill 1.0 : tensor<4xf32>
  %0 = init.div %one, %x : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
