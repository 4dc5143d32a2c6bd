init.seed 5
init.param @"embed.weight" : tensor<10x4xf32> axes ["vocab", "embed"] {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<10x4xf32>
  init.yield %0 : tensor<10x4xf32>
}
init.param @"proj.weight" : tensor<6x4xbf16> axes ["mlp", "embed"] {
  %0 = init.variance_scaling scale 0.3333333333333333 fan_in uniform stream 0 : tensor<6x4xbf16>
  %1 = init.fill 2.0 : tensor<6x4xbf16>
  %2 = init.mul %0, %1 : tensor<6x4xbf16>
  init.yield %2 : tensor<6x4xbf16>
}
init.param @"norm.weight" : tensor<4xf32> axes ["embed"] {
  %0 = init.fill 1.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
init.param @"head.weight" : tensor<10x4xf32> tied_to @"embed.weight"
