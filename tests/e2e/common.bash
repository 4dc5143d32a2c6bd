# Sourced by the end-to-end scripts (not a test itself): paths, mpirun, failure reporting, a
# scratch directory.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR=$(cd "${BUILD_DIR:-$ROOT/build}" && pwd)
INITC="$BUILD_DIR/bin/initc"
TEST_NAME=$(basename "$0" .sh)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One host: Open MPI's point-to-point layer over shared memory. Left to choose, it first probes
# the network transports (UCX, libfabric): about 0.2 s of every mpirun here.
export OMPI_MCA_pml=ob1
MPIRUN=(mpirun --oversubscribe --bind-to none)
PYTHON=/usr/bin/python3

fail() {
  echo "$TEST_NAME: $*" >&2
  echo "FAIL $TEST_NAME" >&2
  exit 1
}

WORK=$(mktemp -d "/tmp/initc-$TEST_NAME-XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The number of devices of a mesh text such as dp=2,tp=2.
mesh_size() { echo "$1" | tr ',' '\n' | awk -F= 'BEGIN { n = 1 } { n *= $2 } END { print n }'; }

# fails_cleanly NAME PATTERN CMD...: CMD exits non-zero without a signal or a crash report, and
# its stderr (left in $WORK/err.txt for the caller's own checks) holds PATTERN (grep -E).
fails_cleanly() {
  local name=$1 pattern=$2
  shift 2
  local rc=0
  "$@" >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
  ((rc != 0)) || fail "$name: succeeded: $*"
  ((rc < 128)) || fail "$name: killed by signal $((rc - 128)): $(head -c 800 "$WORK/err.txt")"
  if grep -qE "Sanitizer|runtime error:|LLVM ERROR|Stack dump|PLEASE submit|terminate called|core dumped" \
    "$WORK/err.txt"; then
    fail "$name: crashed: $(head -c 800 "$WORK/err.txt")"
  fi
  grep -qE -- "$pattern" "$WORK/err.txt" ||
    fail "$name: expected /$pattern/ in: $(head -c 800 "$WORK/err.txt")"
}

# no_output PATH: nothing under PATH, and no temporary file left next to it.
no_output() {
  [[ ! -e $1 ]] || fail "$1 exists after a failure"
  local leftovers
  leftovers=$(find "$(dirname "$1")" -maxdepth 1 -name "*.tmp-*" | head -3)
  [[ -z $leftovers ]] || fail "temporary files left: $leftovers"
}
