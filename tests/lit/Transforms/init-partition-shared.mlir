// RUN: initc-opt %s '--init-partition=targets=x86-64-v4:2x16,x86-64-v3' | FileCheck %s

// The four lanes of a Philox block differ only in the two low bits of the linear index: what a
// region computes from `linear >> k` (k >= 2), the row and the keys alone is computed once per
// group of blocks and shared by its lanes (here one multiply per group, as the Philox rounds);
// what reads the lane (`linear` itself, its low bits, the column) is computed per lane. (Checked
// in the loop along rows; the loop across rows shares the same way.)

// CHECK-LABEL: func.func @initc_kernel_0(
// CHECK:         } else {
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c32_i64
// CHECK-COUNT-2:     arith.muli %{{.+}} : vector<16xi64>
// CHECK-NOT:         arith.muli
// CHECK-COUNT-8:     arith.andi %{{.+}} : vector<16xi64>
// CHECK-NOT:         arith.muli
// CHECK:             llvm.store
// CHECK-LABEL: func.func @initc_kernel_0.x86_64_v3(
// CHECK:         } else {
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c8_i64
// CHECK:             arith.muli %{{.+}} : vector<8xi64>
// CHECK-NOT:         arith.muli
// CHECK:             llvm.store

// A shift by one keeps a lane bit: per lane.
// CHECK-LABEL: func.func @initc_kernel_1(
// CHECK:         } else {
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c32_i64
// CHECK-COUNT-8:     arith.muli %{{.+}} : vector<16xi64>
// CHECK-NOT:         arith.muli
// CHECK:             llvm.store

init.seed 0
init.param @shared : tensor<4x128xf32> {
  %0 = init.elementwise : tensor<4x128xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %c2 = arith.constant 2 : i64
    %block = arith.shrui %linear, %c2 : i64
    %rounds = arith.muli %block, %i : i64
    %c3 = arith.constant 3 : i64
    %lane = arith.andi %linear, %c3 : i64
    %word = arith.addi %rounds, %lane : i64
    %v = arith.sitofp %word : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4x128xf32>
}
init.param @per_lane : tensor<4x128xf32> {
  %0 = init.elementwise : tensor<4x128xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %c1 = arith.constant 1 : i64
    %pair = arith.shrui %linear, %c1 : i64
    %x = arith.muli %pair, %i : i64
    %v = arith.sitofp %x : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4x128xf32>
}
