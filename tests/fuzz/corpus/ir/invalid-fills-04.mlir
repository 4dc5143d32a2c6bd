// init.iota, C2
init.param @iota_mask : tensor<16xi1> {
  // expected-error @+1 {{'init.iota' op cannot produce a mask; use init.index_mask or init.tril}}
  %0 = init.iota dim 0 start 0.0 step 1.0 : tensor<16xi1>
  init.yield %0 : tensor<16xi1>
}
