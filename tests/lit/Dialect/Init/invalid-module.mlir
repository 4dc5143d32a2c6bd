// RUN: initc-opt %s -split-input-file -verify-diagnostics

// One case per verifier message of the module and its attributes: init.axis_names, init.seed,
// init.model, init.hf_config. The labels (C1, C2, ...) are those of ir-spec/dialect.md.

// init.axis_names, C1
// expected-error @+1 {{'init.axis_names' is only valid on a mesh.mesh}}
func.func @axis_names_on_a_func() attributes {init.axis_names = ["dp"]} {
  return
}

// -----

// init.axis_names, C2
// expected-error @+1 {{'init.axis_names' must be an array of strings}}
mesh.mesh @axis_names_not_strings(shape = 2) {init.axis_names = [1]}

// -----

// init.axis_names, C3
// expected-error @+1 {{'init.axis_names' names 1 axes but the mesh has 2}}
mesh.mesh @axis_names_too_few(shape = 2x2) {init.axis_names = ["dp"]}

// -----

// init.axis_names, C4
// expected-error @+1 {{mesh axis names must be non-empty}}
mesh.mesh @axis_name_empty(shape = 2x2) {init.axis_names = ["dp", ""]}

// -----

// init.axis_names, C4
// expected-error @+1 {{mesh axis name 'dp' is used twice}}
mesh.mesh @axis_name_twice(shape = 2x2) {init.axis_names = ["dp", "dp"]}

// -----

// init.axis_names, C4: names print into mesh texts such as dp=2,tp=2.
// expected-error @+1 {{mesh axis name 't,p' must be letters, digits or '_'}}
mesh.mesh @axis_name_comma(shape = 2x2) {init.axis_names = ["dp", "t,p"]}

// -----

// Only init.axis_names is a discardable attribute of the dialect.
// expected-error @+1 {{unknown init dialect attribute 'init.axes'}}
mesh.mesh @unknown_dialect_attribute(shape = 2) {init.axes = ["dp"]}

// -----

// init.seed, C1
init.seed 1
// expected-error @+1 {{'init.seed' op the module already has a seed; keep exactly one 'init.seed'}}
init.seed 2

// -----

// init.seed, C2
func.func @seed_outside_module() {
  // expected-error @+1 {{'init.seed' op expects parent op 'builtin.module'}}
  init.seed 3
  return
}

// -----

// init.model, C1
// expected-error @+1 {{'init.model' must be a string on a builtin.module}}
mesh.mesh @model_name_on_a_mesh(shape = 2) {init.model = "llama"}

// -----

// init.hf_config, C1
// expected-error @+1 {{'init.hf_config' must be a string on a builtin.module}}
mesh.mesh @hf_config_on_a_mesh(shape = 2) {init.hf_config = "{}"}

// -----

// init.hf_config, C1
// expected-error @+1 {{'init.hf_config' must be a string on a builtin.module}}
module attributes {init.hf_config = {model_type = "llama"}} {
}

// -----

// init.hf_config, C2
// expected-error @+1 {{'init.hf_config' is not valid JSON: }}
module attributes {init.hf_config = "{\22model_type\22: "} {
}

// -----

// init.hf_config, C2
// expected-error @+1 {{'init.hf_config' must hold a JSON object, as a config.json does}}
module attributes {init.hf_config = "[\22llama\22]"} {
}
