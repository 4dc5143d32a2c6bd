// The fused IR, Philox keys included (most are below -2^62), parses back and partitions; so
// does erfinv's select marked initc.rarely_false, which the vector loop still takes lazily.
// RUN: initc-opt %s --init-fuse-elementwise | initc-opt --init-partition | FileCheck %s

// CHECK: init.param @a : tensor<5x3xf32> kernel @[[K:initc_kernel_[0-9]+]] attributes {kernel_args = array<i64: [[KEYA:-?[0-9]+]]>}
// CHECK: init.param @b : tensor<5x3xf32> kernel @[[K]] attributes {kernel_args = array<i64: [[KEYB:-?[0-9]+]]>}
// CHECK: init.param @w : tensor<8x64xf32> kernel @[[W:initc_kernel_[0-9]+]]
// CHECK: func.func @[[K]](
// CHECK: func.func @[[W]](
// CHECK:   vector.reduction <and>
init.seed 123456789
init.param @a : tensor<5x3xf32> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<5x3xf32>
  init.yield %0 : tensor<5x3xf32>
}
init.param @b : tensor<5x3xf32> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<5x3xf32>
  init.yield %0 : tensor<5x3xf32>
}
init.param @w : tensor<8x64xf32> {
  %0 = init.trunc_normal mean 0.0 std 0.02 bounds [-2.0, 2.0] stream 0 : tensor<8x64xf32>
  init.yield %0 : tensor<8x64xf32>
}
