// init.elementwise_like, C1: one step, not a chain.
init.param @source : tensor<4xf32> {
  %0 = init.elementwise {args = array<i64: 1>} : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64, %key: i64):
    %v = arith.uitofp %key : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}
init.param @first : tensor<4xf32> {
  %0 = init.elementwise_like @source {args = array<i64: 2>} : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
init.param @second : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op 'like' names '@first', which is itself an 'init.elementwise_like' of '@source': name '@source' (chains are not allowed)}}
  %0 = init.elementwise_like @first {args = array<i64: 3>} : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
