// RUN: initc-opt %s --init-fuse-elementwise '--init-partition=targets=x86-64-v3:2p' | FileCheck %s

// A `p` target's main loop is software-pipelined where the value is not a function of one
// Philox word (Box-Muller): the block stage (what the four lanes of a block share and what
// depends on the block: the Philox rounds) of the first iteration runs before the loop, and each
// iteration runs the next one's beside its own float transforms, interleaved op by op. What the
// transforms read of the block stage goes through stack slots (volatile, one per value and
// group), loaded where first read and stored at the iteration's end, after every load. Rows
// with no whole iteration skip the block stage.

init.seed 3
init.param @n : tensor<4x256xf32> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<4x256xf32>
  init.yield %0 : tensor<4x256xf32>
}
init.param @u : tensor<4x256xf32> {
  %0 = init.uniform -0.1, 0.1 stream 0 : tensor<4x256xf32>
  init.yield %0 : tensor<4x256xf32>
}

// Box-Muller reads the four words of each block: 4 slots per group, 2 groups.
// CHECK-LABEL: func.func @initc_kernel_0(
// CHECK-COUNT-8: llvm.alloca %{{.+}} x vector<8xi32> {alignment = 32 : i64}
// The row loop's whole iterations, if any: the first one's block stage, then the loop.
// CHECK:         scf.if
// CHECK:           arith.muli %{{.+}} : vector<8xi64>
// CHECK-COUNT-8:   llvm.store volatile %{{.+}} : vector<8xi32>, !llvm.ptr
// CHECK-NEXT:      scf.for %{{.+}} step %c16_i64
// Each value loaded once; the next iteration's rounds among the transforms (a multiply after
// the first float op); the elements stored, then the next iteration's values.
// CHECK-NOT:         llvm.store volatile
// CHECK-COUNT-8:     llvm.load volatile %{{.+}} : !llvm.ptr -> vector<8xi32>
// CHECK-NOT:         llvm.load volatile
// CHECK:             arith.mulf %{{.+}} : vector<8xf32>
// CHECK:             arith.muli %{{.+}} : vector<8xi64>
// CHECK:             math.sqrt
// CHECK-NOT:         llvm.load volatile
// CHECK:             llvm.store %{{.+}} : vector<32xi32>, !llvm.ptr
// CHECK-NOT:         llvm.store volatile
// CHECK:             llvm.store %{{.+}} : vector<32xi32>, !llvm.ptr
// CHECK-NEXT:        llvm.store volatile
// CHECK-COUNT-7:     llvm.store volatile %{{.+}} : vector<8xi32>, !llvm.ptr
// CHECK-NEXT:      }
// CHECK-LABEL: func.func @initc_kernel_1(
// Uniform is a function of its Philox word: its loop is not pipelined.
// CHECK-NOT:     volatile
// CHECK:         return
