init.seed 1
init.param @w : tensor<8xf32> {
  %0 = init.elementwise : tensor<8xf32> {
  ^bb0(%l: i64, %i: i64):
    %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
    %k = arith.trunci %l : i64 to i32
    %v = vector.extractelement %c[%k : i32] : vector<4xf32>
    init.yield %v : f32
  }
  init.yield %0 : tensor<8xf32>
}
