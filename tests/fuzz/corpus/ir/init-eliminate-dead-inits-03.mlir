init.param @select_all_false : tensor<16x4xf32> {
  %m = init.fill 0.0 : tensor<16x4xi1>
  %z = init.fill 0.0 : tensor<16x4xf32>
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<16x4xf32>
  %0 = init.select %m, %z, %w : tensor<16x4xi1>, tensor<16x4xf32>
  init.yield %0 : tensor<16x4xf32>
}
