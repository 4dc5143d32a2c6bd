// init.param, C7
func.func private @not_a_param()
// expected-error @+1 {{'init.param' op is tied to '@not_a_param', which is not a parameter}}
init.param @tied_to_a_function : tensor<4xf32> tied_to @not_a_param
