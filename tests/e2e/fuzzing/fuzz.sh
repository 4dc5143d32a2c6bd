#!/usr/bin/env bash
# Fuzzes the init IR parser + verifiers and the HF config importer with libFuzzer (clang-19,
# ASan + UBSan) for a bounded time each (FUZZ_SECONDS, default 60), starting from the seed corpora
# in tests/fuzz/corpus/. First replays every input in tests/fuzz/regressions/. A crash fails the
# test, and its input is saved under tests/fuzz/regressions/<target>/ to be replayed from then on.
# Runs in the fuzzers' instrumented tree (build_sanitized_tree in scripts/setup.sh, which
# tools/test.sh builds before the tests; installs clang-19 and libclang-rt-19-dev if missing).
source "$(dirname "$0")/../common.bash"
source "$ROOT/scripts/setup.sh"
FUZZ_SECONDS=${FUZZ_SECONDS:-60}

start=$(date +%s)
build_sanitized_tree || fail "building the fuzzers"
echo "built the fuzzers in $(($(date +%s) - start)) s"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for target in ir config; do
  fuzzer="$SANITIZED_BUILD_DIR/bin/initc-fuzz-$target"
  regressions="$ROOT/tests/fuzz/regressions/$target"
  # Replay: each saved input runs once.
  inputs=("$regressions"/*)
  if [[ -e ${inputs[0]} ]]; then
    "$fuzzer" "${inputs[@]}" >"$WORK/replay-$target.log" 2>&1 ||
      { tail -30 "$WORK/replay-$target.log"; fail "a regression input of $target crashes again"; }
    echo "replayed ${#inputs[@]} $target regression inputs"
  fi
  # New inputs go to a scratch corpus; the seed corpus in the repo stays as it is.
  mkdir -p "$WORK/corpus-$target" "$WORK/artifacts-$target"
  rc=0
  "$fuzzer" "$WORK/corpus-$target" "$ROOT/tests/fuzz/corpus/$target" \
    -max_total_time="$FUZZ_SECONDS" -timeout=30 -rss_limit_mb=4096 -max_len=16384 \
    -artifact_prefix="$WORK/artifacts-$target/" -print_final_stats=1 \
    >"$WORK/fuzz-$target.log" 2>&1 || rc=$?
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$WORK/fuzz-$target.log" |
    tr '\n' ' ' | sed "s/^/$target: /"
  echo
  if ((rc != 0)); then
    status=1
    grep -E "ERROR|SUMMARY|runtime error|#[0-9]+ 0x" "$WORK/fuzz-$target.log" | head -25
    mkdir -p "$regressions"
    for artifact in "$WORK/artifacts-$target"/*; do
      [[ -e $artifact ]] || continue
      cp "$artifact" "$regressions/"
      echo "saved $(basename "$artifact") to tests/fuzz/regressions/$target/: fix the bug, keep the input"
    done
  fi
done
((status == 0)) || fail "a fuzzer found a crash"
echo "PASS $TEST_NAME"
