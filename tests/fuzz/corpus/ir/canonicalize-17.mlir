init.param @cast_to_same_type : tensor<4xbf16> {
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xbf16>
  %0 = init.cast %w : tensor<4xbf16> to tensor<4xbf16>
  init.yield %0 : tensor<4xbf16>
}
