// init.param, C4
// expected-error @+1 {{'init.param' op body must end with 'init.yield'}}
init.param @body_without_yield : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
}
