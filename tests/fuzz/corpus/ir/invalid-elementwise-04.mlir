// init.elementwise, C1
init.param @elementwise_missing_index : tensor<4x8xf32> {
  // expected-error @+1 {{'init.elementwise' op region must take 3 i64 arguments (linear index, then one index per dim)}}
  %0 = init.elementwise : tensor<4x8xf32> {
  ^bb0(%linear: i64, %i: i64):
    %c = arith.constant 1.0 : f32
    init.yield %c : f32
  }
  init.yield %0 : tensor<4x8xf32>
}
