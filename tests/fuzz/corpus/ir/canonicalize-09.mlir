// 1/3 in f32, not in f64.
init.param @fill_div_in_f32 : tensor<4xf32> {
  %a = init.fill 1.0 : tensor<4xf32>
  %b = init.fill 3.0 : tensor<4xf32>
  %0 = init.div %a, %b : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
