// init.trunc_normal, C4
init.param @trunc_normal_negative_stream : tensor<4xf32> {
  // expected-error @+1 {{'init.trunc_normal' op stream must be non-negative, but is -1}}
  %0 = init.trunc_normal mean 0.0 std 1.0 bounds [-2.0, 2.0] stream -1 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
