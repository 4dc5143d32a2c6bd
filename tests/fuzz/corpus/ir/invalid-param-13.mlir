// init.param, C6: a mesh axis used twice is rejected by #mesh.shard itself.
mesh.mesh @mesh(shape = 2x2)
// expected-error @+1 {{mesh axis duplicated}}
init.param @sharding_uses_axis_twice : tensor<4x4xf32> sharding #mesh.shard<@mesh, [[0], [0]]> {
  %0 = init.fill 0.0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}
