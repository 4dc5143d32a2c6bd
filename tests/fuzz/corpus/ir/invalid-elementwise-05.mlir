// init.elementwise, C1
init.param @elementwise_index_type : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise' op region must take 2 i64 arguments (linear index, then one index per dim)}}
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: index):
    %c = arith.constant 1.0 : f32
    init.yield %c : f32
  }
  init.yield %0 : tensor<4xf32>
}
