init.param @clamp_of_random_stays : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  %0 = init.clamp %x min -2.0 max 2.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
