#!/usr/bin/env bash
# Runs the Python tests in the pinned venv: python/venv.sh builds it when missing and installs
# initc from this checkout; then pytest over python/tests, whose summary line ends the output.
# Exit status: pytest's, or 1 when the venv or the install failed.
#   INITC_BUILD_DIR: the build whose bin/initc makes the test programs (default build/)
#   python/tests/run.sh [PYTEST ARGS...]
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
export INITC_BUILD_DIR="${INITC_BUILD_DIR:-${BUILD_DIR:-$ROOT/build}}"
if ! VENV=$(bash "$ROOT/python/venv.sh"); then
  echo "python tests: the pinned venv could not be made or initc not installed into it" >&2
  exit 1
fi
echo "python tests: $VENV"
# From the tests' directory, so that the installed package is imported, not python/src.
cd "$HERE" && exec "$VENV/bin/python" -m pytest -p no:cacheprovider -ra "$@" "$HERE"
