// init.variance_scaling, C1
init.param @variance_scaling_zero_scale : tensor<4x4xf32> {
  // expected-error @+1 {{'init.variance_scaling' op scale must be positive and finite, but is 0.000000e+00}}
  %0 = init.variance_scaling scale 0.0 fan_in uniform stream 0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}
