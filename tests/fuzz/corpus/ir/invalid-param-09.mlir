// init.param, C6
// expected-error @+1 {{'init.param' op sharding refers to an unknown mesh '@nowhere'}}
init.param @sharding_over_unknown_mesh : tensor<4x4xf32> sharding #mesh.shard<@nowhere, [[0]]> {
  %0 = init.fill 0.0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}
