// A fill, uniform in two dtypes, and a truncated normal twice (fusion shares its region).
init.seed 3
init.param @ones : tensor<1024x1024xf32> {
  %0 = init.fill 1.0 : tensor<1024x1024xf32>
  init.yield %0 : tensor<1024x1024xf32>
}
init.param @uniform : tensor<1024x1024xf32> {
  %0 = init.uniform -0.125, 0.125 stream 0 : tensor<1024x1024xf32>
  init.yield %0 : tensor<1024x1024xf32>
}
init.param @uniform_f16 : tensor<1024x1024xf16> {
  %0 = init.uniform -0.125, 0.125 stream 0 : tensor<1024x1024xf16>
  init.yield %0 : tensor<1024x1024xf16>
}
init.param @trunc_normal : tensor<2048x1024xbf16> {
  %0 = init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04] stream 0 : tensor<2048x1024xbf16>
  init.yield %0 : tensor<2048x1024xbf16>
}
init.param @trunc_normal_again : tensor<2048x1024xbf16> {
  %0 = init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04] stream 0 : tensor<2048x1024xbf16>
  init.yield %0 : tensor<2048x1024xbf16>
}
