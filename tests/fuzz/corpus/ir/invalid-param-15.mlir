// init.param, C7
init.param @root : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
init.param @middle : tensor<4xf32> tied_to @root
// expected-error @+1 {{'init.param' op is tied to '@middle', which is itself tied; tie to '@root' instead}}
init.param @tied_to_a_tied_param : tensor<4xf32> tied_to @middle
