// RUN: initc-opt %s --init-partition --split-input-file --verify-diagnostics | FileCheck %s

// Each fused parameter becomes a native kernel with the runtime's ABI
// (out, global shape, slice offset, slice shape, begin, end); the parameter keeps its metadata
// and names the kernel. Identical regions share one kernel.

// CHECK-LABEL: init.param @a : tensor<4x8xf32> axes ["mlp", "embed"] kernel @initc_kernel_0{{$}}
// CHECK-NEXT:  init.param @b : tensor<4x8xf32> kernel @initc_kernel_0{{$}}
// CHECK-NEXT:  init.param @c : tensor<4x8xbf16> kernel @initc_kernel_1{{$}}
// CHECK-NOT:   init.elementwise
// CHECK-LABEL: func.func @initc_kernel_0(
// CHECK-SAME:      %[[OUT:[^:]+]]: !llvm.ptr, %[[GSHAPE:[^:]+]]: !llvm.ptr, %[[OFF:[^:]+]]: !llvm.ptr, %[[LSHAPE:[^:]+]]: !llvm.ptr, %[[BEGIN:[^:]+]]: i64, %[[END:[^:]+]]: i64)
// CHECK-SAME:      attributes {initc.kernel}
// CHECK:         scf.for %[[ROW:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK:           scf.for %[[COL:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK:             %[[V:.+]] = arith.sitofp %{{.+}} : i64 to f32
// CHECK:             %[[P:.+]] = llvm.getelementptr %[[OUT]][%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:        llvm.store %[[V]], %[[P]] : f32, !llvm.ptr
// CHECK:         return
// CHECK-LABEL: func.func @initc_kernel_1(
// CHECK-SAME:      attributes {initc.kernel}
// CHECK:           llvm.store %{{.+}}, %{{.+}} : bf16, !llvm.ptr
// CHECK-NOT:   func.func
init.seed 0
init.param @a : tensor<4x8xf32> axes ["mlp", "embed"] {
  %0 = init.elementwise : tensor<4x8xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %v = arith.sitofp %linear : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4x8xf32>
}
init.param @b : tensor<4x8xf32> {
  %0 = init.elementwise : tensor<4x8xf32> {
  ^bb0(%l: i64, %r: i64, %c: i64):
    %v = arith.sitofp %l : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4x8xf32>
}
init.param @c : tensor<4x8xbf16> {
  %0 = init.elementwise : tensor<4x8xbf16> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %v = arith.constant 1.0 : bf16
    init.yield %v : bf16
  }
  init.yield %0 : tensor<4x8xbf16>
}

// -----

// Masks are stored as bytes; a tied parameter gets no kernel.
// CHECK-LABEL: init.param @mask : tensor<8x8xi1> buffer nonpersistent kernel @initc_kernel_0{{$}}
// CHECK-NEXT:  init.param @tied : tensor<8x8xi1> tied_to @mask{{$}}
// CHECK-LABEL: func.func @initc_kernel_0(
// CHECK:             %[[B:.+]] = arith.extui %{{.+}} : i1 to i8
// CHECK:             llvm.store %[[B]], %{{.+}} : i8, !llvm.ptr
init.param @mask : tensor<8x8xi1> buffer nonpersistent {
  %0 = init.elementwise : tensor<8x8xi1> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %v = arith.cmpi sle, %j, %i : i64
    init.yield %v : i1
  }
  init.yield %0 : tensor<8x8xi1>
}
init.param @tied : tensor<8x8xi1> tied_to @mask

// -----

// expected-error @+1 {{'init.orthogonal' has no native lowering yet; only elementwise recipes (run init-fuse-elementwise first) can be partitioned}}
init.param @orthogonal : tensor<8x8xf32> {
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<8x8xf32>
  init.yield %0 : tensor<8x8xf32>
}
