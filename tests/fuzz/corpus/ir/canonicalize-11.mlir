// A NaN fill stays NaN through clamp; the fold leaves it to the kernel.
init.param @clamp_of_nan_fill_stays : tensor<4xf32> {
  %a = init.fill 0x7FF8000000000000 : tensor<4xf32>
  %0 = init.clamp %a min -2.0 max 2.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
