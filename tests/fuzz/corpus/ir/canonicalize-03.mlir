// x - (-0) is x + (+0): not an identity.
init.param @sub_negative_zero_stays : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  %z = init.fill -0.0 : tensor<4xf32>
  %0 = init.sub %x, %z : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
