// A select by a real mask keeps both sides.
init.param @select_by_padding_row : tensor<16x4xf32> {
  %m = init.index_mask dim 0 index 1 : tensor<16x4xi1>
  %z = init.fill 0.0 : tensor<16x4xf32>
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<16x4xf32>
  %0 = init.select %m, %z, %w : tensor<16x4xi1>, tensor<16x4xf32>
  init.yield %0 : tensor<16x4xf32>
}
