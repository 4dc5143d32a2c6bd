// RUN: initc-opt %s --init-fuse-elementwise '--init-partition=targets=x86-64-v4:1x16' | FileCheck %s

// A sample that is a function of its element's Philox word alone (uniform, truncated normal)
// is computed on the words of two elements of each block side by side, as the last round's
// product leaves them: product ^ (previous << 32) ^ (key << 32) holds x1 in its low half and x0
// in its high one (x3 and x2 in the other vector). The 16 blocks of a group sit in the order
// that lets one in-lane shuffle per two blocks put [x0 x1 x2 x3] in element order. Box-Muller
// takes both words of a pair for one element, so normal samples keep one vector per element of
// a block.

init.seed 3
init.param @u : tensor<4x64xf32> {
  %0 = init.uniform -0.1, 0.1 stream 0 : tensor<4x64xf32>
  init.yield %0 : tensor<4x64xf32>
}
init.param @h : tensor<4x64xf16> {
  %0 = init.uniform -0.1, 0.1 stream 0 : tensor<4x64xf16>
  init.yield %0 : tensor<4x64xf16>
}
init.param @n : tensor<4x64xf32> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<4x64xf32>
  init.yield %0 : tensor<4x64xf32>
}

// CHECK-LABEL: func.func @initc_kernel_0(
// CHECK:         scf.for {{.+}} step %c16_i64 iter_args
// CHECK:           arith.constant dense<[0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15]> : vector<16xi64>
// CHECK:           %[[ZEROS:.+]] = arith.constant dense<0> : vector<32xi32>
// CHECK:           %[[PREV:.+]] = vector.bitcast %{{.+}} : vector<16xi64> to vector<32xi32>
// CHECK-NEXT:      %[[PREVUP:.+]] = vector.shuffle %[[PREV]], %[[ZEROS]] [32, 0, 32, 2, 32, 4, {{.+}}, 32, 30] : vector<32xi32>, vector<32xi32>
// CHECK-NEXT:      %[[PREV64:.+]] = vector.bitcast %[[PREVUP]] : vector<32xi32> to vector<16xi64>
// CHECK-NEXT:      vector.bitcast %{{.+}} : vector<16xi64> to vector<32xi32>
// CHECK-NEXT:      vector.shuffle
// CHECK-NEXT:      %[[KEY64:.+]] = vector.bitcast %{{.+}} : vector<32xi32> to vector<16xi64>
// CHECK-NEXT:      %[[MIX:.+]] = arith.xori %{{.+}}, %[[PREV64]] : vector<16xi64>
// CHECK-NEXT:      %[[PAIRS64:.+]] = arith.xori %[[MIX]], %[[KEY64]] : vector<16xi64>
// CHECK-NEXT:      %[[PAIRS:.+]] = vector.bitcast %[[PAIRS64]] : vector<16xi64> to vector<32xi32>
// CHECK-NOT:       arith.select {{.+}} vector<16xi32>
// CHECK:           arith.shrui %[[PAIRS]], %{{.+}} : vector<32xi32>
// CHECK:           %[[X10:.+]] = vector.bitcast %{{.+}} : vector<32xf32> to vector<32xi32>
// CHECK-NEXT:      %[[X32:.+]] = vector.bitcast %{{.+}} : vector<32xf32> to vector<32xi32>
// CHECK-NEXT:      vector.shuffle %[[X10]], %[[X32]] [1, 0, 33, 32, 5, 4, 37, 36, 9, 8, 41, 40, 13, 12, 45, 44] : vector<32xi32>, vector<32xi32>
// CHECK-NEXT:      vector.shuffle %[[X10]], %[[X32]] [3, 2, 35, 34, 7, 6, 39, 38, 11, 10, 43, 42, 15, 14, 47, 46] : vector<32xi32>, vector<32xi32>
// CHECK-NEXT:      vector.shuffle %[[X10]], %[[X32]] [17, 16, 49, 48, 21, 20, 53, 52, 25, 24, 57, 56, 29, 28, 61, 60] : vector<32xi32>, vector<32xi32>
// CHECK-NEXT:      vector.shuffle %[[X10]], %[[X32]] [19, 18, 51, 50, 23, 22, 55, 54, 27, 26, 59, 58, 31, 30, 63, 62] : vector<32xi32>, vector<32xi32>
// CHECK:           llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : vector<64xi32>, !llvm.ptr

// f16 samples are put in element order as f32, then converted 16 at a time (one vcvtps2ph,
// which stores its result itself), each conversion stored apart.
// CHECK-LABEL: func.func @initc_kernel_1(
// CHECK:         scf.for {{.+}} step %c16_i64 iter_args
// CHECK-NOT:       arith.truncf
// CHECK:           vector.shuffle %{{.+}}, %{{.+}} [1, 0, 33, 32, 5, 4, 37, 36, 9, 8, 41, 40, 13, 12, 45, 44] : vector<32xi32>, vector<32xi32>
// CHECK:           %[[F32:.+]] = vector.bitcast %{{.+}} : vector<64xi32> to vector<64xf32>
// CHECK-NEXT:      %[[Q0:.+]] = vector.shuffle %[[F32]], %[[F32]] [0, 1, 2, {{.+}}, 15] : vector<64xf32>, vector<64xf32>
// CHECK-NEXT:      %[[H0:.+]] = arith.truncf %[[Q0]] : vector<16xf32> to vector<16xf16>
// CHECK-NEXT:      %[[Q1:.+]] = vector.shuffle %[[F32]], %[[F32]] [16, 17, 18, {{.+}}, 31] : vector<64xf32>, vector<64xf32>
// CHECK-NEXT:      %[[H1:.+]] = arith.truncf %[[Q1]] : vector<16xf32> to vector<16xf16>
// CHECK:           llvm.store %[[H0]], %{{.+}} {alignment = 2 : i64} : vector<16xf16>, !llvm.ptr
// CHECK:           llvm.store %[[H1]], %{{.+}} {alignment = 2 : i64} : vector<16xf16>, !llvm.ptr

// CHECK-LABEL: func.func @initc_kernel_2(
// CHECK-NOT:     vector<32xf32>
// CHECK:         math.sqrt %{{.+}} : vector<16xf32>
// CHECK-NOT:     vector<32xf32>
// CHECK:         return
