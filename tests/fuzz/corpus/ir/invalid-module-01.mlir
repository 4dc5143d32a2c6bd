// init.axis_names, C2
// expected-error @+1 {{'init.axis_names' must be an array of strings}}
mesh.mesh @axis_names_not_strings(shape = 2) {init.axis_names = [1]}
