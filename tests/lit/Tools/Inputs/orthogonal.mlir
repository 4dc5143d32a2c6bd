init.seed 1
init.param @q.weight : tensor<64x32xf32> {
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<64x32xf32>
  init.yield %0 : tensor<64x32xf32>
}
