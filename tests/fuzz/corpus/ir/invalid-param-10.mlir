// init.param, C6
mesh.mesh @mesh(shape = 2x2)
// expected-error @+1 {{'init.param' op sharding splits 3 dims of a tensor of rank 2}}
init.param @sharding_splits_too_many_dims : tensor<4x4xf32> sharding #mesh.shard<@mesh, [[], [], [0]]> {
  %0 = init.fill 0.0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}
