// init.param, C3
init.param @tie_target : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
// expected-error @+1 {{'init.param' op needs exactly one of a body, 'tied_to' or 'kernel', but has 2}}
init.param @body_and_tied_to : tensor<4xf32> tied_to @tie_target {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
