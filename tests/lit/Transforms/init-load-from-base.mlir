// RUN: initc-opt %s --init-load-from-base=file=%S/Inputs/base.safetensors --split-input-file --verify-diagnostics | FileCheck %s

// Each parameter the base has (norm.weight, w) loads it instead of computing its recipe; its
// name, type, axes and sharding stay. The one the base lacks keeps its recipe, and a tied
// parameter follows the one it is tied to. A non-persistent buffer is computed even where the
// base has it (as from_pretrained does), and said so.
// CHECK-LABEL: init.param @norm.weight : tensor<4xf32> axes ["embed"] {
// CHECK-NEXT:    %[[N:.+]] = init.load "{{.+}}/Inputs/base.safetensors"["norm.weight"] : tensor<4xf32>
// CHECK-NEXT:    init.yield %[[N]] : tensor<4xf32>
// CHECK-LABEL: init.param @w : tensor<2x3xbf16> {
// CHECK-NEXT:    %[[W:.+]] = init.load "{{.+}}/Inputs/base.safetensors"["w"] : tensor<2x3xbf16>
// CHECK-NEXT:    init.yield %[[W]] : tensor<2x3xbf16>
// CHECK-LABEL: init.param @head : tensor<2x3xbf16> {
// CHECK-NEXT:    init.normal
// CHECK-LABEL: init.param @extra_alias : tensor<2x3xbf16> tied_to @w{{$}}
// CHECK-LABEL: init.param @extra : tensor<1xf32> buffer nonpersistent {
// CHECK-NEXT:    init.fill
init.seed 0
init.param @"norm.weight" : tensor<4xf32> axes ["embed"] {
  %0 = init.fill 1.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
init.param @w : tensor<2x3xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<2x3xbf16>
  %1 = init.fill 2.0 : tensor<2x3xbf16>
  %2 = init.mul %0, %1 : tensor<2x3xbf16>
  init.yield %2 : tensor<2x3xbf16>
}
init.param @head : tensor<2x3xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<2x3xbf16>
  init.yield %0 : tensor<2x3xbf16>
}
init.param @extra_alias : tensor<2x3xbf16> tied_to @w
// expected-warning @below {{base.safetensors's 'extra' is not loaded: the model computes its non-persistent buffers}}
init.param @extra : tensor<1xf32> buffer nonpersistent {
  %0 = init.fill 3.0 : tensor<1xf32>
  init.yield %0 : tensor<1xf32>
}

// -----

// The base's tensors no parameter takes are warned about.
init.seed 0
// expected-warning @below {{has 2 tensors the model does not ('w', 'extra'): they are not loaded}}
init.param @"norm.weight" : tensor<4xf32> {
  %0 = init.fill 1.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// A tensor of another dtype or shape is not loaded: init.load converts nothing.
init.seed 0
// expected-error @+1 {{tensor "w" of}}
init.param @w : tensor<2x3xf32> {
  %0 = init.fill 1.0 : tensor<2x3xf32>
  init.yield %0 : tensor<2x3xf32>
}

// -----

init.seed 0
// expected-error @below {{has none of the model's parameters: its tensors are 'norm.weight', 'w', 'extra', the model's 'model.norm.weight'; is it a checkpoint of this model?}}
init.param @"model.norm.weight" : tensor<4xf32> {
  %0 = init.fill 1.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// After fusion, a parameter whose region another shares cannot lose it to the base.
init.seed 0
// expected-error @below {{init-load-from-base: 'head' shares the fused region of 'w' (init.elementwise_like); load from the base before init-fuse-elementwise}}
init.param @w : tensor<2x3xbf16> {
  %0 = init.elementwise {args = array<i64: 1>} : tensor<2x3xbf16> {
  ^bb0(%linear: i64, %i: i64, %j: i64, %key: i64):
    %v = arith.uitofp %key : i64 to bf16
    init.yield %v : bf16
  }
  init.yield %0 : tensor<2x3xbf16>
}
init.param @head : tensor<2x3xbf16> {
  %0 = init.elementwise_like @w {args = array<i64: 2>} : tensor<2x3xbf16>
  init.yield %0 : tensor<2x3xbf16>
}
