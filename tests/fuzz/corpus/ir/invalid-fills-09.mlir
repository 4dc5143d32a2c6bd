// init.index_mask, C2
init.param @index_mask_index_out_of_range : tensor<8x4xi1> {
  // expected-error @+1 {{'init.index_mask' op index 8 is out of range for dim 0 of size 8}}
  %0 = init.index_mask dim 0 index 8 : tensor<8x4xi1>
  init.yield %0 : tensor<8x4xi1>
}
