// RUN: initc compile %s --target-cpu x86-64-v3 --emit=mlir --stage=fused -o - | FileCheck %s --check-prefix=FUSED
// RUN: initc compile %s --target-cpu x86-64-v3 --emit=mlir --stage=partitioned -o - | FileCheck %s

// erfinv's tail branch (w >= 5: |v| > 0.9966) is taken by a few elements in a thousand when the
// bounds are wide. Its select is marked rarely false, and the vector loops compute the branch
// (a sqrt and a polynomial) only for iterations where some lane takes it; the scalar loops (the
// elements before the first whole block of a slice taken across rows) keep the select. Bounds at +-2 std rule the branch out when the recipe is expanded.

init.seed 1
init.param @wide : tensor<8x64xf32> {
  %0 = init.trunc_normal mean 0.0 std 0.02 bounds [-2.0, 2.0] stream 0 : tensor<8x64xf32>
  init.yield %0 : tensor<8x64xf32>
}
init.param @narrow : tensor<8x64xf32> {
  %0 = init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04] stream 0 : tensor<8x64xf32>
  init.yield %0 : tensor<8x64xf32>
}
init.param @sum : tensor<8x64xf32> {
  %0 = init.trunc_normal mean 0.0 std 0.02 bounds [-2.0, 2.0] stream 0 : tensor<8x64xf32>
  %1 = init.trunc_normal mean 0.0 std 0.02 bounds [-2.0, 2.0] stream 1 : tensor<8x64xf32>
  %2 = init.add %0, %1 : tensor<8x64xf32>
  init.yield %2 : tensor<8x64xf32>
}

// FUSED-LABEL: init.param @wide
// FUSED:         math.sqrt %{{.+}} : f32
// FUSED:         arith.select %{{.+}}, %{{.+}}, %{{.+}} {initc.rarely_false} : f32
// FUSED-LABEL: init.param @narrow
// FUSED-NOT:     math.sqrt
// FUSED-NOT:     initc.rarely_false
// FUSED:         init.yield

// Two vector loops (across rows and along rows), each: all lanes' conditions and-ed, one test,
// and in its else branch one test per vector, the tail only for a vector some lane of which
// takes it; one result per vector. A truncated normal is a function of its element's Philox
// word, so its vectors hold the words of two elements of each block (x1 x0, x3 x2): 2 groups
// of 8 blocks give 4 vectors of 16.
// CHECK-LABEL: func.func @initc_kernel_0(
// CHECK:         scf.for {{.+}} step %c16_i64 iter_args
// CHECK:           %[[ALL:.+]] = vector.reduction <and>, %{{.+}} : vector<16xi1> into i1
// CHECK-NEXT:      %{{.+}}:4 = scf.if %[[ALL]] -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK-NEXT:        scf.yield
// CHECK-NEXT:      } else {
// CHECK-NEXT:        %[[ONE:.+]] = vector.reduction <and>, %{{.+}} : vector<16xi1> into i1
// CHECK-NEXT:        %{{.+}} = scf.if %[[ONE]] -> (vector<16xf32>) {
// CHECK-NEXT:          scf.yield
// CHECK-NEXT:        } else {
// CHECK-NEXT:          math.sqrt %{{.+}} : vector<16xf32>
// CHECK:               arith.select %{{.+}}, %{{.+}}, %{{.+}} : vector<16xi1>, vector<16xf32>
// CHECK-NEXT:          scf.yield
// CHECK-COUNT-3:       math.sqrt %{{.+}} : vector<16xf32>
// CHECK-NOT:           math.sqrt
// CHECK:             scf.yield %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
// The elements after the last whole iteration: one more iteration, with the same tests and
// masked stores.
// CHECK:         scf.if
// CHECK:           vector.reduction <and>
// CHECK:           llvm.intr.masked.store
// CHECK:         scf.for {{.+}} step %c16_i64
// CHECK:           vector.reduction <and>
// CHECK:       func.func @initc_kernel_1(
// CHECK-NOT:     vector.reduction
// CHECK-NOT:     math.sqrt
// CHECK:         return
// Two such selects in one kernel: each test defers only its own branch. The sum is not a
// function of one word: 2 groups of 4 lanes of 8 blocks, 8 vectors of 8.
// CHECK-LABEL: func.func @initc_kernel_2(
// CHECK:         scf.for {{.+}} step %c16_i64 iter_args
// CHECK:           vector.reduction <and>
// CHECK-NEXT:      scf.if {{.+}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK:           } else {
// CHECK-COUNT-8:     math.sqrt %{{.+}} : vector<8xf32>
// CHECK:           vector.reduction <and>
// CHECK-NEXT:      scf.if {{.+}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK:           } else {
// CHECK-COUNT-8:     math.sqrt %{{.+}} : vector<8xf32>
// CHECK:           arith.addf %{{.+}}, %{{.+}} : vector<8xf32>
