// A parameter initialized twice (constructor, then model.apply(init_fn)) keeps the init it
// yields, with its own stream: dropping the first one changes no value.
init.param @initialized_twice : tensor<8x8xf32> {
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<8x8xf32>
  %1 = init.normal mean 0.0 std 0.02 stream 1 : tensor<8x8xf32>
  init.yield %1 : tensor<8x8xf32>
}
