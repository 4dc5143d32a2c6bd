// init.elementwise, C2
init.param @elementwise_without_yield : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise' op region must end with 'init.yield'}}
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %c = arith.constant 1.0 : f32
  }
  init.yield %0 : tensor<4xf32>
}
