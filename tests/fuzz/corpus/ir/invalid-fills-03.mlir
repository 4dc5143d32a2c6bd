// init.iota, C1
init.param @iota_dim_out_of_range : tensor<1x16xi64> {
  // expected-error @+1 {{'init.iota' op dim 2 is out of range for a tensor of rank 2}}
  %0 = init.iota dim 2 start 0.0 step 1.0 : tensor<1x16xi64>
  init.yield %0 : tensor<1x16xi64>
}
