// init.elementwise_like, C1: not the parameter it is in.
init.param @itself : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op 'like' names its own parameter '@itself': name the parameter whose body holds the init.elementwise}}
  %0 = init.elementwise_like @itself : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
