init.seed 1
init.param @constant_plus_itself : tensor<4x4xf32> {
  %c = arith.constant dense<1.0> : tensor<4x4xf32>
  %r = init.add %c, %c : tensor<4x4xf32>
  init.yield %r : tensor<4x4xf32>
}
