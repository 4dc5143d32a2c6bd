// Only init.axis_names is a discardable attribute of the dialect.
// expected-error @+1 {{unknown init dialect attribute 'init.axes'}}
mesh.mesh @unknown_dialect_attribute(shape = 2) {init.axes = ["dp"]}
