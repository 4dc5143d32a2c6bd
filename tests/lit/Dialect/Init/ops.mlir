// RUN: initc-opt %s | initc-opt | FileCheck %s
// RUN: initc-opt %s --mlir-print-op-generic | initc-opt | FileCheck %s

// Round trip of every op and attribute of the init dialect, in the custom and the generic form.

// CHECK: module attributes {init.hf_config = "{\22model_type\22: \22llama\22,\0A \22a\22: [1]}\0A", init.model = "tiny"} {
// CHECK-NEXT: init.seed 1234
module attributes {init.model = "tiny", init.hf_config = "{\22model_type\22: \22llama\22,\0A \22a\22: [1]}\0A"} {
init.seed 1234

// CHECK: mesh.mesh @mesh(shape = 2x2) {init.axis_names = ["dp", "tp"]}
mesh.mesh @mesh(shape = 2x2) {init.axis_names = ["dp", "tp"]}

// CHECK-LABEL: init.param @model.embed_tokens.weight : tensor<64x32xbf16> axes ["vocab", "embed"] sharding #mesh.shard<@mesh, {{\[\[}}1], [0]]> {
// CHECK-NEXT:    %[[W:.+]] = init.normal mean 0.000000e+00 std 2.000000e-02 stream 0 : tensor<64x32xbf16>
// CHECK-NEXT:    init.yield %[[W]] : tensor<64x32xbf16>
// CHECK-NEXT:  }
init.param @"model.embed_tokens.weight" : tensor<64x32xbf16>
    axes ["vocab", "embed"] sharding #mesh.shard<@mesh, [[1], [0]]> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<64x32xbf16>
  init.yield %0 : tensor<64x32xbf16>
}

// CHECK-LABEL: init.param @lm_head.weight : tensor<64x32xbf16> tied_to @model.embed_tokens.weight{{$}}
init.param @"lm_head.weight" : tensor<64x32xbf16> tied_to @"model.embed_tokens.weight"

// CHECK-LABEL: init.param @two_axes_one_dim : tensor<8x4xf32> sharding #mesh.shard<@mesh, {{\[\[}}0, 1]]> {
init.param @two_axes_one_dim : tensor<8x4xf32> sharding #mesh.shard<@mesh, [[0, 1]]> {
  %0 = init.fill 0.0 : tensor<8x4xf32>
  init.yield %0 : tensor<8x4xf32>
}

// CHECK-LABEL: init.param @random_sources : tensor<16x8xf32> {
// CHECK:         %[[U:.+]] = init.uniform -1.250000e-01, 1.250000e-01 stream 0 : tensor<16x8xf32>
// CHECK:         %[[N:.+]] = init.normal mean 1.000000e+00 std 5.000000e-01 stream 1 : tensor<16x8xf32>
// CHECK:         %[[T:.+]] = init.trunc_normal mean 0.000000e+00 std 2.000000e-02 bounds[-4.000000e-02, 4.000000e-02] stream 2 : tensor<16x8xf32>
// CHECK:         %[[V:.+]] = init.variance_scaling scale 2.000000e+00 fan_in normal stream 3 : tensor<16x8xf32>
// CHECK:         %[[VO:.+]] = init.variance_scaling scale 1.000000e+00 fan_out uniform stream 4 : tensor<16x8xf32>
// CHECK:         %[[VA:.+]] = init.variance_scaling scale 1.000000e+00 fan_avg uniform stream 5 : tensor<16x8xf32>
// CHECK:         %[[Q:.+]] = init.orthogonal gain 1.000000e+00 stream 6 strategy redundant : tensor<16x8xf32>
// CHECK:         %[[S0:.+]] = init.add %[[U]], %[[N]] : tensor<16x8xf32>
// CHECK:         %[[S1:.+]] = init.sub %[[S0]], %[[T]] : tensor<16x8xf32>
// CHECK:         %[[S2:.+]] = init.mul %[[S1]], %[[V]] : tensor<16x8xf32>
// CHECK:         %[[S3:.+]] = init.div %[[S2]], %[[VO]] : tensor<16x8xf32>
// CHECK:         %[[S4:.+]] = init.add %[[S3]], %[[VA]] : tensor<16x8xf32>
// CHECK:         %[[S5:.+]] = init.add %[[S4]], %[[Q]] : tensor<16x8xf32>
// CHECK:         init.yield %[[S5]] : tensor<16x8xf32>
init.param @random_sources : tensor<16x8xf32> {
  %u = init.uniform -0.125, 0.125 stream 0 : tensor<16x8xf32>
  %n = init.normal mean 1.0 std 0.5 stream 1 : tensor<16x8xf32>
  %t = init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04] stream 2 : tensor<16x8xf32>
  %v = init.variance_scaling scale 2.0 fan_in normal stream 3 : tensor<16x8xf32>
  %vo = init.variance_scaling scale 1.0 fan_out uniform stream 4 : tensor<16x8xf32>
  %va = init.variance_scaling scale 1.0 fan_avg uniform stream 5 : tensor<16x8xf32>
  %q = init.orthogonal gain 1.0 stream 6 strategy redundant : tensor<16x8xf32>
  %0 = init.add %u, %n : tensor<16x8xf32>
  %1 = init.sub %0, %t : tensor<16x8xf32>
  %2 = init.mul %1, %v : tensor<16x8xf32>
  %3 = init.div %2, %vo : tensor<16x8xf32>
  %4 = init.add %3, %va : tensor<16x8xf32>
  %5 = init.add %4, %q : tensor<16x8xf32>
  init.yield %5 : tensor<16x8xf32>
}

// CHECK-LABEL: init.param @unary_ops : tensor<64xf16> {
// CHECK:         %[[X:.+]] = init.uniform -5.000000e-01, 5.000000e-01 stream 0 : tensor<64xf16>
// CHECK:         %[[A:.+]] = init.erfinv %[[X]] : tensor<64xf16>
// CHECK:         %[[B:.+]] = init.exp %[[A]] : tensor<64xf16>
// CHECK:         %[[C:.+]] = init.log %[[B]] : tensor<64xf16>
// CHECK:         %[[D:.+]] = init.sqrt %[[C]] : tensor<64xf16>
// CHECK:         %[[E:.+]] = init.sign %[[D]] : tensor<64xf16>
// CHECK:         %[[F:.+]] = init.clamp %[[E]] min -2.000000e+00 max 2.000000e+00 : tensor<64xf16>
// CHECK:         init.yield %[[F]] : tensor<64xf16>
init.param @unary_ops : tensor<64xf16> {
  %x = init.uniform -0.5, 0.5 stream 0 : tensor<64xf16>
  %0 = init.erfinv %x : tensor<64xf16>
  %1 = init.exp %0 : tensor<64xf16>
  %2 = init.log %1 : tensor<64xf16>
  %3 = init.sqrt %2 : tensor<64xf16>
  %4 = init.sign %3 : tensor<64xf16>
  %5 = init.clamp %4 min -2.0 max 2.0 : tensor<64xf16>
  init.yield %5 : tensor<64xf16>
}

// CHECK-LABEL: init.param @rope_inverse_frequencies : tensor<32xf32> {
// CHECK:         %[[T:.+]] = init.iota dim 0 start 0.000000e+00 step 1.562500e-02 : tensor<32xf32>
// CHECK:         %[[B:.+]] = init.fill 1.000000e+04 : tensor<32xf32>
// CHECK:         %[[P:.+]] = init.pow %[[B]], %[[T]] : tensor<32xf32>
// CHECK:         init.yield %[[P]] : tensor<32xf32>
init.param @rope_inverse_frequencies : tensor<32xf32> {
  %t = init.iota dim 0 start 0.0 step 0.015625 : tensor<32xf32>
  %b = init.fill 10000.0 : tensor<32xf32>
  %0 = init.pow %b, %t : tensor<32xf32>
  init.yield %0 : tensor<32xf32>
}

// CHECK-LABEL: init.param @accurate_near_zero : tensor<64xf64> {
// CHECK:         %[[X:.+]] = init.uniform -5.000000e-01, 5.000000e-01 stream 0 : tensor<64xf64>
// CHECK:         %[[A:.+]] = init.expm1 %[[X]] : tensor<64xf64>
// CHECK:         %[[B:.+]] = init.log1p %[[A]] : tensor<64xf64>
// CHECK:         init.yield %[[B]] : tensor<64xf64>
init.param @accurate_near_zero : tensor<64xf64> {
  %x = init.uniform -0.5, 0.5 stream 0 : tensor<64xf64>
  %0 = init.expm1 %x : tensor<64xf64>
  %1 = init.log1p %0 : tensor<64xf64>
  init.yield %1 : tensor<64xf64>
}

// CHECK-LABEL: init.param @model.embed_tokens.padded : tensor<32x8xf64> axes ["vocab", "embed"] {
// CHECK:         %[[PAD:.+]] = init.index_mask dim 0 index 1 : tensor<32x8xi1>
// CHECK:         %[[Z:.+]] = init.fill 0.000000e+00 : tensor<32x8xf64>
// CHECK:         %[[W:.+]] = init.normal mean 0.000000e+00 std 1.000000e+00 stream 0 : tensor<32x8xf64>
// CHECK:         %[[SEL:.+]] = init.select %[[PAD]], %[[Z]], %[[W]] : tensor<32x8xi1>, tensor<32x8xf64>
// CHECK:         init.yield %[[SEL]] : tensor<32x8xf64>
init.param @"model.embed_tokens.padded" : tensor<32x8xf64> axes ["vocab", "embed"] {
  %pad = init.index_mask dim 0 index 1 : tensor<32x8xi1>
  %zeros = init.fill 0.0 : tensor<32x8xf64>
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<32x8xf64>
  %0 = init.select %pad, %zeros, %w : tensor<32x8xi1>, tensor<32x8xf64>
  init.yield %0 : tensor<32x8xf64>
}

// CHECK-LABEL: init.param @h.0.attn.bias : tensor<1x1x16x16xi1> buffer nonpersistent {
// CHECK:         %[[M:.+]] = init.tril diagonal 0 : tensor<1x1x16x16xi1>
// CHECK:         init.yield %[[M]] : tensor<1x1x16x16xi1>
init.param @"h.0.attn.bias" : tensor<1x1x16x16xi1> buffer nonpersistent {
  %0 = init.tril diagonal 0 : tensor<1x1x16x16xi1>
  init.yield %0 : tensor<1x1x16x16xi1>
}

// CHECK-LABEL: init.param @upper : tensor<4x6xf32> buffer {
// CHECK:         %[[M:.+]] = init.triu diagonal -1 : tensor<4x6xf32>
init.param @upper : tensor<4x6xf32> buffer {
  %0 = init.triu diagonal -1 : tensor<4x6xf32>
  init.yield %0 : tensor<4x6xf32>
}

// CHECK-LABEL: init.param @identity : tensor<4x6xbf16> {
// CHECK:         %[[I:.+]] = init.eye : tensor<4x6xbf16>
init.param @identity : tensor<4x6xbf16> {
  %0 = init.eye : tensor<4x6xbf16>
  init.yield %0 : tensor<4x6xbf16>
}

// CHECK-LABEL: init.param @position_ids : tensor<1x16xi64> buffer nonpersistent {
// CHECK:         %[[P:.+]] = init.iota dim 1 start 0.000000e+00 step 1.000000e+00 : tensor<1x16xi64>
init.param @position_ids : tensor<1x16xi64> buffer nonpersistent {
  %0 = init.iota dim 1 start 0.0 step 1.0 : tensor<1x16xi64>
  init.yield %0 : tensor<1x16xi64>
}

// CHECK-LABEL: init.param @drop_path_rates : tensor<2x12xbf16> buffer nonpersistent {
// CHECK:         %[[L:.+]] = init.linspace dim 1 start 0.000000e+00 end 1.000000e-01 : tensor<2x12xbf16>
init.param @drop_path_rates : tensor<2x12xbf16> buffer nonpersistent {
  %0 = init.linspace dim 1 start 0.0 end 0.1 : tensor<2x12xbf16>
  init.yield %0 : tensor<2x12xbf16>
}

// CHECK-LABEL: init.param @rotary_emb.inv_freq : tensor<8xf32> buffer nonpersistent {
// CHECK:         %[[F:.+]] = init.rope_inv_freq theta 1.000000e+04 head_dim 16 : tensor<8xf32>
init.param @"rotary_emb.inv_freq" : tensor<8xf32> buffer nonpersistent {
  %0 = init.rope_inv_freq theta 10000.0 head_dim 16 : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}

// CHECK-LABEL: init.param @model.norm.weight : tensor<32xbf16> {
// CHECK:         %[[L:.+]] = init.load "base.safetensors"["model.norm.weight"] : tensor<32xbf16>
// CHECK:         %[[C:.+]] = init.cast %[[L]] : tensor<32xbf16> to tensor<32xf32>
// CHECK:         %[[B:.+]] = init.cast %[[C]] : tensor<32xf32> to tensor<32xbf16>
// CHECK:         init.yield %[[B]] : tensor<32xbf16>
init.param @"model.norm.weight" : tensor<32xbf16> {
  %0 = init.load "base.safetensors" ["model.norm.weight"] : tensor<32xbf16>
  %1 = init.cast %0 : tensor<32xbf16> to tensor<32xf32>
  %2 = init.cast %1 : tensor<32xf32> to tensor<32xbf16>
  init.yield %2 : tensor<32xbf16>
}

// CHECK-LABEL: init.param @scalar : tensor<f32> {
// CHECK:         %[[S:.+]] = init.fill 1.000000e+00 : tensor<f32>
init.param @scalar : tensor<f32> {
  %0 = init.fill 1.0 : tensor<f32>
  init.yield %0 : tensor<f32>
}

// CHECK-LABEL: init.param @fused : tensor<4x8xf32> {
// CHECK:         %[[E:.+]] = init.elementwise : tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[LIN:.+]]: i64, %[[I:.+]]: i64, %[[J:.+]]: i64):
// CHECK-NEXT:      %[[V:.+]] = arith.sitofp %[[LIN]] : i64 to f32
// CHECK-NEXT:      init.yield %[[V]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    init.yield %[[E]] : tensor<4x8xf32>
init.param @fused : tensor<4x8xf32> {
  %0 = init.elementwise : tensor<4x8xf32> {
  ^bb0(%linear: i64, %i: i64, %j: i64):
    %v = arith.sitofp %linear : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4x8xf32>
}

// CHECK-LABEL: init.param @keyed : tensor<8xf32> {
// CHECK:         %[[E:.+]] = init.elementwise {args = array<i64: -7, 42, -4611686018427387905>} : tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[LIN:.+]]: i64, %[[I:.+]]: i64, %[[K0:.+]]: i64, %[[K1:.+]]: i64, %[[K2:.+]]: i64):
init.param @keyed : tensor<8xf32> {
  %0 = init.elementwise {args = array<i64: -7, 42, -4611686018427387905>} : tensor<8xf32> {
  ^bb0(%linear: i64, %i: i64, %key0: i64, %key1: i64, %key2: i64):
    %x0 = arith.xori %key0, %key1 : i64
    %x = arith.xori %x0, %key2 : i64
    %v = arith.sitofp %x : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<8xf32>
}

// CHECK-LABEL: init.param @lowered : tensor<4x8xf32> axes ["mlp", "embed"] kernel @initc_kernel_0{{$}}
// CHECK-LABEL: init.param @lowered_with_keys : tensor<4x8xf32> kernel @initc_kernel_0 attributes {kernel_args = array<i64: 7, -1>}{{$}}
init.param @lowered : tensor<4x8xf32> axes ["mlp", "embed"] kernel @initc_kernel_0
init.param @lowered_with_keys : tensor<4x8xf32> kernel @initc_kernel_0 attributes {kernel_args = array<i64: 7, -1>}
func.func @initc_kernel_0(%out: !llvm.ptr, %shape: !llvm.ptr, %offset: !llvm.ptr, %local: !llvm.ptr,
                          %begin: i64, %end: i64, %args: !llvm.ptr) attributes {initc.kernel} {
  return
}
}

// f64 tensors order and compare parameters in f64: bounds equal in f32 and a std that is 0 in f32
// are fine (the samples, made in f32, are then constant); an infinite f32 parameter is not.
// CHECK-LABEL: init.param @f64_only : tensor<4xf64> {
// CHECK:         init.uniform 1.000000e+00, 1.0000000099999999 stream 0 : tensor<4xf64>
// CHECK:         init.normal mean 0.000000e+00 std 1.000000e-50 stream 1 : tensor<4xf64>
init.param @f64_only : tensor<4xf64> {
  %0 = init.uniform 1.0, 1.00000001 stream 0 : tensor<4xf64>
  %1 = init.normal mean 0.0 std 1.0e-50 stream 1 : tensor<4xf64>
  %2 = init.add %0, %1 : tensor<4xf64>
  init.yield %2 : tensor<4xf64>
}
