// init.expm1, init.log1p and init.linspace (mamba's dt init, torch.linspace), sharded.

init.seed 7

mesh.mesh @mesh(shape = 2x2) {init.axis_names = ["dp", "tp"]}

init.param @"backbone.layers.0.mixer.dt_proj.bias" : tensor<64xf32> sharding #mesh.shard<@mesh, [[1]]> {
  %u = init.uniform 0.0, 1.0 stream 0 : tensor<64xf32>
  %dt = init.exp %u : tensor<64xf32>
  %z = init.fill 0.0 : tensor<64xf32>
  %n = init.sub %z, %dt : tensor<64xf32>
  %e = init.expm1 %n : tensor<64xf32>
  %m = init.sub %z, %e : tensor<64xf32>
  %l = init.log %m : tensor<64xf32>
  %0 = init.add %dt, %l : tensor<64xf32>
  init.yield %0 : tensor<64xf32>
}

init.param @accurate_near_zero : tensor<64xf64> {
  %x = init.uniform -0.5, 0.5 stream 1 : tensor<64xf64>
  %0 = init.expm1 %x : tensor<64xf64>
  %1 = init.log1p %0 : tensor<64xf64>
  init.yield %1 : tensor<64xf64>
}

init.param @drop_path_rates : tensor<2x12xbf16> sharding #mesh.shard<@mesh, [[0]]> buffer nonpersistent {
  %0 = init.linspace dim 1 start 0.0 end 0.1 : tensor<2x12xbf16>
  init.yield %0 : tensor<2x12xbf16>
}
