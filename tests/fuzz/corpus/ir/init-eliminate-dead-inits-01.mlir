// An overwritten chain goes entirely, not only its last op.
init.param @overwritten_chain : tensor<8x8xf32> {
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<8x8xf32>
  %c = init.fill 3.0 : tensor<8x8xf32>
  %1 = init.mul %0, %c : tensor<8x8xf32>
  %2 = init.clamp %1 min -1.0 max 1.0 : tensor<8x8xf32>
  %3 = init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04] stream 1 : tensor<8x8xf32>
  init.yield %3 : tensor<8x8xf32>
}
