init.param @select_same_values : tensor<4x8xf32> {
  %m = init.index_mask dim 0 index 0 : tensor<4x8xi1>
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<4x8xf32>
  %0 = init.select %m, %w, %w : tensor<4x8xi1>, tensor<4x8xf32>
  init.yield %0 : tensor<4x8xf32>
}
