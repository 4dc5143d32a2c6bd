// init.elementwise_like, C1
func.func private @not_a_param()
init.param @like_a_function : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op 'like' names '@not_a_param', which is not a parameter}}
  %0 = init.elementwise_like @not_a_param : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
