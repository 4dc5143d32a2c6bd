#!/usr/bin/env bash
# Builds initc and runs every test: unit (GoogleTest via ctest), IR (lit + FileCheck), end to
# end (tests/e2e/<group>/*.sh, MPI runs) and Python (python/tests), the last two two at a time.
# Ends with each step's time and one line: N passed, N failed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
# Count failures instead of stopping at the first one (setup.sh runs with -e).
set +e

RESULTS="$BUILD_DIR/test-results"
rm -rf "$RESULTS" && mkdir -p "$RESULTS"
passed=0
failed=0
failures=()
steps=()
suite_start=$(date +%s)

# record_step NAME SECONDS RESULT: one row of the closing table.
record_step() { steps+=("$(printf '  %-36s %6d s  %s' "$1" "$2" "$3")"); }
# timed_step NAME CMD...: runs CMD and records how long it took; returns its status.
timed_step() {
  local name=$1 start rc=0
  shift
  start=$(date +%s)
  "$@" || rc=$?
  record_step "$name" $(($(date +%s) - start)) "$( ((rc == 0)) && echo ok || echo "failed ($rc)")"
  return $rc
}
print_steps() {
  echo "== time per step"
  printf '%s\n' "${steps[@]}"
  printf '  %-36s %6d s\n' "total" $(($(date +%s) - suite_start))
}

install_missing_packages
# The pinned Python venv is gigabytes from PyPI, bound by the network: made in the background
# while the trees build and the tests run; the Python step waits for it. (Disowned, so that the
# end-to-end lanes' `wait -n` never takes it for one of theirs.)
mkdir -p "$BUILD_DIR"
VENV_DONE="$BUILD_DIR/python-venv.status"
rm -f "$VENV_DONE"
venv_start=$(date +%s)
( bash "$ROOT/python/venv.sh" --no-install >"$BUILD_DIR/python-venv.log" 2>&1
  echo "$? $(($(date +%s) - venv_start))" >"$VENV_DONE.tmp" && mv "$VENV_DONE.tmp" "$VENV_DONE" ) &
disown
if ! timed_step "build" configure_and_build; then
  echo "build failed"; print_steps; echo "0 passed, 1 failed"; exit 1
fi
# The instrumented trees, each built once here, before the tests that share them run side by
# side (a test that finds its tree built only checks it is up to date). A failed build fails
# those tests, so it is not counted here.
echo "== building the sanitized trees"
timed_step "build: sanitizers and fuzzers (clang ASan+UBSan)" build_sanitized_tree ||
  echo "building $SANITIZED_BUILD_DIR failed: see $SANITIZED_BUILD_DIR/build.log"
timed_step "build: TSan runtime" build_thread_sanitized_runtime ||
  echo "building $TSAN_BUILD_DIR failed: see $TSAN_BUILD_DIR/build.log"
timed_step "build: AArch64 runtime (cross)" build_aarch64_runtime ||
  echo "building $AARCH64_BUILD_DIR failed: see $AARCH64_BUILD_DIR/build.log"

echo "== unit tests (ctest)"
start=$(date +%s)
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 >"$RESULTS/unit.log" 2>&1
summary=$(grep -E "tests passed, [0-9]+ tests failed out of" "$RESULTS/unit.log" | tail -1)
echo "${summary:-no ctest summary: see $RESULTS/unit.log}"
if [[ $summary =~ ([0-9]+)\ tests\ failed\ out\ of\ ([0-9]+) ]]; then
  ((failed += BASH_REMATCH[1]))
  ((passed += BASH_REMATCH[2] - BASH_REMATCH[1]))
  ((BASH_REMATCH[1] == 0)) || { failures+=("unit: see $RESULTS/unit.log"); grep -E "^\s+[0-9]+ - .*\(Failed\)" "$RESULTS/unit.log"; }
else
  ((failed += 1)); failures+=("unit: ctest did not run")
fi
record_step "unit tests (ctest)" $(($(date +%s) - start)) "${summary:-no summary}"

echo "== IR tests (lit)"
start=$(date +%s)
python3 /usr/lib/llvm-19/build/utils/lit/lit.py -v "$BUILD_DIR/tests/lit" >"$RESULTS/lit.log" 2>&1
lit_passed=$(grep -oE "^ *Passed *: *[0-9]+" "$RESULTS/lit.log" | grep -oE "[0-9]+$" || echo 0)
lit_failed=$(grep -oE "^ *Failed *: *[0-9]+" "$RESULTS/lit.log" | grep -oE "[0-9]+$" || echo 0)
lit_unresolved=$(grep -oE "^ *Unresolved *: *[0-9]+" "$RESULTS/lit.log" | grep -oE "[0-9]+$" || echo 0)
echo "lit: $lit_passed passed, $((lit_failed + lit_unresolved)) failed"
((passed += lit_passed))
((failed += lit_failed + lit_unresolved))
((lit_failed + lit_unresolved == 0)) || { failures+=("lit: see $RESULTS/lit.log"); grep -E "^(FAIL|UNRESOLVED):" "$RESULTS/lit.log"; }
if ((lit_passed == 0 && lit_failed == 0)); then ((failed += 1)); failures+=("lit: ran no test"); fi
record_step "IR tests (lit)" $(($(date +%s) - start)) "$lit_passed passed, $((lit_failed + lit_unresolved)) failed"

echo "== end-to-end and Python tests (two at a time)"
# Every script of every group, and the Python tests (python/tests, pytest in the pinned venv) as
# one more job, longest first by the last run's times (tests/e2e/*/ needs no list here), so that
# the two lanes end together; before any run, the known long ones first, in LONG_FIRST's order.
# pytest runs beside the scripts: alone, it left 35% of the two cores idle over its 11 minutes
# (vmstat during a cold run), the scripts two at a time 5%.
E2E_TIMES="$BUILD_DIR/e2e-times.txt"
PYTHON_JOB=python/pytest
LONG_FIRST=("$PYTHON_JOB" sanitizers/sanitizers fuzzing/fuzz capture/capture_models
  capture/capture_values sanitizers/thread_sanitizer)
e2e_order() {
  local id secs
  { for script in "$ROOT"/tests/e2e/*/*.sh; do
      id=${script#"$ROOT"/tests/e2e/}
      echo "${id%.sh}"
    done
    echo "$PYTHON_JOB"
  } | while read -r id; do
    secs=$(awk -v id="$id" '$2 == id { print $1 }' "$E2E_TIMES" 2>/dev/null)
    if [[ -z $secs ]]; then
      secs=0
      for k in "${!LONG_FIRST[@]}"; do [[ ${LONG_FIRST[k]} == "$id" ]] && secs=$((100000 - k)); done
    fi
    echo "$secs $id"
  done | sort -k1,1nr -k2 | cut -d' ' -f2
}
mapfile -t e2e_ids < <(e2e_order)
e2e_start=$(date +%s)

# The Python tests: once the venv made in the background is there (a venv or install that
# fails counts as a failure, never as a skip).
python_tests() {
  until [[ -e $VENV_DONE ]]; do sleep 2; done
  INITC_BUILD_DIR="$BUILD_DIR" bash "$ROOT/python/tests/run.sh"
}
# count_python RC SECONDS: adds pytest's own counts (each test, not the job) to the totals.
count_python() {
  local status=$1 secs=$2 summary venv_status venv_seconds python_passed python_failed=0 n
  read -r venv_status venv_seconds <"$VENV_DONE"
  record_step "Python venv (in the background)" "$venv_seconds" \
    "$( ((venv_status == 0)) && echo ok || echo "failed: see $BUILD_DIR/python-venv.log")"
  summary=$(grep -E "^=+ .* in [0-9.]+s" "$RESULTS/python.log" | tail -1)
  python_passed=$(grep -oE "[0-9]+ passed" <<<"$summary" | grep -oE "[0-9]+" || echo 0)
  for n in $(grep -oE "[0-9]+ (failed|errors?)" <<<"$summary" | grep -oE "^[0-9]+"); do
    ((python_failed += n))
  done
  # No venv, a failed install, a crash or no test run: one failure.
  ((status == 0 && python_passed > 0 || python_failed > 0)) || python_failed=1
  echo "python: $python_passed passed, $python_failed failed ($secs s)${summary:+: $summary}"
  ((passed += python_passed))
  ((failed += python_failed))
  ((python_failed == 0)) || { failures+=("python: see $RESULTS/python.log"); tail -15 "$RESULTS/python.log" | sed 's/^/    /'; }
  record_step "Python tests (pytest)" "$secs" "$python_passed passed, $python_failed failed"
}

declare -A job_id=() job_start=()
new_times=()
# finish_one: waits for any running job and reports it.
finish_one() {
  local pid rc=0 id secs log
  wait -n -p pid || rc=$?
  id=${job_id[$pid]}
  secs=$(($(date +%s) - job_start[$pid]))
  log="$RESULTS/${id//\//-}.log"
  unset "job_id[$pid]" "job_start[$pid]"
  new_times+=("$secs $id")
  if [[ $id == "$PYTHON_JOB" ]]; then
    count_python "$rc" "$secs"
  elif ((rc == 0)); then
    ((passed += 1)); echo "PASS $id ($secs s)"; record_step "$id" "$secs" ok
  else
    ((failed += 1)); failures+=("$id: see $log")
    echo "FAIL $id ($secs s); last lines:"; tail -15 "$log" | sed 's/^/    /'
    record_step "$id" "$secs" FAILED
  fi
}
for id in "${e2e_ids[@]}"; do
  while ((${#job_id[@]} >= 2)); do finish_one; done
  if [[ $id == "$PYTHON_JOB" ]]; then
    python_tests >"$RESULTS/python.log" 2>&1 &
  else
    BUILD_DIR="$BUILD_DIR" bash "$ROOT/tests/e2e/$id.sh" >"$RESULTS/${id//\//-}.log" 2>&1 &
  fi
  job_id[$!]=$id
  job_start[$!]=$(date +%s)
done
while ((${#job_id[@]})); do finish_one; done
record_step "end to end and Python, wall clock" $(($(date +%s) - e2e_start)) \
  "${#e2e_ids[@]} jobs, 2 at a time"
printf '%s\n' "${new_times[@]}" >"$E2E_TIMES"

if ((${#failures[@]})); then
  echo "== failures"
  printf '  %s\n' "${failures[@]}"
fi
print_steps
echo "$passed passed, $failed failed"
((failed == 0))
