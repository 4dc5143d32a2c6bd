// Two fills fold to one, evaluated as the kernel would: in f32, then rounded to the type.
init.param @fill_arithmetic_f32 : tensor<4xf32> {
  %a = init.fill 1.0 : tensor<4xf32>
  %b = init.fill 0.00390625 : tensor<4xf32>
  %0 = init.add %a, %b : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
