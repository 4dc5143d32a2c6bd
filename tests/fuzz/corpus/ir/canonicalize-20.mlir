init.param @variance_scaling_fan_out_normal : tensor<16x8xbf16> {
  %0 = init.variance_scaling scale 1.0 fan_out normal stream 0 : tensor<16x8xbf16>
  init.yield %0 : tensor<16x8xbf16>
}
