// RUN: initc-opt %s --init-fuse-elementwise | FileCheck %s

// init.pow fuses into the region as rng.md rule 7's pow_f: the f32 operands widened to f64, the
// atanh series (its first coefficient 1/21) and the exp series (1/13!) in f64, one rounding back
// to f32. Its bits are checked against the reference in kernel_reference_test; here only the
// structure.

init.seed 1

// CHECK-LABEL: init.param @rope : tensor<8xf32> {
// CHECK-NEXT:    %[[E:.+]] = init.elementwise {args = array<i64: {{-?[0-9]+}}>} : tensor<8xf32> {
// CHECK-NOT:       init.
// CHECK:           arith.extf %{{.+}} : f32 to f64
// CHECK-NOT:       init.
// CHECK:           arith.constant 0.047619047619047616 : f64
// CHECK-NOT:       init.
// CHECK:           arith.constant 1.6059043836821613E-10 : f64
// CHECK-NOT:       init.
// CHECK:           arith.truncf %{{.+}} : f64 to f32
// CHECK-NOT:       init.
// CHECK:           init.yield %{{.+}} : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    init.yield %[[E]] : tensor<8xf32>
init.param @rope : tensor<8xf32> {
  %t = init.uniform 0.0, 1.0 stream 0 : tensor<8xf32>
  %b = init.fill 10000.0 : tensor<8xf32>
  %0 = init.pow %b, %t : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}
