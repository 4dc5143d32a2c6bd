#!/usr/bin/env bash
# The README's first command works: tools/demo.sh runs the whole job on its embedded ~100M model.
source "$(dirname "$0")/../common.bash"
DEMO_DIR="$WORK/demo" bash "$ROOT/tools/demo.sh" >"$WORK/demo.log" 2>&1 || { tail -30 "$WORK/demo.log"; fail "tools/demo.sh failed"; }
# verify and assemble end with what they read or wrote and how long it took.
grep -qE "every shard matches its checksum and the index \([0-9.]+ MiB in [0-9.]+ s, [0-9.]+ [KMG]iB/s\)" \
  "$WORK/demo.log" || fail "the demo did not verify its checkpoint"
grep -qE "^wrote .*/model.safetensors \(379.55 MiB in [0-9.]+ s, [0-9.]+ [KMG]iB/s\)" "$WORK/demo.log" ||
  fail "assemble's summary: $(grep wrote "$WORK/demo.log")"
grep -q ": identical" "$WORK/demo.log" || fail "the demo's --rank run differed"
$PYTHON "$ROOT/tests/e2e/safetensors_check.py" "$WORK/demo/model.safetensors" || fail "invalid model.safetensors"
echo "PASS $TEST_NAME"
