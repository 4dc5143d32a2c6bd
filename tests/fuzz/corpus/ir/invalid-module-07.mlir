// init.seed, C2
func.func @seed_outside_module() {
  // expected-error @+1 {{'init.seed' op expects parent op 'builtin.module'}}
  init.seed 3
  return
}
