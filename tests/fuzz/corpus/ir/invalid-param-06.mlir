// init.param, C4
// expected-error @+1 {{'init.param' op body must end with 'init.yield'}}
init.param @body_with_empty_block : tensor<4xf32> {
^bb0:
}
