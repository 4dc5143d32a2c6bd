// RUN: initc-opt %s --init-fuse-elementwise | FileCheck %s

// init.linspace (ir-spec/dialect.md): the index along its dim picks the half, n / 2 = 6 here;
// f32 computes each half's fused multiply-add as an exact f64 product and a sum rounded to odd
// (the bits are compared with torch's in python/tests/test_capture_hf.py).

// CHECK-LABEL: init.param @rates : tensor<2x12xf32> {
// CHECK-NEXT:    init.elementwise : tensor<2x12xf32> {
// CHECK-NEXT:    ^bb0(%{{[^:]+}}: i64, %{{[^:]+}}: i64, %[[K:[^:]+]]: i64):
// CHECK:           %[[UP:.+]] = arith.sitofp %[[K]] : i64 to f32
// CHECK:           %[[P:.+]] = arith.mulf %{{.+}}, %{{.+}} : f64
// CHECK:           arith.xori
// CHECK:           %[[FIRST:.+]] = arith.truncf %{{.+}} : f64 to f32
// CHECK:           %[[SECOND:.+]] = arith.truncf %{{.+}} : f64 to f32
// CHECK-NEXT:      %[[HALF:.+]] = arith.constant 6 : i64
// CHECK-NEXT:      %[[LOW:.+]] = arith.cmpi slt, %[[K]], %[[HALF]] : i64
// CHECK-NEXT:      %[[V:.+]] = arith.select %[[LOW]], %[[FIRST]], %[[SECOND]] : f32
// CHECK-NEXT:      init.yield %[[V]] : f32
init.param @rates : tensor<2x12xf32> {
  %0 = init.linspace dim 1 start 0.0 end 0.1 : tensor<2x12xf32>
  init.yield %0 : tensor<2x12xf32>
}

// 16-bit types round after every operation: no f64 inside.
// CHECK-LABEL: init.param @half_rates : tensor<12xbf16> {
// CHECK-NOT:       f64
// CHECK:           arith.cmpi slt, %{{.+}}, %{{.+}} : i64
// CHECK-NOT:       f64
// CHECK:           init.yield %{{.+}} : bf16
init.param @half_rates : tensor<12xbf16> {
  %0 = init.linspace dim 0 start 0.0 end 0.1 : tensor<12xbf16>
  init.yield %0 : tensor<12xbf16>
}

// One element: start.
// CHECK-LABEL: init.param @one : tensor<1xf32> {
// CHECK:           %[[S:.+]] = arith.constant 2.500000e-01 : f32
// CHECK-NEXT:      init.yield %[[S]] : f32
init.param @one : tensor<1xf32> {
  %0 = init.linspace dim 0 start 0.25 end 4.0 : tensor<1xf32>
  init.yield %0 : tensor<1xf32>
}
