// A conv kernel: the receptive field (3x3) multiplies both fans: fan_in = 2 * 9 = 18.
init.param @variance_scaling_conv_receptive_field : tensor<4x2x3x3xf32> {
  %0 = init.variance_scaling scale 4.5 fan_in normal stream 0 : tensor<4x2x3x3xf32>
  init.yield %0 : tensor<4x2x3x3xf32>
}
