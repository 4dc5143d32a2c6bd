// init.param, C3
// expected-error @+1 {{'init.param' op needs exactly one of a body, 'tied_to' or 'kernel', but has 0}}
init.param @no_value_source : tensor<4xf32>
