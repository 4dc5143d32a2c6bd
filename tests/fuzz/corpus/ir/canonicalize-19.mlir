// variance_scaling becomes the uniform or normal op the contract defines it as, same stream.
// Shape 16x8: fan_in 8, fan_out 16, fan_avg 12; uniform bounds are sqrt(3 scale / fan).
init.param @variance_scaling_fan_in_uniform : tensor<16x8xf32> {
  %0 = init.variance_scaling scale 3.0 fan_in uniform stream 3 : tensor<16x8xf32>
  init.yield %0 : tensor<16x8xf32>
}
