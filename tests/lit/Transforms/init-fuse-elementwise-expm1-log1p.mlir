// RUN: initc-opt %s --init-fuse-elementwise | FileCheck %s

// init.expm1 and init.log1p fuse into the region as rng.md rule 7's expm1_f and log1p_f, in f32
// also for an f64 parameter (the operand rounded to f32, the result widened back). Their bits
// are checked against the reference in kernel_reference_test; here only the structure: the
// expm1 rational's Q1 (bd088868), then log1p's Lg polynomial on expm1's result.

init.seed 1

// CHECK-LABEL: init.param @accurate_near_zero : tensor<8xf64> {
// CHECK-NEXT:    %[[E:.+]] = init.elementwise {args = array<i64: {{-?[0-9]+}}>} : tensor<8xf64> {
// CHECK-NOT:       init.
// CHECK:           %[[X:.+]] = arith.truncf %{{.+}} : f64 to f32
// CHECK-NOT:       init.
// CHECK:           arith.constant -0.0333332121 : f32
// CHECK-NOT:       init.
// CHECK:           %[[Y:.+]] = arith.extf %{{.+}} : f32 to f64
// CHECK-NEXT:      %[[Z:.+]] = arith.truncf %[[Y]] : f64 to f32
// CHECK-NOT:       init.
// CHECK:           arith.constant 0.666666627 : f32
// CHECK-NOT:       init.
// CHECK:           %[[R:.+]] = arith.extf %{{.+}} : f32 to f64
// CHECK-NEXT:      init.yield %[[R]] : f64
// CHECK-NEXT:    }
// CHECK-NEXT:    init.yield %[[E]] : tensor<8xf64>
init.param @accurate_near_zero : tensor<8xf64> {
  %x = init.uniform -1.0, 1.0 stream 0 : tensor<8xf64>
  %0 = init.expm1 %x : tensor<8xf64>
  %1 = init.log1p %0 : tensor<8xf64>
  init.yield %1 : tensor<8xf64>
}
