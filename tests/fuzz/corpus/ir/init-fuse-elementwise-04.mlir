init.param @orthogonal_times_two : tensor<8x8xf32> {
  // expected-error @+1 {{cannot fuse: 'init.orthogonal' is not elementwise and feeds other ops; compute it alone}}
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<8x8xf32>
  %1 = init.fill 2.0 : tensor<8x8xf32>
  %2 = init.mul %0, %1 : tensor<8x8xf32>
  init.yield %2 : tensor<8x8xf32>
}
