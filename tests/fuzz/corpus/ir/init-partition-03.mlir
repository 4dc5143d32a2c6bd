init.seed 0
init.param @like_keyed : tensor<8xf32> {
  %0 = init.elementwise_like @keyed {args = array<i64: 22>} : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}
init.param @keyed : tensor<8xf32> {
  %0 = init.elementwise {args = array<i64: 11>} : tensor<8xf32> {
  ^bb0(%linear: i64, %i: i64, %key: i64):
    %x = arith.xori %linear, %key : i64
    %v = arith.uitofp %x : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<8xf32>
}
