//===- Passes.td - conversions of initc --------------------*- tablegen -*-===//
//
// The passes that lower init IR towards the machine: after them a module holds no init.param
// body, only kernel functions (ir-spec/lowering.md).
//
//===----------------------------------------------------------------------===//
#ifndef INITC_CONVERSION_PASSES_TD
#define INITC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def Partition : Pass<"init-partition", "mlir::ModuleOp"> {
  let summary = "turn each fused parameter into a native kernel over any rank's slice";
  let description = [{
    For every parameter whose body is one `init.elementwise`, creates a `func.func` kernel with
    the runtime's ABI (out, global shape, slice offset, slice shape, begin, end, args) that loops over
    the slice's local elements, maps each to its global index, and evaluates the region there.
    The parameter keeps its metadata and names its kernel; its body is dropped. Parameters whose
    regions are identical share one kernel, so the number of kernels grows with the number of
    distinct recipes, never with the number of ranks or bytes.

    Before:
    ```mlir
    init.param @w : tensor<8xf32> { %0 = init.elementwise ... init.yield %0 }
    ```
    After:
    ```mlir
    init.param @w : tensor<8xf32> kernel @initc_kernel_0 attributes {kernel_args = array<i64: 42>}
    func.func @initc_kernel_0(%out: !llvm.ptr, ..., %args: !llvm.ptr) { scf.for ... }
    ```
  }];
  let options = [
    ListOption<"targets", "targets", "std::string",
               "CPUs to build each kernel for, as CPU, CPU:GROUPS or CPU:GROUPSxBLOCKS (GROUPS "
               "groups of BLOCKS Philox blocks per iteration, BLOCKS 8 by default or 16 for "
               "512-bit vectors; more groups for CPUs with more vector registers; either shape "
               "then p: each iteration computes the next one's Philox rounds, software "
               "pipelining, where the value is not a function of one Philox word; "
               "CPU+avx512bf16: bf16 "
               "conversions marked initc.no_nan_or_subnormal are one instruction, and 16 blocks "
               "put their lanes in order around it). The first keeps the "
               "kernel's name, the others add '.CPU' (non-alphanumerics as '_'); each kernel "
               "carries initc.target_cpu. Empty: one kernel per recipe, one group">,
    ListOption<"bf16ConvertingCpus", "bf16-converting-cpus", "std::string",
               "CPUs of `targets` that convert f32 to bf16 in one instruction (x86's "
               "x86-64-v4+avx512bf16, znver4, sapphirerapids, native on one of them): their "
               "kernels round samples to bf16 by that instruction. The pass knows no CPU or "
               "architecture; the compile pipeline fills this from the target architecture's "
               "tables (target::convertsBF16)">
  ];
  // math: the normal matrix of an init.orthogonal parameter (Box-Muller's sqrt); vector: the
  // explicitly vectorized block loop.
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::scf::SCFDialect",
                           "mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::LLVM::LLVMDialect", "mlir::vector::VectorDialect"];
}

#endif // INITC_CONVERSION_PASSES_TD
