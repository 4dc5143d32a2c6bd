// init.axis_names, C4
// expected-error @+1 {{mesh axis name 'dp' is used twice}}
mesh.mesh @axis_name_twice(shape = 2x2) {init.axis_names = ["dp", "dp"]}
