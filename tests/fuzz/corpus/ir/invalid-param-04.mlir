// init.param, C4
// expected-error @+1 {{'init.param' op body must be one block without arguments}}
init.param @body_with_block_argument : tensor<4xf32> {
^bb0(%x: i64):
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
