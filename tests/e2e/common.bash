# Sourced by the end-to-end scripts (not a test itself): paths, mpirun, failure reporting, a
# scratch directory.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR=$(cd "${BUILD_DIR:-$ROOT/build}" && pwd)
INITC="$BUILD_DIR/bin/initc"
TEST_NAME=$(basename "$0" .sh)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
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
