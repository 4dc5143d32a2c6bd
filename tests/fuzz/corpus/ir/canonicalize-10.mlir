init.param @clamp_of_fill : tensor<4xf32> {
  %a = init.fill 5.0 : tensor<4xf32>
  %0 = init.clamp %a min -2.0 max 2.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
