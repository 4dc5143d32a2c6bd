// init.axis_names, C4
// expected-error @+1 {{mesh axis names must be non-empty}}
mesh.mesh @axis_name_empty(shape = 2x2) {init.axis_names = ["dp", ""]}
