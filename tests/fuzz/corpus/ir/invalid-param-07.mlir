// init.param, C4
// expected-error @+1 {{'init.param' op body yields 'tensor<4xbf16>' but the parameter is 'tensor<4xf32>'}}
init.param @body_yields_other_type : tensor<4xf32> {
  %0 = init.fill 0.0 : tensor<4xbf16>
  init.yield %0 : tensor<4xbf16>
}
