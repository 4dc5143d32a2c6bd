// Masks are stored as bytes; a tied parameter gets no kernel.
init.param @mask : tensor<8x8xi1> buffer nonpersistent {
  %0 = init.elementwise : tensor<8x8xi1> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %v = arith.cmpi sle, %j, %i : i64
    init.yield %v : i1
  }
  init.yield %0 : tensor<8x8xi1>
}
init.param @tied : tensor<8x8xi1> tied_to @mask
