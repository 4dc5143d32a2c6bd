// init.param, C10
// expected-error @+1 {{'init.param' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 64-bit signless integer values}}
init.param @dynamic_shape : tensor<?xf32> {
  %0 = init.fill 0.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
