// Non-persistent buffers are part of the model: kept. Tied and lowered parameters have no body.
init.param @wte.weight : tensor<16x4xf32> {
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<16x4xf32>
  init.yield %w : tensor<16x4xf32>
}
init.param @"h.0.attn.bias" : tensor<1x1x8x8xi1> buffer nonpersistent {
  %0 = init.tril diagonal 0 : tensor<1x1x8x8xi1>
  init.yield %0 : tensor<1x1x8x8xi1>
}
init.param @lm_head.weight : tensor<16x4xf32> tied_to @wte.weight
