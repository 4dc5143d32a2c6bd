// init.param, C1
// expected-error @+1 {{'init.param' op parameter names must be non-empty}}
init.param @"" : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
