// RUN: initc-opt %s --init-fuse-elementwise --split-input-file --verify-diagnostics | FileCheck %s

// A chain of elementwise ops becomes one init.elementwise whose region computes one element
// from its global index and the parameter's Philox key (a trailing argument, its value in
// `args`); no intermediate tensor op is left. The arith inside is the RNG
// contract's (ir-spec/rng.md), tested bit for bit elsewhere: here only the structure.

init.seed 42

// CHECK-LABEL: init.param @chain : tensor<8x4xf32> {
// CHECK-NEXT:    %[[E:.+]] = init.elementwise {args = array<i64: {{-?[0-9]+}}>} : tensor<8x4xf32> {
// CHECK-NEXT:    ^bb0(%[[LIN:[^:]+]]: i64, %[[I:[^:]+]]: i64, %[[J:[^:]+]]: i64, %[[KEY:[^:]+]]: i64):
// CHECK-NOT:       init.
// CHECK:           arith.xori %{{.+}}, %[[KEY]] : i64
// CHECK-NOT:       init.
// CHECK:           arith.mulf
// CHECK-NOT:       init.
// CHECK:           arith.addf
// CHECK-NOT:       init.
// CHECK:           init.yield %{{.+}} : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    init.yield %[[E]] : tensor<8x4xf32>
// CHECK-NEXT:  }
init.param @chain : tensor<8x4xf32> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<8x4xf32>
  %1 = init.fill 2.0 : tensor<8x4xf32>
  %2 = init.mul %0, %1 : tensor<8x4xf32>
  %3 = init.fill 0.5 : tensor<8x4xf32>
  %4 = init.add %2, %3 : tensor<8x4xf32>
  init.yield %4 : tensor<8x4xf32>
}

// -----

init.seed 42

// A 16-bit parameter: computed in f32, the region yields the rounded bf16.
// CHECK-LABEL: init.param @padded_embedding : tensor<16x4xbf16> {
// CHECK-NEXT:    %[[E:.+]] = init.elementwise {args = array<i64: {{-?[0-9]+}}>} : tensor<16x4xbf16> {
// CHECK-NEXT:    ^bb0(%{{[^:]+}}: i64, %[[ROW:[^:]+]]: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64):
// CHECK-NOT:       init.
// CHECK:           arith.cmpi eq, %[[ROW]]
// CHECK-NOT:       init.
// CHECK:           arith.bitcast %{{.+}} : i16 to bf16
// CHECK-NOT:       init.
// CHECK:           init.yield %{{.+}} : bf16
// CHECK-NEXT:    }
// CHECK-NEXT:    init.yield %[[E]] : tensor<16x4xbf16>
// CHECK-NEXT:  }
init.param @padded_embedding : tensor<16x4xbf16> {
  %pad = init.index_mask dim 0 index 1 : tensor<16x4xi1>
  %z = init.fill 0.0 : tensor<16x4xbf16>
  %w = init.normal mean 0.0 std 0.02 stream 0 : tensor<16x4xbf16>
  %0 = init.select %pad, %z, %w : tensor<16x4xi1>, tensor<16x4xbf16>
  init.yield %0 : tensor<16x4xbf16>
}

// -----

// An f16 parameter yields the conversion itself; no unused f32 widening of it is left behind.
// CHECK-LABEL: init.param @half
// CHECK:         init.elementwise
// CHECK-NOT:       arith.extf
// CHECK:           %[[H:.+]] = arith.truncf %{{.+}} : f32 to f16
// CHECK-NEXT:      init.yield %[[H]] : f16
init.seed 1
init.param @half : tensor<8xf16> {
  %0 = init.uniform -0.1, 0.1 stream 0 : tensor<8xf16>
  init.yield %0 : tensor<8xf16>
}

// -----

// Masks and integers fuse too; a scalar region has one argument, the linear index.
// CHECK-LABEL: init.param @causal_mask
// Without random sources there are no keys and no `args`.
// CHECK:         init.elementwise : tensor<1x1x8x8xi1> {
// CHECK-NEXT:    ^bb0(%{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64):
// CHECK:           init.yield %{{.+}} : i1
// CHECK-LABEL: init.param @scalar
// CHECK:         init.elementwise : tensor<f32> {
// CHECK-NEXT:    ^bb0(%{{[^:]+}}: i64):
// CHECK:           init.yield %{{.+}} : f32
init.param @causal_mask : tensor<1x1x8x8xi1> buffer nonpersistent {
  %0 = init.tril diagonal 0 : tensor<1x1x8x8xi1>
  init.yield %0 : tensor<1x1x8x8xi1>
}
init.param @scalar : tensor<f32> {
  %0 = init.fill 1.0 : tensor<f32>
  init.yield %0 : tensor<f32>
}

// The RoPE frequencies are a constant table indexed by the element's position.
// CHECK-LABEL: init.param @rotary_emb.inv_freq
// CHECK:         init.elementwise : tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%{{[^:]+}}: i64, %[[P:[^:]+]]: i64):
// CHECK:           %[[T:.+]] = arith.constant dense<[1.000000e+00, {{.+}}]> : vector<8xf32>
// CHECK-NEXT:      %[[F:.+]] = vector.extractelement %[[T]][%[[P]] : i64] : vector<8xf32>
// CHECK-NEXT:      init.yield %[[F]] : f32
init.param @"rotary_emb.inv_freq" : tensor<8xf32> buffer nonpersistent {
  %0 = init.rope_inv_freq theta 10000.0 head_dim 16 : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}

// -----

// Non-elementwise values are left alone, and so are tied, lowered and already fused ones.
// CHECK-LABEL: init.param @orthogonal
// CHECK-NEXT:    %[[Q:.+]] = init.orthogonal
// CHECK-NEXT:    init.yield %[[Q]]
// CHECK-LABEL: init.param @loaded
// CHECK-NEXT:    %[[L:.+]] = init.load
// CHECK-NEXT:    init.yield %[[L]]
// CHECK-LABEL: init.param @tied : tensor<8x8xf32> tied_to @orthogonal{{$}}
init.param @orthogonal : tensor<8x8xf32> {
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<8x8xf32>
  init.yield %0 : tensor<8x8xf32>
}
init.param @loaded : tensor<8xbf16> {
  %0 = init.load "base.safetensors" ["norm.weight"] : tensor<8xbf16>
  init.yield %0 : tensor<8xbf16>
}
init.param @tied : tensor<8x8xf32> tied_to @orthogonal

// -----

init.param @orthogonal_times_two : tensor<8x8xf32> {
  // expected-error @+1 {{cannot fuse: 'init.orthogonal' is not elementwise and feeds other ops; compute it alone}}
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<8x8xf32>
  %1 = init.fill 2.0 : tensor<8x8xf32>
  %2 = init.mul %0, %1 : tensor<8x8xf32>
  init.yield %2 : tensor<8x8xf32>
}

// -----

init.param @loaded_times_two : tensor<8xf32> {
  // expected-error @+1 {{cannot fuse: 'init.load' reads its values, it does not compute them; it can only be the value its parameter yields}}
  %0 = init.load "base.safetensors" ["w"] : tensor<8xf32>
  %1 = init.fill 2.0 : tensor<8xf32>
  %2 = init.mul %0, %1 : tensor<8xf32>
  init.yield %2 : tensor<8xf32>
}

// -----

// The op that cannot be fused is named at its line, not the op that uses it.
init.param @constant_plus_itself : tensor<4x4xf32> {
  // expected-error @+1 {{cannot fuse: 'arith.constant' is not an init op; compute the value with init ops (init.fill for a constant, init.elementwise for a formula)}}
  %c = arith.constant dense<1.0> : tensor<4x4xf32>
  %r = init.add %c, %c : tensor<4x4xf32>
  init.yield %r : tensor<4x4xf32>
}

// -----

init.param @elementwise_plus_one : tensor<4xf32> {
  // expected-error @+1 {{cannot fuse: an 'init.elementwise' can only be the value its parameter yields; write the ops that use it inside its region}}
  %e = init.elementwise : tensor<4xf32> {
  ^bb0(%l: i64, %i: i64):
    %f = arith.sitofp %l : i64 to f32
    init.yield %f : f32
  }
  %one = init.fill 1.0 : tensor<4xf32>
  %r = init.add %e, %one : tensor<4xf32>
  init.yield %r : tensor<4xf32>
}

// -----

init.param @source : tensor<4xf32> {
  %e = init.elementwise : tensor<4xf32> {
  ^bb0(%l: i64, %i: i64):
    %f = arith.sitofp %l : i64 to f32
    init.yield %f : f32
  }
  init.yield %e : tensor<4xf32>
}
init.param @like_plus_one : tensor<4xf32> {
  // expected-error @+1 {{cannot fuse: an 'init.elementwise_like' can only be the value its parameter yields; write this parameter's own 'init.elementwise' with the ops that use it inside its region}}
  %e = init.elementwise_like @source : tensor<4xf32>
  %one = init.fill 1.0 : tensor<4xf32>
  %r = init.add %e, %one : tensor<4xf32>
  init.yield %r : tensor<4xf32>
}

// -----

init.seed 42

// A sample that is never NaN nor subnormal (ir-spec/rng.md, rule 8) is a marked conversion,
// which CPUs with bf16 conversion instructions take as one, with the largest magnitude of the
// samples (uniform's is its range's end nearest 0.1), which lets CPUs without them round by a
// split.
// CHECK-LABEL: init.param @sample_bf16 : tensor<8x4xbf16> {
// CHECK-NOT:       arith.cmpi ugt
// CHECK:           %[[C:.+]] = arith.truncf %{{.+}} {initc.magnitude_bound = 0.0999999865 : f32, initc.no_nan_or_subnormal} : f32 to bf16
// CHECK:           init.yield %[[C]] : bf16
init.param @sample_bf16 : tensor<8x4xbf16> {
  %0 = init.uniform -0.1, 0.1 stream 0 : tensor<8x4xbf16>
  init.yield %0 : tensor<8x4xbf16>
}

// Rounding to bf16 leaves out its NaN case for a sample that is never NaN but may be subnormal
// (finite bounds, tiny ones), and keeps it for a value that may be NaN (a quotient: 0/0).
// CHECK-LABEL: init.param @tiny_bf16 : tensor<8x4xbf16> {
// CHECK-NOT:       arith.cmpi ugt
// CHECK-NOT:       arith.truncf
// CHECK:           arith.bitcast %{{.+}} : i16 to bf16
// CHECK:           init.yield %{{.+}} : bf16
init.param @tiny_bf16 : tensor<8x4xbf16> {
  %0 = init.uniform -1.0e-38, 1.0e-38 stream 0 : tensor<8x4xbf16>
  init.yield %0 : tensor<8x4xbf16>
}

// CHECK-LABEL: init.param @quotient_bf16 : tensor<8x4xbf16> {
// CHECK:           arith.divf
// CHECK:           arith.cmpi ugt, %{{.+}}, %{{.+}} : i32
// CHECK:           init.yield %{{.+}} : bf16
init.param @quotient_bf16 : tensor<8x4xbf16> {
  %0 = init.uniform -0.1, 0.1 stream 0 : tensor<8x4xbf16>
  %1 = init.uniform -0.1, 0.1 stream 1 : tensor<8x4xbf16>
  %2 = init.div %0, %1 : tensor<8x4xbf16>
  init.yield %2 : tensor<8x4xbf16>
}

// -----

// Parameters of one recipe keep one region: the first is fused, the others compute its region
// with their own keys. A recipe that differs in a constant, a stream or the shape is its own.
// CHECK-LABEL: init.param @expert_0 : tensor<8x4xbf16> {
// CHECK-NEXT:    %[[E:.+]] = init.elementwise {args = array<i64: [[K0:-?[0-9]+]], [[K0B:-?[0-9]+]]>} : tensor<8x4xbf16> {
// CHECK:         init.yield %[[E]] : tensor<8x4xbf16>
// CHECK-LABEL: init.param @expert_1 : tensor<8x4xbf16> {
// CHECK-NEXT:    %[[L:.+]] = init.elementwise_like @expert_0 {args = array<i64: [[K1:-?[0-9]+]], [[K1B:-?[0-9]+]]>} : tensor<8x4xbf16>
// CHECK-NEXT:    init.yield %[[L]] : tensor<8x4xbf16>
// CHECK-NEXT:  }
// CHECK-LABEL: init.param @other_std : tensor<8x4xbf16> {
// CHECK-NEXT:    init.elementwise {args
// CHECK-LABEL: init.param @other_stream : tensor<8x4xbf16> {
// CHECK-NEXT:    init.elementwise {args
// CHECK-LABEL: init.param @other_shape : tensor<4x8xbf16> {
// CHECK-NEXT:    init.elementwise {args
// CHECK-LABEL: init.param @expert_2 : tensor<8x4xbf16> {
// CHECK-NEXT:    init.elementwise_like @expert_0 {args = array<i64: [[K2:-?[0-9]+]], [[K2B:-?[0-9]+]]>}
init.seed 7
init.param @expert_0 : tensor<8x4xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<8x4xbf16>
  %1 = init.uniform -0.1, 0.1 stream 1 : tensor<8x4xbf16>
  %2 = init.add %0, %1 : tensor<8x4xbf16>
  init.yield %2 : tensor<8x4xbf16>
}
init.param @expert_1 : tensor<8x4xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<8x4xbf16>
  %1 = init.uniform -0.1, 0.1 stream 1 : tensor<8x4xbf16>
  %2 = init.add %0, %1 : tensor<8x4xbf16>
  init.yield %2 : tensor<8x4xbf16>
}
init.param @other_std : tensor<8x4xbf16> {
  %0 = init.normal mean 0.0 std 0.03 stream 0 : tensor<8x4xbf16>
  %1 = init.uniform -0.1, 0.1 stream 1 : tensor<8x4xbf16>
  %2 = init.add %0, %1 : tensor<8x4xbf16>
  init.yield %2 : tensor<8x4xbf16>
}
init.param @other_stream : tensor<8x4xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<8x4xbf16>
  %1 = init.uniform -0.1, 0.1 stream 2 : tensor<8x4xbf16>
  %2 = init.add %0, %1 : tensor<8x4xbf16>
  init.yield %2 : tensor<8x4xbf16>
}
init.param @other_shape : tensor<4x8xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<4x8xbf16>
  %1 = init.uniform -0.1, 0.1 stream 1 : tensor<4x8xbf16>
  %2 = init.add %0, %1 : tensor<4x8xbf16>
  init.yield %2 : tensor<4x8xbf16>
}
init.param @expert_2 : tensor<8x4xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<8x4xbf16>
  %1 = init.uniform -0.1, 0.1 stream 1 : tensor<8x4xbf16>
  %2 = init.add %0, %1 : tensor<8x4xbf16>
  init.yield %2 : tensor<8x4xbf16>
}
