// init.index_mask, C1
init.param @index_mask_dim_out_of_range : tensor<8x4xi1> {
  // expected-error @+1 {{'init.index_mask' op dim -1 is out of range for a tensor of rank 2}}
  %0 = init.index_mask dim -1 index 0 : tensor<8x4xi1>
  init.yield %0 : tensor<8x4xi1>
}
