init.param @variance_scaling_fan_avg_uniform : tensor<16x8xf32> {
  %0 = init.variance_scaling scale 9.0 fan_avg uniform stream 1 : tensor<16x8xf32>
  init.yield %0 : tensor<16x8xf32>
}
