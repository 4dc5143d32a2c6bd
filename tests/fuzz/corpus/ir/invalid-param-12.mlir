// init.param, C6
mesh.mesh @mesh(shape = 2x2)
// expected-error @+1 {{'init.param' op sharding uses mesh axis 2 but mesh '@mesh' has 2 axes}}
init.param @sharding_over_missing_mesh_axis : tensor<4x4xf32> sharding #mesh.shard<@mesh, [[2]]> {
  %0 = init.fill 0.0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}
