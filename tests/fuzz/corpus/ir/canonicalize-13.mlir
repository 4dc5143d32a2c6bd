init.param @select_true_mask : tensor<4x8xf32> {
  %m = init.fill 1.0 : tensor<4x8xi1>
  %z = init.fill 0.0 : tensor<4x8xf32>
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<4x8xf32>
  %0 = init.select %m, %z, %w : tensor<4x8xi1>, tensor<4x8xf32>
  init.yield %0 : tensor<4x8xf32>
}
