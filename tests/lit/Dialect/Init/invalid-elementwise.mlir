// RUN: initc-opt %s -split-input-file -verify-diagnostics

// One case per verifier message of the elementwise ops, init.elementwise and
// init.elementwise_like; the labels (C1, C2, ...) are those of ir-spec/dialect.md.

// elementwise ops, C1
init.param @add_mixed_types : tensor<4xf32> {
  %a = init.fill 1.0 : tensor<4xf32>
  %b = init.fill 1.0 : tensor<4xbf16>
  // expected-error @+1 {{'init.add' op requires the same type for all operands and results}}
  %0 = "init.add"(%a, %b) : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// elementwise ops, C1
init.param @pow_mixed_types : tensor<4xf32> {
  %a = init.fill 1.0 : tensor<4xf32>
  %b = init.fill 2.0 : tensor<4xf16>
  // expected-error @+1 {{'init.pow' op requires the same type for all operands and results}}
  %0 = "init.pow"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// elementwise ops, C1
init.param @expm1_changes_type : tensor<4xbf16> {
  %a = init.fill 1.0 : tensor<4xf32>
  // expected-error @+1 {{'init.expm1' op requires the same type for all operands and results}}
  %0 = "init.expm1"(%a) : (tensor<4xf32>) -> tensor<4xbf16>
  init.yield %0 : tensor<4xbf16>
}

// -----

// elementwise ops, C1
init.param @log1p_of_integers : tensor<4xi64> {
  %a = init.fill 1.0 : tensor<4xi64>
  // expected-error @+1 {{'init.log1p' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi64>'}}
  %0 = init.log1p %a : tensor<4xi64>
  init.yield %0 : tensor<4xi64>
}

// -----

// init.clamp, C1
init.param @clamp_reversed_bounds : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  // expected-error @+1 {{'init.clamp' op min (1.000000e+00) must not exceed max (-1.000000e+00)}}
  %0 = init.clamp %x min 1.0 max -1.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.select, C1
init.param @select_mask_of_other_shape : tensor<4x8xf32> {
  %m = init.index_mask dim 0 index 0 : tensor<8x4xi1>
  %a = init.fill 0.0 : tensor<4x8xf32>
  %b = init.fill 1.0 : tensor<4x8xf32>
  // expected-error @+1 {{'init.select' op mask shape must equal the value shape}}
  %0 = init.select %m, %a, %b : tensor<8x4xi1>, tensor<4x8xf32>
  init.yield %0 : tensor<4x8xf32>
}

// -----

// init.cast, C1
init.param @cast_changes_shape : tensor<8xbf16> {
  %x = init.fill 1.0 : tensor<4xf32>
  // expected-error @+1 {{'init.cast' op cannot change the shape, only the element type}}
  %0 = init.cast %x : tensor<4xf32> to tensor<8xbf16>
  init.yield %0 : tensor<8xbf16>
}

// -----

// init.elementwise, C1
init.param @elementwise_missing_index : tensor<4x8xf32> {
  // expected-error @+1 {{'init.elementwise' op region must take 3 i64 arguments (linear index, then one index per dim)}}
  %0 = init.elementwise : tensor<4x8xf32> {
  ^bb0(%linear: i64, %i: i64):
    %c = arith.constant 1.0 : f32
    init.yield %c : f32
  }
  init.yield %0 : tensor<4x8xf32>
}

// -----

// init.elementwise, C1
init.param @elementwise_index_type : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise' op region must take 2 i64 arguments (linear index, then one index per dim)}}
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: index):
    %c = arith.constant 1.0 : f32
    init.yield %c : f32
  }
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise, C1
init.param @elementwise_missing_key_argument : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise' op region must take 3 i64 arguments (linear index, then one index per dim), then one per 'args' entry}}
  %0 = init.elementwise {args = array<i64: 5>} : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %c = arith.constant 1.0 : f32
    init.yield %c : f32
  }
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise, C2
init.param @elementwise_without_yield : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise' op region must end with 'init.yield'}}
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %c = arith.constant 1.0 : f32
  }
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise, C4: memory would read whatever the allocation held
init.param @elementwise_reads_memory : tensor<4xf32> {
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    // expected-error @+1 {{'memref.alloc' op is not allowed in an 'init.elementwise' region: an element is computed by scalar arith, math and vector ops only}}
    %m = memref.alloc() : memref<4xf32>
    %c0 = arith.constant 0 : index
    %v = memref.load %m[%c0] : memref<4xf32>
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise, C4: no loops
init.param @elementwise_loops : tensor<4xf32> {
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %init = arith.constant 0.0 : f32
    // expected-error @+1 {{'scf.for' op is not allowed in an 'init.elementwise' region}}
    %r = scf.for %k = %c0 to %c1 step %c1 iter_args(%acc = %init) -> (f32) {
      scf.yield %acc : f32
    }
    init.yield %r : f32
  }
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise_like, C1
func.func private @not_a_param()
init.param @like_a_function : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op 'like' names '@not_a_param', which is not a parameter}}
  %0 = init.elementwise_like @not_a_param : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise_like, C1: one step, not a chain.
init.param @source : tensor<4xf32> {
  %0 = init.elementwise {args = array<i64: 1>} : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64, %key: i64):
    %v = arith.uitofp %key : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}
init.param @first : tensor<4xf32> {
  %0 = init.elementwise_like @source {args = array<i64: 2>} : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
init.param @second : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op 'like' names '@first', which is itself an 'init.elementwise_like' of '@source': name '@source' (chains are not allowed)}}
  %0 = init.elementwise_like @first {args = array<i64: 3>} : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise_like, C1: not the parameter it is in.
init.param @itself : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op 'like' names its own parameter '@itself': name the parameter whose body holds the init.elementwise}}
  %0 = init.elementwise_like @itself : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise_like, C1: not a tied parameter, which has no body.
init.param @source : tensor<4xf32> {
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %v = arith.uitofp %linear : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}
init.param @tied : tensor<4xf32> tied_to @source
init.param @like_tied : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op 'like' names '@tied', which is tied to '@source' and has no body: name the parameter that holds the init.elementwise}}
  %0 = init.elementwise_like @tied : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.elementwise_like, C2: the type.
init.param @source : tensor<4xf32> {
  %0 = init.elementwise : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64):
    %v = arith.uitofp %linear : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}
init.param @wider : tensor<8xf32> {
  // expected-error @+1 {{'init.elementwise_like' op has type 'tensor<8xf32>' but '@source' computes 'tensor<4xf32>'}}
  %0 = init.elementwise_like @source : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}

// -----

// init.elementwise_like, C2: one value per trailing argument.
init.param @source : tensor<4xf32> {
  %0 = init.elementwise {args = array<i64: 1>} : tensor<4xf32> {
  ^bb0(%linear: i64, %i: i64, %key: i64):
    %v = arith.uitofp %key : i64 to f32
    init.yield %v : f32
  }
  init.yield %0 : tensor<4xf32>
}
init.param @keyless : tensor<4xf32> {
  // expected-error @+1 {{'init.elementwise_like' op has 0 args but the region of '@source' takes 1}}
  %0 = init.elementwise_like @source : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
