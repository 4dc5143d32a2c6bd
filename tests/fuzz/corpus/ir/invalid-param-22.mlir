// init.param, C12
// expected-error @+1 {{'init.param' op type 'tensor<4294967296x4294967296xf32>' has more bytes than fit in a signed 64-bit integer; check the shape}}
init.param @element_count_overflows : tensor<4294967296x4294967296xf32> {
  %0 = init.fill 0.0 : tensor<4294967296x4294967296xf32>
  init.yield %0 : tensor<4294967296x4294967296xf32>
}
