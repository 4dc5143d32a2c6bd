// RUN: initc-opt %s -split-input-file -verify-diagnostics

// One case per verifier message of init.load; the labels (C1, C2, ...) are those of
// ir-spec/dialect.md.

// init.load, C1
init.param @load_without_tensor_name : tensor<4xf32> {
  // expected-error @+1 {{'init.load' op needs a file and a tensor name}}
  %0 = init.load "base.safetensors" [""] : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.load, C2
init.param @nul_in_path : tensor<4xf32> {
  // expected-error @+1 {{'init.load' op file name contains a NUL character}}
  %0 = init.load "base.safetensors\00.txt" ["w"] : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.load, C3: a file name of Latin-1 bytes.
init.param @latin1_path : tensor<4xf32> {
  // expected-error @+1 {{'init.load' op file name is not valid UTF-8: rename the file}}
  %0 = init.load "b\FF\FE.safetensors" ["w"] : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// init.load, C3
init.param @latin1_tensor : tensor<4xf32> {
  // expected-error @+1 {{'init.load' op tensor name is not valid UTF-8}}
  %0 = init.load "base.safetensors" ["w\E9"] : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
