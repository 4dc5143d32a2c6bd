init.param @mul_and_div_by_one_fold : tensor<4xbf16> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xbf16>
  %one = init.fill 1.0 : tensor<4xbf16>
  %0 = init.mul %x, %one : tensor<4xbf16>
  %1 = init.mul %one, %0 : tensor<4xbf16>
  %2 = init.div %1, %one : tensor<4xbf16>
  init.yield %2 : tensor<4xbf16>
}
