init.seed 1
init.param @w : tensor<2x2048xf32> {
  %0 = init.uniform -0.1, 0.1 stream 0 : tensor<2x2048xf32>
  init.yield %0 : tensor<2x2048xf32>
}
