// init.variance_scaling, C3
init.param @variance_scaling_zero_fan : tensor<4x0xf32> {
  // expected-error @+1 {{'init.variance_scaling' op fan is zero for shape with a zero dim}}
  %0 = init.variance_scaling scale 1.0 fan_in normal stream 0 : tensor<4x0xf32>
  init.yield %0 : tensor<4x0xf32>
}
