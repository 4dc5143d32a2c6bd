// RUN: initc-opt %s --init-fuse-elementwise '--init-partition=targets=x86-64-v4+avx512bf16:1x16,x86-64-v4:1x16 bf16-converting-cpus=x86-64-v4+avx512bf16' | FileCheck %s
// RUN: initc-opt %s --init-fuse-elementwise '--init-partition=targets=znver4:1x16,x86-64-v4:1x16 bf16-converting-cpus=znver4' | FileCheck %s --check-prefix=NAMED

// bf16 samples that are never NaN nor subnormal are one conversion instruction on a CPU with
// AVX512-BF16. There, unless the samples are a function of their Philox word alone
// (init-partition-word-pairs.mlir), 16 blocks take the f32 lanes of a block two at a time: interleaved within
// 128-bit lanes, converted together (one vcvtne2ps2bf16: a dword holds both elements of a
// position), and the dwords of the two pairs interleaved within 128-bit lanes. Position p holds
// the block the store puts there: 0 1 4 5 8 9 12 13 2 3 6 7 10 11 14 15.

// CHECK-LABEL: func.func @initc_kernel_0(
// CHECK-SAME:      initc.target_cpu = "x86-64-v4+avx512bf16"
// CHECK:         arith.constant dense<[0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15]> : vector<16xi64>
// CHECK:         %[[H01:.+]] = vector.shuffle %[[L0:.+]], %[[L1:.+]] [2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT:    %[[CH01:.+]] = arith.truncf %[[H01]] {initc.magnitude_bound = {{.+}}, initc.no_nan_or_subnormal} : vector<16xf32> to vector<16xbf16>
// CHECK-NEXT:    %[[LO01:.+]] = vector.shuffle %[[L0]], %[[L1]] [0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT:    %[[CL01:.+]] = arith.truncf %[[LO01]] {initc.magnitude_bound = {{.+}}, initc.no_nan_or_subnormal} : vector<16xf32> to vector<16xbf16>
// CHECK-NEXT:    %[[C01:.+]] = vector.shuffle %[[CL01]], %[[CH01]] [0, 1, 2, {{.+}}, 31] : vector<16xbf16>, vector<16xbf16>
// CHECK-NEXT:    %[[P01:.+]] = vector.bitcast %[[C01]] : vector<32xbf16> to vector<16xi32>
// CHECK:         %[[P23:.+]] = vector.bitcast %{{.+}} : vector<32xbf16> to vector<16xi32>
// CHECK-NEXT:    %[[HI:.+]] = vector.shuffle %[[P01]], %[[P23]] [2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31] : vector<16xi32>, vector<16xi32>
// CHECK-NEXT:    %[[LO:.+]] = vector.shuffle %[[P01]], %[[P23]] [0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29] : vector<16xi32>, vector<16xi32>
// CHECK-NEXT:    %[[ALL:.+]] = vector.shuffle %[[LO]], %[[HI]] [0, 1, 2, {{.+}}, 31] : vector<16xi32>, vector<16xi32>
// CHECK-NEXT:    %[[STORED:.+]] = vector.bitcast %[[ALL]] : vector<32xi32> to vector<64xi16>
// CHECK:         llvm.store %[[STORED]], %{{.+}} {alignment = 2 : i64} : vector<64xi16>, !llvm.ptr

// Without the instruction the conversion becomes rule 8's integer rounding when lowered, and
// the lanes take the path of bf16 rounded in integers: two elements of a block per 32-bit word
// (shifts LLVM cancels against the rounding's), the words of the two pairs interleaved, the
// blocks in their own order, instead of narrowing each lane and ordering 16-bit elements.
// CHECK-LABEL: func.func @initc_kernel_0.x86_64_v4(
// CHECK-SAME:      initc.target_cpu = "x86-64-v4"
// CHECK:         arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : vector<16xi64>
// CHECK-NOT:     vector<32xi16>
// CHECK:         %[[WORDS:.+]] = vector.shuffle %{{.+}}, %{{.+}} [0, 16, 1, 17, 2, 18, {{.+}}, 15, 31] : vector<16xi32>, vector<16xi32>
// CHECK-NOT:     vector<32xi16>
// CHECK:         llvm.store %[[WORDS]], %{{.+}} {alignment = 2 : i64} : vector<32xi32>, !llvm.ptr

// A CPU that converts by the instruction under its own name (the compile pipeline lists those
// in bf16-converting-cpus) gets the same order; the others keep theirs.
// NAMED-LABEL: func.func @initc_kernel_0(
// NAMED-SAME:      initc.target_cpu = "znver4"
// NAMED:         arith.constant dense<[0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15]> : vector<16xi64>
// NAMED-LABEL: func.func @initc_kernel_0.x86_64_v4(
// NAMED:         arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : vector<16xi64>

init.seed 7
init.param @w : tensor<4x64xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<4x64xbf16>
  init.yield %0 : tensor<4x64xbf16>
}
