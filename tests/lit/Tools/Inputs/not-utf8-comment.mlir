init.seed 1
init.param @"w" : tensor<4xf32> {
  %0 = init.fill 1.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
// ÿþ not utf-8
