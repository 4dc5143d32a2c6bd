#!/usr/bin/env bash
# The README's first command works: tools/demo.sh runs the whole job on its embedded ~100M model.
source "$(dirname "$0")/common.bash"
DEMO_DIR="$WORK/demo" bash "$ROOT/tools/demo.sh" >"$WORK/demo.log" 2>&1 || { tail -30 "$WORK/demo.log"; fail "tools/demo.sh failed"; }
grep -q "every shard matches" "$WORK/demo.log" || fail "the demo did not verify its checkpoint"
grep -q ": identical" "$WORK/demo.log" || fail "the demo's --rank run differed"
$PYTHON "$ROOT/tests/e2e/safetensors_check.py" "$WORK/demo/model.safetensors" || fail "invalid model.safetensors"
echo "PASS $TEST_NAME"
