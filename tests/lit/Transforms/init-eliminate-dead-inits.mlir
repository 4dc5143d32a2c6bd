// RUN: initc-opt %s --init-eliminate-dead-inits --split-input-file | FileCheck %s

// A parameter initialized twice (constructor, then model.apply(init_fn)) keeps the init it
// yields, with its own stream: dropping the first one changes no value.
// CHECK-LABEL: init.param @initialized_twice
// CHECK-NEXT:    %[[N:.+]] = init.normal mean 0.000000e+00 std 2.000000e-02 stream 1 : tensor<8x8xf32>
// CHECK-NEXT:    init.yield %[[N]] : tensor<8x8xf32>
// CHECK-NEXT:  }
// CHECK-NOT:   init.uniform
init.param @initialized_twice : tensor<8x8xf32> {
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<8x8xf32>
  %1 = init.normal mean 0.0 std 0.02 stream 1 : tensor<8x8xf32>
  init.yield %1 : tensor<8x8xf32>
}

// -----

// An overwritten chain goes entirely, not only its last op.
// CHECK-LABEL: init.param @overwritten_chain
// CHECK-NEXT:    %[[T:.+]] = init.trunc_normal
// CHECK-NEXT:    init.yield %[[T]]
// CHECK-NEXT:  }
init.param @overwritten_chain : tensor<8x8xf32> {
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<8x8xf32>
  %c = init.fill 3.0 : tensor<8x8xf32>
  %1 = init.mul %0, %c : tensor<8x8xf32>
  %2 = init.clamp %1 min -1.0 max 1.0 : tensor<8x8xf32>
  %3 = init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04] stream 1 : tensor<8x8xf32>
  init.yield %3 : tensor<8x8xf32>
}

// -----

// A select whose mask is all true keeps the true side; the false side's init is dead.
// CHECK-LABEL: init.param @select_all_true
// CHECK-NEXT:    %[[Z:.+]] = init.fill 0.000000e+00 : tensor<16x4xf32>
// CHECK-NEXT:    init.yield %[[Z]]
// CHECK-NEXT:  }
init.param @select_all_true : tensor<16x4xf32> {
  %m = init.fill 1.0 : tensor<16x4xi1>
  %z = init.fill 0.0 : tensor<16x4xf32>
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<16x4xf32>
  %0 = init.select %m, %z, %w : tensor<16x4xi1>, tensor<16x4xf32>
  init.yield %0 : tensor<16x4xf32>
}

// -----

// CHECK-LABEL: init.param @select_all_false
// CHECK-NEXT:    %[[W:.+]] = init.normal mean 0.000000e+00 std 1.000000e+00 stream 0 : tensor<16x4xf32>
// CHECK-NEXT:    init.yield %[[W]]
// CHECK-NEXT:  }
init.param @select_all_false : tensor<16x4xf32> {
  %m = init.fill 0.0 : tensor<16x4xi1>
  %z = init.fill 0.0 : tensor<16x4xf32>
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<16x4xf32>
  %0 = init.select %m, %z, %w : tensor<16x4xi1>, tensor<16x4xf32>
  init.yield %0 : tensor<16x4xf32>
}

// -----

// A select by a real mask keeps both sides.
// CHECK-LABEL: init.param @select_by_padding_row
// CHECK:         init.index_mask
// CHECK:         init.fill
// CHECK:         init.normal
// CHECK:         init.select
init.param @select_by_padding_row : tensor<16x4xf32> {
  %m = init.index_mask dim 0 index 1 : tensor<16x4xi1>
  %z = init.fill 0.0 : tensor<16x4xf32>
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<16x4xf32>
  %0 = init.select %m, %z, %w : tensor<16x4xi1>, tensor<16x4xf32>
  init.yield %0 : tensor<16x4xf32>
}

// -----

// Non-persistent buffers are part of the model: kept. Tied and lowered parameters have no body.
// CHECK-LABEL: init.param @h.0.attn.bias : tensor<1x1x8x8xi1> buffer nonpersistent {
// CHECK-NEXT:    init.tril
// CHECK-LABEL: init.param @lm_head.weight : tensor<16x4xf32> tied_to @wte.weight{{$}}
init.param @wte.weight : tensor<16x4xf32> {
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<16x4xf32>
  init.yield %w : tensor<16x4xf32>
}
init.param @"h.0.attn.bias" : tensor<1x1x8x8xi1> buffer nonpersistent {
  %0 = init.tril diagonal 0 : tensor<1x1x8x8xi1>
  init.yield %0 : tensor<1x1x8x8xi1>
}
init.param @lm_head.weight : tensor<16x4xf32> tied_to @wte.weight
