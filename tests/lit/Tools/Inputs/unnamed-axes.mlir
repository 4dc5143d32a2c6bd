module attributes {init.model = "captured"} {
  init.seed 1
  init.param @fc.weight : tensor<64x32xf32> axes ["out", "in"] {
    %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<64x32xf32>
    init.yield %0 : tensor<64x32xf32>
  }
  init.param @fc.bias : tensor<1xf32> {
    %0 = init.fill 0.0 : tensor<1xf32>
    init.yield %0 : tensor<1xf32>
  }
}
