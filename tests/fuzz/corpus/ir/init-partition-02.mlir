// expected-error @+1 {{'init.orthogonal' has no native lowering yet; only elementwise recipes (after init-fuse-elementwise) can be partitioned}}
init.param @orthogonal : tensor<8x8xf32> {
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<8x8xf32>
  init.yield %0 : tensor<8x8xf32>
}
