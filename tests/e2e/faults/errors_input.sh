#!/usr/bin/env bash
# Bad input gets one clear error: broken IR (through initc-opt, initc inspect and initc compile),
# bad configs (initc import hf), bad meshes and sharding rules, and a mesh that does not match
# the MPI world. Every case must exit non-zero without a signal, print exactly one "error:"
# naming the file, line, field or parameter, and leave nothing under the output's final name.
# Hostile parameter names (/, .., NUL, newline, quotes, 5000 characters) must round-trip through
# compile, run, verify and assemble without a file ever being written outside --out.
source "$(dirname "$0")/../common.bash"
OPT="$BUILD_DIR/bin/initc-opt"
cases=0

# expect_error NAME PATTERN CMD...: CMD fails cleanly and its stderr holds PATTERN (grep -E).
expect_error() {
  fails_cleanly "$@"
  local name=$1
  local errors
  errors=$(grep -c "error: " "$WORK/err.txt" || true)
  ((errors <= 1)) || fail "$name: $errors error lines, expected one: $(head -c 800 "$WORK/err.txt")"
  cases=$((cases + 1))
}

#===------------------------------------------------------------------------===#
# IR
#===------------------------------------------------------------------------===#
IR="$WORK/ir"
mkdir -p "$IR"
good() { # good SHAPE [SEED]
  [[ ${2-} == none ]] || echo "init.seed ${2:-7}"
  cat <<EOF
init.param @w : tensor<$1xf32> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<$1xf32>
  init.yield %0 : tensor<$1xf32>
}
EOF
}
good 8x4 >"$IR/good.mlir"
head -3 "$IR/good.mlir" >"$IR/truncated.mlir"
sed 's/init.normal mean/init.frobnicate mean/' "$IR/good.mlir" >"$IR/unknown_op.mlir"
sed '3s/tensor<8x4xf32>/tensor<8x5xf32>/; 4s/tensor<8x4xf32>/tensor<8x5xf32>/' "$IR/good.mlir" \
  >"$IR/verifier.mlir"
sed 's/stream 0 :/stream 0/' "$IR/good.mlir" >"$IR/syntax.mlir"
sed 's/@w /@w\xff\xfe /' "$IR/good.mlir" >"$IR/non_utf8.mlir"
good 99999999999999999999x4 >"$IR/huge_dim.mlir"
good -3x4 >"$IR/negative_dim.mlir"
good 4294967296x4294967296 >"$IR/overflow.mlir"
good 8x4 none >"$IR/no_seed.mlir"
printf 'init.seed 1 {a = %s}\n' "$(printf '[%.0s' $(seq 1 5000))" >"$IR/deep_nesting.mlir"

# name|pattern (initc-opt)|pattern (initc); initc-opt checks syntax and op verifiers only.
ir_cases=(
  "truncated|truncated.mlir:3:[0-9]+: error|truncated.mlir:3:[0-9]+: error"
  "unknown_op|unknown_op.mlir:3:8: error: custom op 'init.frobnicate' is unknown|unknown_op.mlir:3:8: error: custom op 'init.frobnicate' is unknown"
  "verifier|verifier.mlir:2:1: error: 'init.param' op body yields|verifier.mlir:2:1: error: 'init.param' op body yields"
  "syntax|syntax.mlir:3:[0-9]+: error: expected ':'|syntax.mlir:3:[0-9]+: error: expected ':'"
  "non_utf8|non_utf8.mlir:2:[0-9]+: error|non_utf8.mlir:2:[0-9]+: error"
  "huge_dim|huge_dim.mlir:2:24: error: invalid dimension|huge_dim.mlir:2:24: error: invalid dimension"
  "negative_dim|negative_dim.mlir:2:24: error|negative_dim.mlir:2:24: error"
  "overflow|overflow.mlir:2:1: error: .*more bytes than fit in a signed 64-bit integer|overflow.mlir:2:1: error: .*more bytes than fit in a signed 64-bit integer"
)
for c in "${ir_cases[@]}"; do
  IFS='|' read -r name opt_pattern initc_pattern <<<"$c"
  expect_error "initc-opt $name" "$opt_pattern" "$OPT" "$IR/$name.mlir"
  expect_error "inspect $name" "$initc_pattern" "$INITC" inspect "$IR/$name.mlir"
  expect_error "compile $name" "$initc_pattern" "$INITC" compile "$IR/$name.mlir" -o "$IR/prog-$name"
  no_output "$IR/prog-$name"
done
# Model-level checks are initc's: initc-opt also reads fragments without a seed.
expect_error "inspect no_seed" "no_seed.mlir.*error: the model has no 'init.seed': add one" \
  "$INITC" inspect "$IR/no_seed.mlir"
expect_error "compile no_seed" "no_seed.mlir.*error: the model has no 'init.seed'" \
  "$INITC" compile "$IR/no_seed.mlir" -o "$IR/prog-no_seed"
no_output "$IR/prog-no_seed"
expect_error "compile --shard without a mesh" "error: --shard needs a mesh: pass --mesh" \
  "$INITC" compile "$IR/good.mlir" --shard fsdp -o "$IR/prog-nomesh"
no_output "$IR/prog-nomesh"
# The MLIR parser recurses per bracket: initc refuses deep nesting before parsing.
expect_error "compile deep_nesting" "deep_nesting.mlir:1:0: error: brackets nest more than 256 levels" \
  "$INITC" compile "$IR/deep_nesting.mlir" -o "$IR/prog-deep"
expect_error "compile missing file" "^initc: error: cannot read .*missing.mlir: No such file or directory" \
  "$INITC" compile "$IR/missing.mlir" -o "$IR/prog-missing"
expect_error "compile --target-cpu twice" "error: target CPU 'x86-64-v3' is listed twice" \
  "$INITC" compile "$IR/good.mlir" -o "$IR/prog-cpu" --target-cpu x86-64-v3,x86-64-v3
expect_error "compile --target-cpu empty entry" "error: --target-cpu 'x86-64-v4,' has an empty entry" \
  "$INITC" compile "$IR/good.mlir" -o "$IR/prog-cpu" --target-cpu x86-64-v4,
expect_error "compile --target-cpu unknown" "error: unknown target CPU 'pentium9'" \
  "$INITC" compile "$IR/good.mlir" -o "$IR/prog-cpu" --target-cpu x86-64-v3,pentium9
expect_error "compile --target-cpu unknown extension" "error: unknown target feature 'avx512nope'" \
  "$INITC" compile "$IR/good.mlir" -o "$IR/prog-cpu" --target-cpu x86-64-v4+avx512nope,x86-64-v3
expect_error "compile --target-cpu empty extension" \
  "error: target CPU 'x86-64-v4.' names no extension after a" \
  "$INITC" compile "$IR/good.mlir" -o "$IR/prog-cpu" --target-cpu x86-64-v4+,x86-64-v3
expect_error "compile --target-cpu bad loop shape" \
  "error: init-partition: target 'x86-64-v4:9' is not CPU, CPU:GROUPS or CPU:GROUPSxBLOCKS" \
  "$INITC" compile "$IR/good.mlir" -o "$IR/prog-cpu" --target-cpu x86-64-v4:9,x86-64-v3
expect_error "compile --target-cpu twice with a shape" "error: target CPU 'x86-64-v3' is listed twice" \
  "$INITC" compile "$IR/good.mlir" -o "$IR/prog-cpu" --target-cpu x86-64-v3:1,x86-64-v3
no_output "$IR/prog-cpu"
expect_error "compile bad --stage" "unknown --stage 'nope'" \
  "$INITC" compile "$IR/good.mlir" --emit=mlir --stage=nope
# An output that cannot be written: under a regular file.
expect_error "compile -o under a file" "error: cannot create '.*good.mlir/prog.tmp-" \
  "$INITC" compile "$IR/good.mlir" -o "$IR/good.mlir/prog"
echo "ok IR"

#===------------------------------------------------------------------------===#
# configs
#===------------------------------------------------------------------------===#
CFG="$WORK/configs"
mkdir -p "$CFG"
llama='"model_type": "llama", "vocab_size": 100, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4'
config_cases=(
  "empty||not valid JSON"
  "not_object|[1, 2]|the top level is .* but a config.json holds one JSON object"
  "no_model_type|{\"vocab_size\": 3}|missing field 'model_type'"
  "unknown_model_type|{\"model_type\": \"bert\"}|model_type 'bert' is not supported; supported: llama"
  "model_type_number|{\"model_type\": 5}|'model_type' must be a string"
  "missing_field|{\"model_type\": \"llama\", \"vocab_size\": 100}|missing field 'hidden_size'"
  "null_field|{${llama/\"vocab_size\": 100/\"vocab_size\": null}}|missing field 'vocab_size'"
  "string_size|{${llama/\"hidden_size\": 64/\"hidden_size\": \"64\"}}|'hidden_size' must be a positive integer, but it is \"64\" \\(a string\\)"
  "bool_size|{${llama/\"vocab_size\": 100/\"vocab_size\": true}}|'vocab_size' must be a positive integer, but it is true"
  "negative_size|{${llama/\"vocab_size\": 100/\"vocab_size\": -5}}|'vocab_size' must be a positive integer, but it is -5"
  "fraction|{${llama/\"hidden_size\": 64/\"hidden_size\": 64.5}}|'hidden_size' must be a positive integer, but it is 64.5"
  "zero_heads|{${llama/\"num_attention_heads\": 4/\"num_attention_heads\": 0}}|'num_attention_heads' must be a positive integer"
  "heads_do_not_divide|{${llama/\"num_attention_heads\": 4/\"num_attention_heads\": 5}}|'hidden_size' \\(64\\) is not divisible by 'num_attention_heads' \\(5\\)"
  "kv_heads|{$llama, \"num_key_value_heads\": 3}|'num_attention_heads' \\(4\\) is not a multiple of 'num_key_value_heads' \\(3\\)"
  "alias_disagrees|{\"model_type\": \"gpt2\", \"vocab_size\": 100, \"n_positions\": 64, \"max_position_embeddings\": 128, \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4}|'n_positions' \\(64\\) and its alias 'max_position_embeddings' \\(128\\) disagree"
  "bad_range|{$llama, \"initializer_range\": -1}|'initializer_range' must be a positive number"
  "tie_not_bool|{$llama, \"tie_word_embeddings\": \"yes\"}|'tie_word_embeddings' must be true or false"
  "absurd_vocab|{${llama/\"vocab_size\": 100/\"vocab_size\": 1e30}}|'vocab_size' must be a positive integer, but it is 1e\\+30"
  "absurd_tensor|{${llama/\"hidden_size\": 64/\"hidden_size\": 1099511627776}}|more than 2\\^40 elements; check vocab_size and hidden_size"
  "absurd_layers|{${llama/\"num_hidden_layers\": 2/\"num_hidden_layers\": 100000000}}|'num_hidden_layers' is 100000000; initc imports at most"
)
for c in "${config_cases[@]}"; do
  IFS='|' read -r name text pattern <<<"$c"
  printf '%s\n' "$text" >"$CFG/$name.json"
  expect_error "import $name" "initc: error: .*$name.json.*$pattern" \
    "$INITC" import hf "$CFG/$name.json" -o "$CFG/$name.mlir"
  no_output "$CFG/$name.mlir"
done
printf '{"model_type": "ll\xffama"}' >"$CFG/non_utf8.json"
expect_error "import non_utf8" "non_utf8.json: not valid JSON .*Invalid UTF-8" \
  "$INITC" import hf "$CFG/non_utf8.json" -o "$CFG/non_utf8.mlir"
printf '%s\n' "$(printf '[%.0s' $(seq 1 100000))" >"$CFG/deep.json"
expect_error "import deep nesting" "deep.json:1: JSON nested more than 256 levels" \
  "$INITC" import hf "$CFG/deep.json" -o "$CFG/deep.mlir"
expect_error "import missing file" "cannot read config '.*nope.json'" \
  "$INITC" import hf "$CFG/nope.json" -o "$CFG/nope.mlir"
expect_error "import unknown --dtype" "--dtype: .*f64" \
  "$INITC" import hf "$ROOT/tests/e2e/configs/gpt2_tiny.json" --dtype f64
echo "ok configs"

#===------------------------------------------------------------------------===#
# mesh and sharding
#===------------------------------------------------------------------------===#
M="$WORK/mesh"
mkdir -p "$M"
"$INITC" import hf "$ROOT/tests/e2e/configs/gpt2_tiny.json" -o "$M/gpt2.mlir"
mesh_cases=(
  "dp|malformed mesh axis 'dp': write the mesh as NAME=SIZE"
  "dp=2,,tp=2|malformed mesh axis ''"
  "=2|malformed mesh axis '=2'"
  "dp=0|mesh axis 'dp' has size '0': sizes must be positive integers"
  "dp=-2|mesh axis 'dp' has size '-2': sizes must be positive integers"
  "dp=x|mesh axis 'dp' has size 'x'"
  "dp=99999999999999999999|mesh axis 'dp' has size '99999999999999999999'"
  "dp=2,dp=2|mesh axis 'dp' is named twice"
  "dp=65536,tp=32768|the mesh .dp=65536,tp=32768. has more than 2\\^31 - 1 devices"
  "d p=2|mesh axis name 'd p' must be letters, digits or '_'"
)
for c in "${mesh_cases[@]}"; do
  IFS='|' read -r mesh pattern <<<"$c"
  expect_error "--mesh $mesh" "^initc: error: --mesh: $pattern" \
    "$INITC" inspect "$M/gpt2.mlir" --mesh "$mesh" --shard fsdp
  expect_error "compile --mesh $mesh" "error: --mesh: $pattern" \
    "$INITC" compile "$M/gpt2.mlir" --mesh "$mesh" --shard fsdp -o "$M/prog"
  no_output "$M/prog"
done
echo '{"logical_axes": {"mlp": "tp"' >"$M/not_json.json"
echo '[1, 2]' >"$M/array.json"
echo '{"logical_axes": {"mlp": "zz"}}' >"$M/unknown_axis.json"
echo '{"logical_axes": {"mlp": ["tp", "tp"]}}' >"$M/axis_twice.json"
echo '{"params": {"*": [["dp"], ["dp"]]}}' >"$M/axis_two_dims.json"
echo '{"params": {"nothing.*": []}}' >"$M/pattern_matches_nothing.json"
echo '{"logical_axes": {"no_such_axis": "tp"}}' >"$M/axis_matches_nothing.json"
echo '{"logical_axes": {"mlp": 3}}' >"$M/wrong_type.json"
echo '{"logical": {}}' >"$M/unknown_key.json"
printf '{"params": %s\n' "$(printf '[%.0s' $(seq 1 100000))" >"$M/deep.json"
shard_cases=(
  "not_json|--shard: rules file '.*not_json.json' is not valid JSON"
  "array|--shard: rules file '.*array.json' must hold a JSON object"
  "unknown_axis|logical axis 'mlp' uses mesh axis 'zz', which the mesh dp=2,tp=2 does not have"
  "axis_twice|logical axis 'mlp' lists mesh axis 'tp' twice; a mesh axis splits a dim once"
  "axis_two_dims|gpt2.mlir:[0-9]+:3: error: parameter 'transformer.wte.weight': mesh axis 'dp' would split two dims"
  "pattern_matches_nothing|pattern 'nothing.\\*' matches no parameter; fix or remove the rule"
  "axis_matches_nothing|logical axis 'no_such_axis' is used by no parameter; fix or remove the rule"
  "wrong_type|logical axis 'mlp' must be a mesh axis name, a list of them, or null"
  "unknown_key|unknown key 'logical'"
  "deep|JSON nested more than 256 levels deep"
  "missing|--shard '.*missing.json' is neither a preset"
)
for c in "${shard_cases[@]}"; do
  IFS='|' read -r name pattern <<<"$c"
  expect_error "--shard $name" "$pattern" \
    "$INITC" inspect "$M/gpt2.mlir" --mesh dp=2,tp=2 --shard "$M/$name.json"
done
expect_error "preset needs an axis" "preset 'tp' needs a mesh axis named tp" \
  "$INITC" compile "$M/gpt2.mlir" --mesh dp=2 --shard tp -o "$M/prog"
no_output "$M/prog"
# Sharding written in the IR: an unknown mesh axis, an axis used twice.
cat >"$M/ir_sharding.mlir" <<'EOF'
init.seed 1
mesh.mesh @mesh(shape = 2x2) {init.axis_names = ["dp", "tp"]}
init.param @w : tensor<8x4xf32> sharding #mesh.shard<@mesh, [[0], [0]]> {
  %0 = init.fill 0.0 : tensor<8x4xf32>
  init.yield %0 : tensor<8x4xf32>
}
EOF
expect_error "IR axis used twice" "ir_sharding.mlir:3:[0-9]+: error: mesh axis duplicated" \
  "$INITC" compile "$M/ir_sharding.mlir" -o "$M/prog"
sed 's/\[\[0\], \[0\]\]/[[5]]/' "$M/ir_sharding.mlir" >"$M/ir_unknown_axis.mlir"
expect_error "IR unknown axis" "ir_unknown_axis.mlir:3:1: error: 'init.param' op sharding uses mesh axis 5 but mesh '@mesh' has 2 axes" \
  "$INITC" compile "$M/ir_unknown_axis.mlir" -o "$M/prog"
no_output "$M/prog"
# A mesh that is not the MPI world.
"$INITC" compile "$M/gpt2.mlir" --mesh dp=2,tp=2 --shard fsdp+tp -o "$M/prog4" >/dev/null
for n in 2 3; do
  rc=0
  "${MPIRUN[@]}" -np "$n" "$M/prog4/init" --layout ranks --out "$M/ckpt" >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
  ((rc != 0 && rc < 128)) || fail "mpirun -np $n on a 4-device mesh: exit $rc"
  grep -q "error: the mesh dp=2,tp=2 has 4 devices but MPI started $n ranks: run mpirun -np 4" \
    "$WORK/err.txt" || fail "world size $n: $(head -c 600 "$WORK/err.txt")"
  (($(grep -c "init: error" "$WORK/err.txt") == 1)) || fail "world size $n: not one message"
  [[ -z $(ls -A "$M/ckpt" 2>/dev/null) ]] || fail "world size $n: files written"
  cases=$((cases + 1))
done
echo "ok mesh and sharding"

#===------------------------------------------------------------------------===#
# names
#===------------------------------------------------------------------------===#
N="$WORK/names"
mkdir -p "$N/run"
long=$(printf 'n%.0s' $(seq 1 5000))
names=('a/b' '../../escape' '..' '/abs/path' 'nul\00byte' 'new\0Aline' 'quote\22q' 'back\5Cslash'
  "$long" 'tab\09x' 'caf\C3\A9')
{
  echo "init.seed 3"
  i=0
  for name in "${names[@]}"; do
    i=$((i + 1))
    echo "init.param @\"$name\" : tensor<4x${i}xf32> {"
    echo "  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<4x${i}xf32>"
    echo "  init.yield %0 : tensor<4x${i}xf32>"
    echo "}"
  done
} >"$N/names.mlir"
"$INITC" compile "$N/names.mlir" --mesh dp=2 --shard fsdp -o "$N/prog" >/dev/null || fail "compile names"
touch "$N/marker"
(cd "$N/run" && "${MPIRUN[@]}" -np 2 "$N/prog/init" --layout ranks --out "$N/run/ckpt" --quiet) || fail "run names"
"$INITC" verify "$N/run/ckpt" >/dev/null || fail "verify names"
"$INITC" assemble "$N/run/ckpt" -o "$N/run/names.safetensors" >/dev/null || fail "assemble names"
# Only the four expected files are new; nothing escaped --out or the working directory.
new=$({ find "$WORK" /tmp/escape /abs -newer "$N/marker" -type f 2>/dev/null || true; } | sed "s|$N/run/||" | sort | tr '\n' ' ')
[[ $new == "ckpt/index.json ckpt/rank-00000-of-00002.safetensors ckpt/rank-00001-of-00002.safetensors names.safetensors " ]] ||
  fail "unexpected files: $new"
$PYTHON - "$N/run" "$ROOT/tests/e2e" <<'EOF' || fail "names do not round-trip"
import json, sys
sys.path.insert(0, sys.argv[2])
import safetensors_check
run = sys.argv[1]
expected = ["a/b", "../../escape", "..", "/abs/path", "nul\0byte", "new\nline", 'quote"q',
            "back\\slash", "n" * 5000, "tab\tx", "caf\u00e9"]
index = json.load(open(run + "/ckpt/index.json"))
got = [p["name"] for p in index["params"]]
assert got == expected, got
meta, tensors = safetensors_check.validate(open(run + "/names.safetensors", "rb").read())
assert sorted(tensors) == sorted(expected), sorted(tensors)
for name in expected:
    assert tensors[name][1][0] == 4, tensors[name]
EOF
cases=$((cases + 1))
echo "ok names"

echo "$cases cases"
echo "PASS $TEST_NAME"
