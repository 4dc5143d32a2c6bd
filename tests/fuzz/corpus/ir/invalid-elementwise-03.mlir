// init.cast, C1
init.param @cast_changes_shape : tensor<8xbf16> {
  %x = init.fill 1.0 : tensor<4xf32>
  // expected-error @+1 {{'init.cast' op cannot change the shape, only the element type}}
  %0 = init.cast %x : tensor<4xf32> to tensor<8xbf16>
  init.yield %0 : tensor<8xbf16>
}
