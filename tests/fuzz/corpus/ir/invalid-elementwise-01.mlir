// init.clamp, C1
init.param @clamp_reversed_bounds : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  // expected-error @+1 {{'init.clamp' op min (1.000000e+00) must not exceed max (-1.000000e+00)}}
  %0 = init.clamp %x min 1.0 max -1.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
