// init.param, C7
init.param @embed : tensor<4x8xf32> {
  %0 = init.fill 0.0 : tensor<4x8xf32>
  init.yield %0 : tensor<4x8xf32>
}
// expected-error @+1 {{'init.param' op is tied to '@embed' of type 'tensor<4x8xf32>' but has type 'tensor<4x8xbf16>'}}
init.param @tied_with_other_type : tensor<4x8xbf16> tied_to @embed
