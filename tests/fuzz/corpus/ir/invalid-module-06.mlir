// init.seed, C1
init.seed 1
// expected-error @+1 {{'init.seed' op the module already has a seed; keep exactly one 'init.seed'}}
init.seed 2
