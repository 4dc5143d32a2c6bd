// init.trunc_normal, C2
init.param @trunc_normal_negative_std : tensor<4xf32> {
  // expected-error @+1 {{'init.trunc_normal' op std must be positive, but is -1.000000e+00}}
  %0 = init.trunc_normal mean 0.0 std -1.0 bounds [-2.0, 2.0] stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
