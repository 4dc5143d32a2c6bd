// init.orthogonal, C2
init.param @orthogonal_infinite_gain : tensor<4x4xf32> {
  // expected-error @+1 {{'init.orthogonal' op gain must be finite}}
  %0 = init.orthogonal gain 0x7FF0000000000000 stream 0 strategy redundant : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}
