// RUN: initc-opt %s --init-fuse-elementwise '--init-partition=targets=x86-64-v3' | FileCheck %s

// A result that is NaN is stored as its type's one NaN (ir-spec/rng.md rule 9): the kernels
// test the value they store and blend in 0x7fc00000 (f32), 0x7ff8000000000000 (f64) or, for
// f16, the same on the f32 value before its conversion; a bf16 value rounded by rule 8's
// integer form takes 0x7fc0 in the rounding's own NaN case instead of the quieted input. A
// sample its parameters prove never NaN, converted by one marked conversion or stored as it is
// (f64: widened), is not tested.

init.seed 5
init.param @f32 : tensor<64xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<64xf32>
  %l = init.log %x : tensor<64xf32>
  %s = init.sqrt %x : tensor<64xf32>
  %0 = init.add %l, %s : tensor<64xf32>
  init.yield %0 : tensor<64xf32>
}
init.param @f64 : tensor<64xf64> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<64xf64>
  %0 = init.sqrt %x : tensor<64xf64>
  init.yield %0 : tensor<64xf64>
}
init.param @f16 : tensor<64xf16> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<64xf16>
  %0 = init.sqrt %x : tensor<64xf16>
  init.yield %0 : tensor<64xf16>
}
init.param @bf16 : tensor<64xbf16> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<64xbf16>
  %0 = init.sqrt %x : tensor<64xbf16>
  init.yield %0 : tensor<64xbf16>
}
init.param @sample : tensor<64xbf16> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<64xbf16>
  init.yield %0 : tensor<64xbf16>
}
init.param @mask : tensor<64xi1> {
  %0 = init.index_mask dim 0 index 3 : tensor<64xi1>
  init.yield %0 : tensor<64xi1>
}
init.param @sample32 : tensor<64xf32> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<64xf32>
  init.yield %0 : tensor<64xf32>
}
init.param @sample64 : tensor<64xf64> {
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<64xf64>
  init.yield %0 : tensor<64xf64>
}

// CHECK-LABEL: func.func @initc_kernel_0(
// CHECK:         %[[NAN:.+]] = arith.constant dense<0x7FC00000> : vector<8xf32>
// CHECK:         arith.select %{{.+}}, %[[NAN]], %{{.+}} : vector<8xi1>, vector<8xf32>

// CHECK-LABEL: func.func @initc_kernel_1(
// CHECK:         arith.cmpf uno, %[[D:.+]], %[[D]] : vector<8xf64>
// CHECK:         arith.constant dense<0x7FF8000000000000> : vector<8xf64>

// CHECK-LABEL: func.func @initc_kernel_2(
// CHECK:         %[[ISNAN:.+]] = arith.cmpf uno, %[[H:.+]], %[[H]] : vector<8xf32>
// CHECK:         %[[C:.+]] = arith.select %[[ISNAN]], %{{.+}}, %[[H]] : vector<8xi1>, vector<8xf32>
// CHECK:         arith.truncf %[[C]] : vector<8xf32> to vector<8xf16>

// CHECK-LABEL: func.func @initc_kernel_3(
// CHECK:         arith.constant dense<32704> : vector<8xi32>
// CHECK-NOT:     arith.cmpf uno
// CHECK-LABEL: func.func @initc_kernel_4(
// CHECK-NOT:     arith.cmpf uno
// CHECK-NOT:     0x7FC00000
// CHECK-LABEL: func.func @initc_kernel_5(
// CHECK-NOT:     arith.cmpf
// CHECK:         return
// CHECK-LABEL: func.func @initc_kernel_6(
// CHECK-NOT:     arith.cmpf uno
// CHECK-NOT:     0x7FC00000
// CHECK:         return
// CHECK-LABEL: func.func @initc_kernel_7(
// CHECK-NOT:     arith.cmpf uno
// CHECK-NOT:     0x7FF8000000000000
// CHECK:         return
