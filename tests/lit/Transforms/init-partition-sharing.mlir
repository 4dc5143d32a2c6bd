// RUN: initc-opt %s --init-partition | FileCheck %s

// Parameters share a kernel exactly when their recipes are the same: extents and keys are read
// at run time, everything else (the ops, their constants and operands, the rank and element
// type) makes another kernel. Same ops wired to other operands are another recipe.

// CHECK-LABEL: init.param @rows : tensor<4x8xf32> kernel @initc_kernel_0{{$}}
// CHECK-NEXT:  init.param @other_extents : tensor<16x2xf32> kernel @initc_kernel_0{{$}}
// CHECK-NEXT:  init.param @operands_swapped : tensor<4x8xf32> kernel @initc_kernel_1{{$}}
// CHECK-NEXT:  init.param @other_constant : tensor<4x8xf32> kernel @initc_kernel_2{{$}}
// CHECK-NEXT:  init.param @other_rank : tensor<4x8x1xf32> kernel @initc_kernel_3{{$}}
// CHECK-NEXT:  init.param @rows_again : tensor<2x2xf32> kernel @initc_kernel_0{{$}}
// CHECK-NEXT:  init.param @swapped_again : tensor<1x1xf32> kernel @initc_kernel_1{{$}}
// An init.elementwise_like takes the kernel of the parameter it names, wherever that stands,
// with its own args.
// CHECK-NEXT:  init.param @like_keyed : tensor<8xf32> kernel @initc_kernel_4 attributes {kernel_args = array<i64: 22>}{{$}}
// CHECK-NEXT:  init.param @keyed : tensor<8xf32> kernel @initc_kernel_4 attributes {kernel_args = array<i64: 11>}{{$}}
// CHECK-COUNT-5: func.func @initc_kernel_
// CHECK-NOT:   func.func
init.seed 0
init.param @rows : tensor<4x8xf32> {
  %0 = init.elementwise : tensor<4x8xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %c = arith.constant 3 : i64
    %d = arith.subi %i, %j : i64
    %e = arith.muli %d, %c : i64
    %v = arith.sitofp %e : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4x8xf32>
}
init.param @other_extents : tensor<16x2xf32> {
  %0 = init.elementwise : tensor<16x2xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %c = arith.constant 3 : i64
    %d = arith.subi %i, %j : i64
    %e = arith.muli %d, %c : i64
    %v = arith.sitofp %e : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<16x2xf32>
}
init.param @operands_swapped : tensor<4x8xf32> {
  %0 = init.elementwise : tensor<4x8xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %c = arith.constant 3 : i64
    %d = arith.subi %j, %i : i64
    %e = arith.muli %d, %c : i64
    %v = arith.sitofp %e : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4x8xf32>
}
init.param @other_constant : tensor<4x8xf32> {
  %0 = init.elementwise : tensor<4x8xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %c = arith.constant 5 : i64
    %d = arith.subi %i, %j : i64
    %e = arith.muli %d, %c : i64
    %v = arith.sitofp %e : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4x8xf32>
}
init.param @other_rank : tensor<4x8x1xf32> {
  %0 = init.elementwise : tensor<4x8x1xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64, %k: i64):
    %c = arith.constant 3 : i64
    %d = arith.subi %i, %j : i64
    %e = arith.muli %d, %c : i64
    %v = arith.sitofp %e : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4x8x1xf32>
}
init.param @rows_again : tensor<2x2xf32> {
  %0 = init.elementwise : tensor<2x2xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %c = arith.constant 3 : i64
    %d = arith.subi %i, %j : i64
    %e = arith.muli %d, %c : i64
    %v = arith.sitofp %e : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<2x2xf32>
}
init.param @swapped_again : tensor<1x1xf32> {
  %0 = init.elementwise : tensor<1x1xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %c = arith.constant 3 : i64
    %d = arith.subi %j, %i : i64
    %e = arith.muli %d, %c : i64
    %v = arith.sitofp %e : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<1x1xf32>
}
init.param @like_keyed : tensor<8xf32> {
  %0 = init.elementwise_like @keyed {args = array<i64: 22>} : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}
init.param @keyed : tensor<8xf32> {
  %0 = init.elementwise {args = array<i64: 11>} : tensor<8xf32> {
  ^bb0(%linear: i64, %i: i64, %key: i64):
    %x = arith.xori %linear, %key : i64
    %v = arith.uitofp %x : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<8xf32>
}
