// RUN: initc-opt %s '--init-partition=targets=x86-64-v4:2,x86-64-v3' | FileCheck %s
// RUN: not initc-opt %s '--init-partition=targets=x86-64-v3,x86-64-v3' 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not initc-opt %s '--init-partition=targets=x86-64-v4:9' 2>&1 | FileCheck %s --check-prefix=GROUPS

// With targets, every recipe gets one kernel per CPU, best first: the first keeps the kernel's
// name (the one parameters refer to), the others add '.CPU'. Each carries initc.target_cpu for
// the code generator, and takes GROUPS groups of 8 Philox blocks per iteration of its vector
// loop: one store of 32 elements per group.

// CHECK-LABEL: init.param @a : tensor<4x64xf32> kernel @initc_kernel_0{{$}}
// CHECK-LABEL: func.func @initc_kernel_0(
// CHECK-SAME:      attributes {initc.kernel, initc.target_cpu = "x86-64-v4"}
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c16_i64
// CHECK:             llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : vector<32xi32>, !llvm.ptr
// CHECK:             llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : vector<32xi32>, !llvm.ptr
// CHECK-NEXT:      }
// CHECK-LABEL: func.func @initc_kernel_0.x86_64_v3(
// CHECK-SAME:      attributes {initc.kernel, initc.target_cpu = "x86-64-v3"}
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c8_i64
// CHECK:             llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : vector<32xi32>, !llvm.ptr
// CHECK-NEXT:      }
// CHECK-NOT:   func.func

// TWICE: error: init-partition: target 'x86-64-v3' is listed twice
// GROUPS: error: init-partition: target 'x86-64-v4:9' is not CPU or CPU:GROUPS with GROUPS in 1..4

init.seed 0
init.param @a : tensor<4x64xf32> {
  %0 = init.elementwise : tensor<4x64xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %v = arith.sitofp %linear : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4x64xf32>
}
