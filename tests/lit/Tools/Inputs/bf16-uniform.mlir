init.seed 7
init.param @w : tensor<4x64xbf16> {
  %0 = init.uniform -0.1, 0.1 stream 0 : tensor<4x64xbf16>
  init.yield %0 : tensor<4x64xbf16>
}
