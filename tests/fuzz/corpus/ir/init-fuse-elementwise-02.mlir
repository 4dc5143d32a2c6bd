// Masks and integers fuse too; a scalar region has one argument, the linear index.
init.param @causal_mask : tensor<1x1x8x8xi1> buffer nonpersistent {
  %0 = init.tril diagonal 0 : tensor<1x1x8x8xi1>
  init.yield %0 : tensor<1x1x8x8xi1>
}
init.param @scalar : tensor<f32> {
  %0 = init.fill 1.0 : tensor<f32>
  init.yield %0 : tensor<f32>
}
