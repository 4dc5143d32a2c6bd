// init.load, C1
init.param @load_without_tensor_name : tensor<4xf32> {
  // expected-error @+1 {{'init.load' op needs a file and a tensor name}}
  %0 = init.load "base.safetensors" [""] : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
