// Non-elementwise values are left alone, and so are tied, lowered and already fused ones.
init.param @orthogonal : tensor<8x8xf32> {
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<8x8xf32>
  init.yield %0 : tensor<8x8xf32>
}
init.param @loaded : tensor<8xbf16> {
  %0 = init.load "base.safetensors" ["norm.weight"] : tensor<8xbf16>
  init.yield %0 : tensor<8xbf16>
}
init.param @tied : tensor<8x8xf32> tied_to @orthogonal
