// x + (+0) is +0 when x is -0: not an identity, so it stays.
init.param @add_positive_zero_stays : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  %z = init.fill 0.0 : tensor<4xf32>
  %0 = init.add %x, %z : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
