// Each fused parameter becomes a native kernel with the runtime's ABI
// (out, global shape, slice offset, slice shape, begin, end); the parameter keeps its metadata
// and names the kernel. Identical regions share one kernel.

init.seed 0
init.param @a : tensor<4x8xf32> axes ["mlp", "embed"] {
  %0 = init.elementwise : tensor<4x8xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %v = arith.sitofp %linear : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4x8xf32>
}
init.param @b : tensor<4x8xf32> {
  %0 = init.elementwise : tensor<4x8xf32> {
  ^bb0(%l: i64, %r: i64, %c: i64):
    %v = arith.sitofp %l : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4x8xf32>
}
init.param @c : tensor<4x8xbf16> {
  %0 = init.elementwise : tensor<4x8xbf16> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %v = arith.constant 1.0 : bf16
    init.yield %v : bf16
  }
  init.yield %0 : tensor<4x8xbf16>
}
