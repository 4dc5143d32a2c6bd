// init.param, C9
// expected-error @+1 {{'init.param' op names an unknown kernel '@missing_kernel'}}
init.param @unknown_kernel : tensor<4xf32> kernel @missing_kernel
