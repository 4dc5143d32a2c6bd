// init.elementwise_like, C1: not a tied parameter, which has no body.
init.param @source : tensor<4xf32> {
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %v = arith.uitofp %linear : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}
init.param @tied : tensor<4xf32> tied_to @source
init.param @like_tied : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op 'like' names '@tied', which is tied to '@source' and has no body: name the parameter that holds the init.elementwise}}
  %0 = init.elementwise_like @tied : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
