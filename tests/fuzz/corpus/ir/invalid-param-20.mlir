// init.yield, C1
init.param @elementwise_yields_other_type : tensor<4xf32> {
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %c = arith.constant 1.0 : f64
    // expected-error @+1 {{'init.yield' op yields 'f64' but the element type is 'f32'}}
    init.yield %c : f64
  }
  init.yield %0 : tensor<4xf32>
}
