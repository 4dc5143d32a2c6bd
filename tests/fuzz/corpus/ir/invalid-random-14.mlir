// init.variance_scaling, C4
init.param @variance_scaling_negative_stream : tensor<4x4xf32> {
  // expected-error @+1 {{'init.variance_scaling' op stream must be non-negative, but is -1}}
  %0 = init.variance_scaling scale 1.0 fan_avg normal stream -1 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}
