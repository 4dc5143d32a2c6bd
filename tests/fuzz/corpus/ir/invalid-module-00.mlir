// One case per verifier message of the init dialect; the labels (C1, C2, ...) are those of
// ir-spec/dialect.md.

// init.axis_names, C1
// expected-error @+1 {{'init.axis_names' is only valid on a mesh.mesh}}
func.func @axis_names_on_a_func() attributes {init.axis_names = ["dp"]} {
  return
}
