#!/usr/bin/env bash
# Captures every model of tests/capture/models.py with tools/capture/initc_capture.py, compiles it
# for 1 rank and for 4 (dp=2,tp=2, fsdp+tp), runs both, assembles both checkpoints, checks that
# they are bitwise identical and that tests/capture/check_capture.py accepts the result against
# PyTorch's eager initialization; then compiles one with the rules file that README.md shows for
# captured models. Prints "PASS capture_models" or exits 1.
# Needs: BUILD_DIR (default ./build) with initc and init; /usr/bin/python3 with torch,
# numpy and scipy (apt-get install python3-torch python3-numpy python3-scipy; scripts/setup.sh
# installs them).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD_DIR=$(cd "${BUILD_DIR:-./build}" && pwd)
INITC="$BUILD_DIR/bin/initc"
PYTHON=/usr/bin/python3
CAPTURE="$ROOT/tools/capture/initc_capture.py"
MODELS="$ROOT/tests/capture/models.py"
CHECK="$ROOT/tests/capture/check_capture.py"

if ! "$PYTHON" -c "import torch" 2>/dev/null; then
  echo "capture_models: $PYTHON cannot import torch: apt-get install python3-torch" >&2
  exit 1
fi
if ! "$PYTHON" -c "import numpy, scipy" 2>/dev/null; then
  echo "capture_models: the checks need numpy and scipy: apt-get install python3-numpy python3-scipy" >&2
  exit 1
fi
for file in "$INITC" "$BUILD_DIR/bin/init"; do
  if [[ ! -x "$file" ]]; then
    echo "capture_models: $file is missing: build the targets initc init" >&2
    exit 1
  fi
done

WORK=$(mktemp -d /tmp/initc-capture-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_pml=ob1 # one host: shared memory, no network probing (common.bash)
MPIRUN=(mpirun -np 4 --oversubscribe --bind-to none)

fail() {
  echo "capture_models: $*" >&2
  echo "FAIL capture_models" >&2
  exit 1
}

MODEL_NAMES=$("$PYTHON" -c "import sys; sys.path.insert(0, '$ROOT/tests/capture'); import models; print(' '.join(models.ALL))")
for model in $MODEL_NAMES; do
  dir="$WORK/$model"
  mkdir -p "$dir"
  "$PYTHON" "$CAPTURE" --factory "$MODELS:$model" --seed 17 -o "$dir/model.mlir" \
    2> >(grep -v "^initc-capture: note:" >&2) || fail "$model: capture failed"
  "$INITC" compile "$dir/model.mlir" --mesh dp=1 --shard replicated -o "$dir/p1" >/dev/null \
    || fail "$model: compile for 1 rank failed"
  "$INITC" compile "$dir/model.mlir" --mesh dp=2,tp=2 --shard fsdp+tp -o "$dir/p4" >/dev/null \
    || fail "$model: compile for 4 ranks failed"
  "$dir/p1/init" --layout ranks --out "$dir/c1" --quiet || fail "$model: the 1-rank run failed"
  "${MPIRUN[@]}" "$dir/p4/init" --layout ranks --out "$dir/c4" --quiet || fail "$model: the 4-rank run failed"
  "$INITC" assemble "$dir/c1" -o "$dir/m1.safetensors" >/dev/null || fail "$model: assemble (1 rank) failed"
  "$INITC" assemble "$dir/c4" -o "$dir/m4.safetensors" >/dev/null || fail "$model: assemble (4 ranks) failed"
  cmp -s "$dir/m1.safetensors" "$dir/m4.safetensors" \
    || fail "$model: 1-rank and 4-rank checkpoints differ"
  if ! "$PYTHON" "$CHECK" --factory "$MODELS:$model" --ir "$dir/model.mlir" \
      "$dir/m4.safetensors" > "$dir/check.log" 2>&1; then
    cat "$dir/check.log" >&2
    fail "$model: values do not match PyTorch's eager initialization"
  fi
  echo "ok $model: $(tail -1 "$dir/check.log")"
done
# The rules file of README.md's capture example compiles: it names only the logical axes the
# capture emits for linear layers.
echo '{"logical_axes": {"out": "tp", "in": "dp"}}' >"$WORK/rules.json"
"$INITC" compile "$WORK/mlp/model.mlir" --mesh dp=2,tp=2 --shard "$WORK/rules.json" -o "$WORK/rules-prog" \
  >/dev/null || fail "the README's rules file does not compile a captured model"
echo "PASS capture_models"
