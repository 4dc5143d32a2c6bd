# Sourced by the launcher tests of this directory (not a test itself): what they check of a
# checkpoint and of a failed launch.

# same_as REF DIR WHAT: DIR holds REF's files, byte for byte, and nothing else.
same_as() {
  diff -r "$1" "$2" >/dev/null || fail "$3: $2 differs from mpirun's $1: $(diff -rq "$1" "$2" | head -3)"
  echo "ok $3: bytewise mpirun's"
}

# one_message [-F] NAME CODE RC PATTERN: the run that ended with exit code RC, its stderr in
# $WORK/err.txt, was to exit with CODE without a crash, saying PATTERN (grep -E, or with -F a
# fixed string) in exactly one message of prog/init, and to leave no $WORK/bad.
one_message() {
  local mode=-E
  [[ $1 == -F ]] && { mode=-F; shift; }
  local name=$1 code=$2 rc=$3 pattern=$4 err=$WORK/err.txt messages
  ((rc == code)) || fail "$name: exit code $rc, expected $code: $(head -c 800 "$err")"
  grep -qE "Sanitizer|terminate called|core dumped|Segmentation|Illegal instruction" "$err" &&
    fail "$name: crashed: $(head -c 800 "$err")"
  messages=$(grep -c "^init: error" "$err" || true)
  ((messages == 1)) || fail "$name: $messages messages, expected one: $(head -c 800 "$err")"
  grep -q "$mode" -- "$pattern" "$err" || fail "$name: expected '$pattern' in: $(head -c 800 "$err")"
  [[ ! -e $WORK/bad ]] || fail "$name: wrote $(ls -A "$WORK/bad")"
  echo "ok $name: $(grep "^init: error" "$err" | head -c 220)"
}
