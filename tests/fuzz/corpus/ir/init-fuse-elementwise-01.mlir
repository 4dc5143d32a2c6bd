init.seed 42

// A 16-bit parameter: computed in f32, the region yields the rounded bf16.
init.param @padded_embedding : tensor<16x4xbf16> {
  %pad = init.index_mask dim 0 index 1 : tensor<16x4xi1>
  %z = init.fill 0.0 : tensor<16x4xbf16>
  %w = init.normal mean 0.0 std 0.02 stream 0 : tensor<16x4xbf16>
  %0 = init.select %pad, %z, %w : tensor<16x4xi1>, tensor<16x4xbf16>
  init.yield %0 : tensor<16x4xbf16>
}
