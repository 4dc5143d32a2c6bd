// init.param, C8
// expected-error @+1 {{'init.param' op 'nonpersistent' applies to buffers only; add 'buffer'}}
init.param @nonpersistent_weight : tensor<4xf32> nonpersistent {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
