#!/usr/bin/env bash
# Builds initc and runs every test: unit (GoogleTest via ctest), IR (lit + FileCheck) and
# end to end (tests/e2e/*.sh, MPI runs). Ends with one line: N passed, N failed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/tools/setup.sh"
install_missing_packages
configure_and_build || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
# Count failures instead of stopping at the first one (setup.sh runs with -e).
set +e

RESULTS="$BUILD_DIR/test-results"
rm -rf "$RESULTS" && mkdir -p "$RESULTS"
passed=0
failed=0
failures=()

echo "== unit tests (ctest)"
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

echo "== IR tests (lit)"
python3 /usr/lib/llvm-19/build/utils/lit/lit.py -v "$BUILD_DIR/tests/lit" >"$RESULTS/lit.log" 2>&1
lit_passed=$(grep -oE "^ *Passed *: *[0-9]+" "$RESULTS/lit.log" | grep -oE "[0-9]+$" || echo 0)
lit_failed=$(grep -oE "^ *Failed *: *[0-9]+" "$RESULTS/lit.log" | grep -oE "[0-9]+$" || echo 0)
lit_unresolved=$(grep -oE "^ *Unresolved *: *[0-9]+" "$RESULTS/lit.log" | grep -oE "[0-9]+$" || echo 0)
echo "lit: $lit_passed passed, $((lit_failed + lit_unresolved)) failed"
((passed += lit_passed))
((failed += lit_failed + lit_unresolved))
((lit_failed + lit_unresolved == 0)) || { failures+=("lit: see $RESULTS/lit.log"); grep -E "^(FAIL|UNRESOLVED):" "$RESULTS/lit.log"; }
if ((lit_passed == 0 && lit_failed == 0)); then ((failed += 1)); failures+=("lit: ran no test"); fi

echo "== end-to-end tests"
for script in "$ROOT"/tests/e2e/*.sh; do
  name=$(basename "$script" .sh)
  start=$(date +%s)
  if BUILD_DIR="$BUILD_DIR" bash "$script" >"$RESULTS/$name.log" 2>&1; then
    ((passed += 1)); echo "PASS $name ($(( $(date +%s) - start )) s)"
  else
    ((failed += 1)); failures+=("$name: see $RESULTS/$name.log")
    echo "FAIL $name ($(( $(date +%s) - start )) s); last lines:"; tail -15 "$RESULTS/$name.log" | sed 's/^/    /'
  fi
done

# The Python tests (python/tests) in the pinned venv, made when missing: a venv or install that
# fails counts as a failure, never as a skip.
echo "== Python tests (pytest)"
start=$(date +%s)
INITC_BUILD_DIR="$BUILD_DIR" bash "$ROOT/python/tests/run.sh" >"$RESULTS/python.log" 2>&1
python_status=$?
python_summary=$(grep -E "^=+ .* in [0-9.]+s" "$RESULTS/python.log" | tail -1)
python_passed=$(grep -oE "[0-9]+ passed" <<<"$python_summary" | grep -oE "[0-9]+" || echo 0)
python_failed=0
for n in $(grep -oE "[0-9]+ (failed|errors?)" <<<"$python_summary" | grep -oE "^[0-9]+"); do
  ((python_failed += n))
done
# No venv, a failed install, a crash or no test run: one failure.
((python_status == 0 && python_passed > 0 || python_failed > 0)) || python_failed=1
echo "python: $python_passed passed, $python_failed failed ($(( $(date +%s) - start )) s)${python_summary:+: $python_summary}"
((passed += python_passed))
((failed += python_failed))
((python_failed == 0)) || { failures+=("python: see $RESULTS/python.log"); tail -15 "$RESULTS/python.log" | sed 's/^/    /'; }

if ((${#failures[@]})); then
  echo "== failures"
  printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
((failed == 0))
