// RUN: initc-opt %s --init-partition --split-input-file --verify-diagnostics | FileCheck %s

// Each fused parameter becomes a native kernel with the runtime's ABI
// (out, global shape, slice offset, slice shape, begin, end, args); the parameter keeps its
// metadata and names the kernel. Identical regions, Philox keys aside, share one kernel; the
// keys become the parameter's kernel_args.

// CHECK-LABEL: init.param @a : tensor<4x8xf32> axes ["mlp", "embed"] kernel @initc_kernel_0{{$}}
// CHECK-NEXT:  init.param @b : tensor<4x8xf32> kernel @initc_kernel_0{{$}}
// CHECK-NEXT:  init.param @c : tensor<4x8xbf16> kernel @initc_kernel_1{{$}}
// CHECK-NEXT:  init.param @keyed_1 : tensor<16xf32> kernel @initc_kernel_2 attributes {kernel_args = array<i64: 11>}{{$}}
// CHECK-NEXT:  init.param @keyed_2 : tensor<16xf32> kernel @initc_kernel_2 attributes {kernel_args = array<i64: 22>}{{$}}
// CHECK-NOT:   init.elementwise
// CHECK-LABEL: func.func @initc_kernel_0(
// CHECK-SAME:      %[[OUT:[^:]+]]: !llvm.ptr {llvm.noalias, llvm.nocapture},
// CHECK-SAME:      %[[GSHAPE:[^:]+]]: !llvm.ptr {llvm.noalias, llvm.nocapture, llvm.readonly},
// CHECK-SAME:      %[[OFF:[^:]+]]: !llvm.ptr {llvm.noalias, llvm.nocapture, llvm.readonly},
// CHECK-SAME:      %[[LSHAPE:[^:]+]]: !llvm.ptr {llvm.noalias, llvm.nocapture, llvm.readonly},
// CHECK-SAME:      %[[BEGIN:[^:]+]]: i64, %[[END:[^:]+]]: i64,
// CHECK-SAME:      %[[ARGS:[^:]+]]: !llvm.ptr {llvm.noalias, llvm.nocapture, llvm.readonly})
// CHECK-SAME:      attributes {initc.kernel}
// A 2-D slice whose rows are whole Philox blocks of 4 but short: the elements before the first
// whole block, the blocks on vectors across rows (the iteration's first row and column carried),
// and one more iteration whose masked stores write the elements after the last whole one.
// CHECK:         scf.if %{{.+}} {
// CHECK:           scf.for %{{[^ ]+}} = %{{.+}} to %{{.+}} step %{{.+}} : i64 {
// CHECK:             llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr
// CHECK:           scf.for %{{[^ ]+}} = %{{.+}} to %{{.+}} step %c8_i64 iter_args(%{{.+}}, %{{.+}}) -> (i64, i64)
// CHECK:             llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : vector<32xi32>, !llvm.ptr
// CHECK:             scf.yield %{{.+}}, %{{.+}} : i64, i64
// CHECK:           scf.if %{{.+}} {
// CHECK:             llvm.intr.masked.store %{{.+}}, %{{.+}}, %{{.+}} {alignment = 4 : i32} : vector<32xi32>, vector<32xi1> into !llvm.ptr
// Otherwise rows of the slice, each on vectors only: a group from the block of the row's first
// element when that starts no block (the elements before the row masked off), whole groups,
// and a group of the blocks left and the last partial block, whose store writes the elements
// of the row's range [from, to) alone: the lanes at positions from - index to to - index.
// CHECK:         } else {
// CHECK:         scf.for %[[ROW:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} : i64 {
// CHECK:           scf.if %{{.+}} {
// CHECK:             llvm.intr.masked.store
// CHECK:           scf.for %{{[^ ]+}} = %{{.+}} to %{{.+}} step %c8_i64{{.*}} : i64 {
// CHECK:             llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : vector<32xi32>, !llvm.ptr
// CHECK:           scf.if %{{.+}} {
// CHECK:             %[[POSITION:.+]] = arith.constant dense<[0, 1, 2, {{.+}}, 31]> : vector<32xi32>
// CHECK:             %[[AFTER:.+]] = arith.cmpi sge, %[[POSITION]], %{{.+}} : vector<32xi32>
// CHECK:             %[[BEFORE:.+]] = arith.cmpi slt, %[[POSITION]], %{{.+}} : vector<32xi32>
// CHECK:             %[[MASK:.+]] = arith.andi %[[AFTER]], %[[BEFORE]] : vector<32xi1>
// CHECK:             llvm.intr.masked.store %{{.+}}, %{{.+}}, %[[MASK]] {alignment = 4 : i32}
// CHECK-NOT:       scf.for
// CHECK:         return
// CHECK-LABEL: func.func @initc_kernel_1(
// CHECK-SAME:      attributes {initc.kernel}
// CHECK:             llvm.store %{{.+}}, %{{.+}} : bf16, !llvm.ptr
// The key is read from `args` at run time, not baked into the kernel.
// CHECK-LABEL: func.func @initc_kernel_2(
// CHECK-SAME:      %[[KARGS:[^:]+]]: !llvm.ptr {llvm.noalias, llvm.nocapture, llvm.readonly})
// CHECK:         %[[KP:.+]] = llvm.getelementptr %[[KARGS]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    %[[KEY:.+]] = llvm.load %[[KP]] : !llvm.ptr -> i64
// CHECK:             %[[KEYS:.+]] = vector.broadcast %[[KEY]] : i64 to vector<8xi64>
// CHECK:             arith.xori %{{.+}}, %[[KEYS]] : vector<8xi64>
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
init.param @keyed_1 : tensor<16xf32> {
  %0 = init.elementwise {args = array<i64: 11>} : tensor<16xf32> {
  ^bb0(%linear: i64, %i: i64, %key: i64):
    %x = arith.xori %linear, %key : i64
    %v = arith.uitofp %x : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<16xf32>
}
init.param @keyed_2 : tensor<16xf32> {
  %0 = init.elementwise {args = array<i64: 22>} : tensor<16xf32> {
  ^bb0(%linear: i64, %i: i64, %key: i64):
    %x = arith.xori %linear, %key : i64
    %v = arith.uitofp %x : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<16xf32>
}

// -----

// Masks are stored as bytes; a tied parameter gets no kernel.
// CHECK-LABEL: init.param @mask : tensor<8x8xi1> kernel @initc_kernel_0 buffer nonpersistent{{$}}
// CHECK-NEXT:  init.param @tied : tensor<8x8xi1> tied_to @mask buffer nonpersistent{{$}}
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
init.param @tied : tensor<8x8xi1> tied_to @mask buffer nonpersistent

// -----

// f16 lanes (8 halves each, as a conversion leaves them) reach element order by pairing the
// lanes, unpacking halves within 128-bit halves and one dword permute each; bf16 lanes widen to
// 32-bit words instead (its rounding's shifts then cancel).
// CHECK-LABEL: func.func @initc_kernel_0(
// CHECK:             %[[EVEN:.+]] = vector.shuffle %{{.+}}, %{{.+}} [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<8xi16>, vector<8xi16>
// CHECK:             %[[LOW:.+]] = vector.shuffle %[[EVEN]], %{{.+}} [0, 16, 1, 17, 2, 18, 3, 19, 8, 24, 9, 25, 10, 26, 11, 27] : vector<16xi16>, vector<16xi16>
// CHECK:             %[[WORDS:.+]] = vector.bitcast %[[LOW]] : vector<16xi16> to vector<8xi32>
// CHECK:             vector.shuffle %[[WORDS]], %[[WORDS]] [0, 4, 1, 5, 2, 6, 3, 7] : vector<8xi32>, vector<8xi32>
// CHECK:             llvm.store %{{.+}}, %{{.+}} {alignment = 2 : i64} : vector<16xi32>, !llvm.ptr
// CHECK-LABEL: func.func @initc_kernel_1(
// CHECK-NOT:         vector<16xi16>
// CHECK:             llvm.store %{{.+}}, %{{.+}} {alignment = 2 : i64} : vector<16xi32>, !llvm.ptr
init.param @half : tensor<64xf16> {
  %0 = init.elementwise : tensor<64xf16> {
  ^bb0(%linear: i64, %i: i64):
    %v = arith.uitofp %linear : i64 to f16
    init.yield %v : f16
  }
  init.yield %0 : tensor<64xf16>
}
init.param @brain : tensor<64xbf16> {
  %0 = init.elementwise : tensor<64xbf16> {
  ^bb0(%linear: i64, %i: i64):
    %v = arith.uitofp %linear : i64 to bf16
    init.yield %v : bf16
  }
  init.yield %0 : tensor<64xbf16>
}

// -----

// init.orthogonal (strategy redundant): the kernel draws the N(0, 1) matrix; the runtime factors
// it, as the parameter's initc.transform says.
// CHECK-LABEL: init.param @q : tensor<8x4xf32> kernel @initc_kernel_0 attributes {initc.gain = 2.000000e+00 : f64, initc.transform = "orthogonal", kernel_args = array<i64: {{-?[0-9]+}}>}{{$}}
// CHECK-LABEL: func.func @initc_kernel_0(
// CHECK:         llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr
init.seed 3
init.param @q : tensor<8x4xf32> {
  %0 = init.orthogonal gain 2.0 stream 0 strategy redundant : tensor<8x4xf32>
  init.yield %0 : tensor<8x4xf32>
}

// -----

// init.load: no kernel; the parameter keeps the op, and the runtime reads its slice of the file.
// CHECK-LABEL: init.param @loaded : tensor<8x2xbf16> {
// CHECK-NEXT:    %[[L:.+]] = init.load "base.safetensors"["w"] : tensor<8x2xbf16>
// CHECK-NEXT:    init.yield %[[L]]
// CHECK-NOT:   func.func
init.param @loaded : tensor<8x2xbf16> {
  %0 = init.load "base.safetensors" ["w"] : tensor<8x2xbf16>
  init.yield %0 : tensor<8x2xbf16>
}
