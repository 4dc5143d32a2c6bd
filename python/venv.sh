#!/usr/bin/env bash
# The pinned Python test environment: builds the venv of requirements-test.txt and, without
# their dependencies, requirements-torchtitan.txt (that file says why) when it is missing (under
# ${XDG_CACHE_HOME:-$HOME/.cache}/initc/venv-<first 12 hex of the sha256 of both files>, made
# under a temporary name and renamed when complete, so that a venv there is always whole),
# installs the initc package from this checkout into it (incrementally: the CMake build directory
# is kept in the cache, outside the checkout) and prints the venv's path on stdout.
#   python/venv.sh [--no-install]    INITC_PYTHON: the Python to build it with (default python3)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REQUIREMENTS="$HERE/requirements-test.txt"
NO_DEPS="$HERE/requirements-torchtitan.txt"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/initc"
KEY=$(cat "$REQUIREMENTS" "$NO_DEPS" | sha256sum | cut -c1-12)
VENV="$CACHE/venv-$KEY"
PYTHON="${INITC_PYTHON:-python3}"

log() { echo "venv.sh: $*" >&2; }

build_venv() {
  mkdir -p "$CACHE"
  tmp=$(mktemp -d "$CACHE/.venv-$KEY.tmp-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  log "building $VENV from $REQUIREMENTS and $NO_DEPS"
  "$PYTHON" -m venv --prompt "venv-$KEY" "$tmp"
  "$tmp/bin/python" -m pip install -q --disable-pip-version-check -r "$REQUIREMENTS" >&2
  "$tmp/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$NO_DEPS" >&2
  # A venv names its own path in its scripts; they must name the final one.
  grep -lIs "$tmp" "$tmp"/bin/* | xargs -r sed -i "s|$tmp|$VENV|g"
  chmod 755 "$tmp"
  if mv -T "$tmp" "$VENV" 2>/dev/null; then
    trap - EXIT
  else
    log "another run built $VENV first; using it"
  fi
}

[[ -x "$VENV/bin/python" ]] || build_venv

if [[ ${1:-} != --no-install ]]; then
  # One build directory per checkout and venv: CMake refuses a cache made for another source.
  checkout_key=$(printf '%s' "$HERE" | sha256sum | cut -c1-8)
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
    --no-deps --force-reinstall -C build-dir="$CACHE/build-$KEY-$checkout_key" "$HERE" >&2
fi
echo "$VENV"
