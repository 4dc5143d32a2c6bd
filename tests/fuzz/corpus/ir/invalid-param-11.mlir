// init.param, C6
mesh.mesh @mesh(shape = 2x2)
// expected-error @+1 {{'init.param' op parameters cannot be partial (sharding has partial axes)}}
init.param @partial_sharding : tensor<4x4xf32> sharding #mesh.shard<@mesh, [[0]], partial = sum[1]> {
  %0 = init.fill 0.0 : tensor<4x4xf32>
  init.yield %0 : tensor<4x4xf32>
}
