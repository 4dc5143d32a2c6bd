// init.elementwise_like, C2: one value per trailing argument.
init.param @source : tensor<4xf32> {
  %0 = init.elementwise {args = array<i64: 1>} : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64, %key: i64):
    %v = arith.uitofp %key : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}
init.param @keyless : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op has 0 args but the region of '@source' takes 1}}
  %0 = init.elementwise_like @source : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
