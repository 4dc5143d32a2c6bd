// Parameters of one recipe keep one region: the first is fused, the others compute its region
// with their own keys. A recipe that differs in a constant, a stream or the shape is its own.
init.seed 7
init.param @expert_0 : tensor<8x4xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<8x4xbf16>
  %1 = init.uniform -0.1, 0.1 stream 1 : tensor<8x4xbf16>
  %2 = init.add %0, %1 : tensor<8x4xbf16>
  init.yield %2 : tensor<8x4xbf16>
}
init.param @expert_1 : tensor<8x4xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<8x4xbf16>
  %1 = init.uniform -0.1, 0.1 stream 1 : tensor<8x4xbf16>
  %2 = init.add %0, %1 : tensor<8x4xbf16>
  init.yield %2 : tensor<8x4xbf16>
}
init.param @other_std : tensor<8x4xbf16> {
  %0 = init.normal mean 0.0 std 0.03 stream 0 : tensor<8x4xbf16>
  %1 = init.uniform -0.1, 0.1 stream 1 : tensor<8x4xbf16>
  %2 = init.add %0, %1 : tensor<8x4xbf16>
  init.yield %2 : tensor<8x4xbf16>
}
init.param @other_stream : tensor<8x4xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<8x4xbf16>
  %1 = init.uniform -0.1, 0.1 stream 2 : tensor<8x4xbf16>
  %2 = init.add %0, %1 : tensor<8x4xbf16>
  init.yield %2 : tensor<8x4xbf16>
}
init.param @other_shape : tensor<4x8xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<4x8xbf16>
  %1 = init.uniform -0.1, 0.1 stream 1 : tensor<4x8xbf16>
  %2 = init.add %0, %1 : tensor<4x8xbf16>
  init.yield %2 : tensor<4x8xbf16>
}
init.param @expert_2 : tensor<8x4xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<8x4xbf16>
  %1 = init.uniform -0.1, 0.1 stream 1 : tensor<8x4xbf16>
  %2 = init.add %0, %1 : tensor<8x4xbf16>
  init.yield %2 : tensor<8x4xbf16>
}
