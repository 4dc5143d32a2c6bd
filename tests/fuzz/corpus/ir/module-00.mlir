// Module constraint M1 (ir-spec/dialect.md#modules): a module that holds parameters holds an
// init.seed. It is checked by initc::init::verifyModel when the driver loads a model (no op
// verifier or pass checks it: a module under construction may lack the seed).

init.param @weight : tensor<4xf32> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
