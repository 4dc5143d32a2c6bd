// 1 + 2^-8 is a tie between two bf16 values: nearest even gives 1.
init.param @fill_arithmetic_bf16_rounds : tensor<4xbf16> {
  %a = init.fill 1.0 : tensor<4xbf16>
  %b = init.fill 0.00390625 : tensor<4xbf16>
  %0 = init.add %a, %b : tensor<4xbf16>
  init.yield %0 : tensor<4xbf16>
}
