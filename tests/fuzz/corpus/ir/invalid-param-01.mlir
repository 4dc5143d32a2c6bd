// init.param, C2
// expected-note @+1 {{see existing symbol definition here}}
init.param @duplicate_name : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
// expected-error @+1 {{redefinition of symbol named 'duplicate_name'}}
init.param @duplicate_name : tensor<4xf32> {
  %0 = init.fill 1.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
