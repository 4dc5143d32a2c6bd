// init.axis_names, C3
// expected-error @+1 {{'init.axis_names' names 1 axes but the mesh has 2}}
mesh.mesh @axis_names_too_few(shape = 2x2) {init.axis_names = ["dp"]}
