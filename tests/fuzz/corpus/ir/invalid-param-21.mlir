// init.yield, C2
func.func @yield_in_a_func() {
  %0 = init.fill 0.0 : tensor<4xf32>
  // expected-error @+1 {{'init.yield' op expects parent op to be one of 'init.param, init.elementwise'}}
  init.yield %0 : tensor<4xf32>
}
