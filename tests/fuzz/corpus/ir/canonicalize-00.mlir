// Every folder and canonicalization pattern of the init dialect. Each rewrite keeps the bits.

init.param @add_negative_zero_folds : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  %z = init.fill -0.0 : tensor<4xf32>
  %0 = init.add %x, %z : tensor<4xf32>
  %1 = init.add %z, %0 : tensor<4xf32>
  init.yield %1 : tensor<4xf32>
}
