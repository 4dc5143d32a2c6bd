init.param @cast_to_other_type_stays : tensor<4xbf16> {
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  %0 = init.cast %w : tensor<4xf32> to tensor<4xbf16>
  init.yield %0 : tensor<4xbf16>
}
