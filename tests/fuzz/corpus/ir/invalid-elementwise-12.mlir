// init.elementwise_like, C2: the type.
init.param @source : tensor<4xf32> {
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %v = arith.uitofp %linear : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}
init.param @wider : tensor<8xf32> {
  // expected-error @+1 {{'init.elementwise_like' op has type 'tensor<8xf32>' but '@source' computes 'tensor<4xf32>'}}
  %0 = init.elementwise_like @source : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}
