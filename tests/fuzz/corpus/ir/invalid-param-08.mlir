// init.param, C5
// expected-error @+1 {{'init.param' op has 1 axis names for a tensor of rank 2}}
init.param @too_few_axis_names : tensor<4x4xf32> axes ["embed"] {
  %0 = init.fill 0.0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}
