// RUN: initc-opt %s '--init-partition=targets=x86-64-v4:2x16,x86-64-v3' | FileCheck %s
// RUN: not initc-opt %s '--init-partition=targets=x86-64-v3,x86-64-v3' 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not initc-opt %s '--init-partition=targets=x86-64-v4:9' 2>&1 | FileCheck %s --check-prefix=GROUPS
// RUN: not initc-opt %s '--init-partition=targets=x86-64-v4:2x12' 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: not initc-opt %s '--init-partition=targets=x86-64-v3:2pp' 2>&1 | FileCheck %s --check-prefix=PIPELINED
// RUN: not initc-opt %s '--init-partition=targets=x86-64-v3:p' 2>&1 | FileCheck %s --check-prefix=ONLYP
// RUN: not initc-opt %s '--init-partition=targets=x86-64-v4 bf16-converting-cpus=znver4' 2>&1 | FileCheck %s --check-prefix=NOTTARGET

// With targets, every recipe gets one kernel per CPU, best first: the first keeps the kernel's
// name (the one parameters refer to), the others add '.CPU'. Each carries initc.target_cpu for
// the code generator, and takes GROUPS groups of BLOCKS Philox blocks (8 unless given) per
// iteration of its vector loop: one store of 4 x BLOCKS elements per group.

// CHECK-LABEL: init.param @a : tensor<4x64xf32> kernel @initc_kernel_0{{$}}
// CHECK-LABEL: init.param @h : tensor<4x64xbf16> kernel @initc_kernel_1{{$}}
// CHECK-LABEL: init.param @half : tensor<4x64xf16> kernel @initc_kernel_2{{$}}
// A 2-D slice has two vector loops: across rows, when its rows are whole blocks but shorter
// than a few iterations (the iteration's first row and column carried), and along each row.
// Across rows, each lane's offset in rows and columns is divided out once, before the loop;
// in an iteration a lane past the row's end (a compare) adds one row's skip (a select).
// CHECK-LABEL: func.func @initc_kernel_0(
// CHECK-SAME:      attributes {initc.kernel, initc.target_cpu = "x86-64-v4"}
// CHECK:         scf.if %{{.+}} {
// CHECK:           arith.constant dense<[0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15]> : vector<16xi64>
// CHECK:           arith.shrui %{{.+}}, %{{.+}} : vector<16xi64>
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c32_i64 iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (i64, i64)
// CHECK-NOT:         arith.shrui %{{.+}} : vector<16xi64>
// CHECK:             %[[WRAPS:.+]] = arith.cmpi sge, %{{.+}}, %{{.+}} : vector<16xi64>
// CHECK:             arith.select %[[WRAPS]], %{{.+}}, %{{.+}} : vector<16xi1>, vector<16xi64>
// CHECK:             llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : vector<64xi32>, !llvm.ptr
// CHECK:             llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : vector<64xi32>, !llvm.ptr
// CHECK:             scf.yield %{{.+}}, %{{.+}} : i64, i64
// CHECK:         } else {
// 16 blocks of 32-bit elements, position 4L + k (128-bit lane L) holding block 4k + L: the 4x4
// transpose within 128-bit lanes leaves blocks 4k to 4k + 3 in its k-th vector.
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c32_i64{{.*}} : i64 {
// CHECK:             arith.constant dense<[0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15]> : vector<16xi64>
// CHECK:             %[[T0:.+]] = vector.shuffle %[[L0:.+]], %[[L1:.+]] [0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29] : vector<16xi32>, vector<16xi32>
// CHECK-NEXT:        %[[T1:.+]] = vector.shuffle %[[L0]], %[[L1]] [2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31] : vector<16xi32>, vector<16xi32>
// CHECK-NEXT:        %[[T2:.+]] = vector.shuffle %[[L2:.+]], %[[L3:.+]] [0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29] : vector<16xi32>, vector<16xi32>
// CHECK-NEXT:        %[[T3:.+]] = vector.shuffle %[[L2]], %[[L3]] [2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31] : vector<16xi32>, vector<16xi32>
// CHECK-NEXT:        %[[U0:.+]] = vector.shuffle %[[T0]], %[[T2]] [0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29] : vector<16xi32>, vector<16xi32>
// CHECK-NEXT:        %[[U1:.+]] = vector.shuffle %[[T0]], %[[T2]] [2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31] : vector<16xi32>, vector<16xi32>
// CHECK-NEXT:        %[[U2:.+]] = vector.shuffle %[[T1]], %[[T3]] [0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29] : vector<16xi32>, vector<16xi32>
// CHECK-NEXT:        %[[U3:.+]] = vector.shuffle %[[T1]], %[[T3]] [2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31] : vector<16xi32>, vector<16xi32>
// CHECK-NEXT:        %[[U01:.+]] = vector.shuffle %[[U0]], %[[U1]] [0, 1, 2, {{.+}}, 31] : vector<16xi32>, vector<16xi32>
// CHECK-NEXT:        %[[U23:.+]] = vector.shuffle %[[U2]], %[[U3]] [0, 1, 2, {{.+}}, 31] : vector<16xi32>, vector<16xi32>
// CHECK-NEXT:        %[[ALL:.+]] = vector.shuffle %[[U01]], %[[U23]] [0, 1, 2, {{.+}}, 63] : vector<32xi32>, vector<32xi32>
// CHECK:             llvm.store %[[ALL]], %{{.+}} {alignment = 4 : i64} : vector<64xi32>, !llvm.ptr
// CHECK:             llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : vector<64xi32>, !llvm.ptr
// CHECK-NEXT:      }
// The groups left after the iterations of two, one at a time; then one group of the blocks left
// and the row's last partial block, whose store is masked.
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c16_i64{{.*}} : i64 {
// CHECK:             llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : vector<64xi32>, !llvm.ptr
// CHECK-NEXT:      }
// CHECK:           scf.if %{{.+}} {
// CHECK:             llvm.intr.masked.store %{{.+}}, %{{.+}}, %{{.+}} {alignment = 4 : i32} : vector<64xi32>, vector<64xi1> into !llvm.ptr
// 8 blocks of 32-bit elements, held in the order 0 2 4 6 | 1 3 5 7: the 4x4 transpose within
// 128-bit halves (unpck*) leaves two whole blocks in each vector, and no halves to exchange.
// CHECK-LABEL: func.func @initc_kernel_0.x86_64_v3(
// CHECK-SAME:      attributes {initc.kernel, initc.target_cpu = "x86-64-v3"}
// CHECK:           arith.constant dense<[0, 2, 4, 6, 1, 3, 5, 7]> : vector<8xi64>
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c8_i64
// CHECK:             %[[T0:.+]] = vector.shuffle %[[L0:.+]], %[[L1:.+]] [0, 8, 1, 9, 4, 12, 5, 13] : vector<8xi32>, vector<8xi32>
// CHECK-NEXT:        %[[T1:.+]] = vector.shuffle %[[L0]], %[[L1]] [2, 10, 3, 11, 6, 14, 7, 15] : vector<8xi32>, vector<8xi32>
// CHECK-NEXT:        %[[T2:.+]] = vector.shuffle %[[L2:.+]], %[[L3:.+]] [0, 8, 1, 9, 4, 12, 5, 13] : vector<8xi32>, vector<8xi32>
// CHECK-NEXT:        %[[T3:.+]] = vector.shuffle %[[L2]], %[[L3]] [2, 10, 3, 11, 6, 14, 7, 15] : vector<8xi32>, vector<8xi32>
// CHECK-NEXT:        %[[B01:.+]] = vector.shuffle %[[T0]], %[[T2]] [0, 1, 8, 9, 4, 5, 12, 13] : vector<8xi32>, vector<8xi32>
// CHECK-NEXT:        %[[B23:.+]] = vector.shuffle %[[T0]], %[[T2]] [2, 3, 10, 11, 6, 7, 14, 15] : vector<8xi32>, vector<8xi32>
// CHECK-NEXT:        %[[B45:.+]] = vector.shuffle %[[T1]], %[[T3]] [0, 1, 8, 9, 4, 5, 12, 13] : vector<8xi32>, vector<8xi32>
// CHECK-NEXT:        %[[B67:.+]] = vector.shuffle %[[T1]], %[[T3]] [2, 3, 10, 11, 6, 7, 14, 15] : vector<8xi32>, vector<8xi32>
// CHECK-NEXT:        %[[B03:.+]] = vector.shuffle %[[B01]], %[[B23]] [0, 1, 2, {{.+}}, 15] : vector<8xi32>, vector<8xi32>
// CHECK-NEXT:        %[[B47:.+]] = vector.shuffle %[[B45]], %[[B67]] [0, 1, 2, {{.+}}, 15] : vector<8xi32>, vector<8xi32>
// CHECK-NEXT:        %[[ALL:.+]] = vector.shuffle %[[B03]], %[[B47]] [0, 1, 2, {{.+}}, 31] : vector<16xi32>, vector<16xi32>
// CHECK:             llvm.store %[[ALL]], %{{.+}} {alignment = 4 : i64} : vector<32xi32>, !llvm.ptr
// CHECK:             scf.yield

// 16-bit elements: the two elements of each pair in a block share a 32-bit word (the first in
// the low half), and the words of the two pairs interleave into the store.
// CHECK-LABEL: func.func @initc_kernel_1(
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c32_i64
// CHECK:             %[[E0:.+]] = arith.extui %{{.+}} : vector<16xi16> to vector<16xi32>
// CHECK-NEXT:        %[[E1:.+]] = arith.extui %{{.+}} : vector<16xi16> to vector<16xi32>
// CHECK-NEXT:        %[[H1:.+]] = arith.shli %[[E1]], %{{.+}} : vector<16xi32>
// CHECK-NEXT:        %[[P01:.+]] = arith.ori %[[E0]], %[[H1]] : vector<16xi32>
// CHECK:             %[[ALL:.+]] = vector.shuffle %[[P01]], %{{.+}} [0, 16, 1, 17, 2, 18, {{.+}}, 15, 31] : vector<16xi32>, vector<16xi32>
// CHECK:             llvm.store %[[ALL]], %{{.+}} {alignment = 2 : i64} : vector<32xi32>, !llvm.ptr
// With 8 blocks, held in the order 0 1 4 5 | 2 3 6 7, the words interleave within 128-bit halves.
// CHECK-LABEL: func.func @initc_kernel_1.x86_64_v3(
// CHECK:           arith.constant dense<[0, 1, 4, 5, 2, 3, 6, 7]> : vector<8xi64>
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c8_i64
// CHECK:             %[[P01:.+]] = arith.ori %{{.+}}, %{{.+}} : vector<8xi32>
// CHECK:             %[[P23:.+]] = arith.ori %{{.+}}, %{{.+}} : vector<8xi32>
// CHECK-NEXT:        %[[B03:.+]] = vector.shuffle %[[P01]], %[[P23]] [0, 8, 1, 9, 4, 12, 5, 13] : vector<8xi32>, vector<8xi32>
// CHECK-NEXT:        %[[B47:.+]] = vector.shuffle %[[P01]], %[[P23]] [2, 10, 3, 11, 6, 14, 7, 15] : vector<8xi32>, vector<8xi32>
// CHECK-NEXT:        %[[ALL:.+]] = vector.shuffle %[[B03]], %[[B47]] [0, 1, 2, {{.+}}, 15] : vector<8xi32>, vector<8xi32>
// CHECK:             llvm.store %[[ALL]], %{{.+}} {alignment = 2 : i64} : vector<16xi32>, !llvm.ptr
// f16 lanes are what a conversion leaves (x86 computes f16 in f32), whatever op the region
// ends with: with 16 blocks they are joined two by two and put in element order by one shuffle.
// CHECK-LABEL: func.func @initc_kernel_2(
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c32_i64
// CHECK:             %[[J01:.+]] = vector.shuffle %{{.+}}, %{{.+}} [0, 1, 2, {{.+}}, 31] : vector<16xi16>, vector<16xi16>
// CHECK-NEXT:        %[[J23:.+]] = vector.shuffle %{{.+}}, %{{.+}} [0, 1, 2, {{.+}}, 31] : vector<16xi16>, vector<16xi16>
// CHECK-NEXT:        %[[ALL:.+]] = vector.shuffle %[[J01]], %[[J23]] [0, 16, 32, 48, 1, 17, 33, 49, {{.+}}, 63] : vector<32xi16>, vector<32xi16>
// CHECK:             llvm.store %[[ALL]], %{{.+}} {alignment = 2 : i64} : vector<64xi16>, !llvm.ptr
// CHECK-LABEL: func.func @initc_kernel_2.x86_64_v3(
// CHECK-NOT:   func.func

// TWICE: error: init-partition: target 'x86-64-v3' is listed twice
// NOTTARGET: error: init-partition: bf16-converting-cpus names 'znver4', which is not one of the targets' CPUs
// GROUPS: error: init-partition: target 'x86-64-v4:9' is not CPU, CPU:GROUPS or CPU:GROUPSxBLOCKS (then p for a software-pipelined loop) with GROUPS in 1..4 and BLOCKS 8 or 16
// BLOCKS: error: init-partition: target 'x86-64-v4:2x12' is not CPU, CPU:GROUPS
// PIPELINED: error: init-partition: target 'x86-64-v3:2pp' is not CPU, CPU:GROUPS
// ONLYP: error: init-partition: target 'x86-64-v3:p' is not CPU, CPU:GROUPS

init.seed 0
init.param @a : tensor<4x64xf32> {
  %0 = init.elementwise : tensor<4x64xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %v = arith.sitofp %linear : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4x64xf32>
}
init.param @h : tensor<4x64xbf16> {
  %0 = init.elementwise : tensor<4x64xbf16> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %v = arith.sitofp %linear : i64 to bf16
    init.yield %v : bf16
  }
  init.yield %0 : tensor<4x64xbf16>
}
init.param @half : tensor<4x64xf16> {
  %0 = init.elementwise : tensor<4x64xf16> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %v = arith.sitofp %linear : i64 to f16
    init.yield %v : f16
  }
  init.yield %0 : tensor<4x64xf16>
}
