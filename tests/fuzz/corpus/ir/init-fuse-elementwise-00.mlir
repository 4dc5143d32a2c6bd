// A chain of elementwise ops becomes one init.elementwise whose region computes one element
// from its global index; no intermediate tensor op is left. The arith inside is the RNG
// contract's (ir-spec/rng.md), tested bit for bit elsewhere: here only the structure.

init.seed 42

init.param @chain : tensor<8x4xf32> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<8x4xf32>
  %1 = init.fill 2.0 : tensor<8x4xf32>
  %2 = init.mul %0, %1 : tensor<8x4xf32>
  %3 = init.fill 0.5 : tensor<8x4xf32>
  %4 = init.add %2, %3 : tensor<8x4xf32>
  init.yield %4 : tensor<8x4xf32>
}
