#!/usr/bin/env bash
# Jobs that go wrong around the files: ranks of one job started with different programs,
# different --out or different --discard/--overwrite, several writers of one rank, `--rank` under mpirun, assemble asked to write
# over the checkpoint it reads or to read one half written or corrupt, signals while a file is written, inputs that are not regular
# files, a damaged index, a missing shard that owns no slice, and the modes files get. Each
# case: one clear message, a non-zero exit without a crash, nothing left under a final name that
# is not complete.
source "$(dirname "$0")/../common.bash"
cd "$WORK"
CONFIG="$ROOT/tests/e2e/configs/llama_uneven.json"
cases=0

# expect_error NAME PATTERN CMD...: CMD fails cleanly with PATTERN (grep -E) in exactly one
# message of initc or prog/init (mpirun adds its own banner around it).
expect_error() {
  fails_cleanly "$@"
  local name=$1 messages
  messages=$(grep -E "^(init|initc)(: | \(rank)" "$WORK/err.txt" | grep -cvE "[0-9]+ problems? found$" || true)
  ((messages == 1)) || fail "$name: $messages messages, expected one: $(head -c 800 "$WORK/err.txt")"
  cases=$((cases + 1))
}

"$INITC" import hf "$CONFIG" -o f32.mlir
"$INITC" import hf "$CONFIG" --seed 1 -o s1.mlir
"$INITC" compile f32.mlir --mesh dp=2 --shard fsdp -o p2 >/dev/null
"$INITC" compile s1.mlir --mesh dp=2 --shard fsdp -o p2s1 >/dev/null
"${MPIRUN[@]}" -np 2 p2/init --layout ranks --out ref --quiet || fail "reference run"

#===------------------------------------------------------------------------===#
# The ranks of one job disagree: programs, output directories; --rank under mpirun
#===------------------------------------------------------------------------===#
expect_error "ranks run different programs" \
  "init: error \(rank 1\): ranks run different programs: this rank runs .*/p2s1/init \(program id [0-9a-f]+\), rank 0 runs .*/p2/init \(program id [0-9a-f]+\): start every rank of the job with the same prog/init" \
  "${MPIRUN[@]}" -np 1 p2/init --layout ranks --out ck : -np 1 p2s1/init --layout ranks --out ck
[[ ! -e ck ]] || fail "different programs wrote $(ls -A ck)"
expect_error "ranks write to different directories" \
  "init: error \(rank 1\): ranks write to different directories: this rank has --out $WORK/cb, rank 0 has --out $WORK/ca: give every rank the same --out" \
  "${MPIRUN[@]}" -np 1 p2/init --layout ranks --out ca : -np 1 p2/init --layout ranks --out cb
[[ ! -e ca && ! -e cb ]] || fail "different --out directories were written"
expect_error "ranks started with different options" \
  "init: error \(rank 1\): ranks were started with different options: this rank has --out --overwrite, rank 0 has --out: start every rank of the job with the same options" \
  "${MPIRUN[@]}" -np 1 p2/init --layout ranks --out cd : -np 1 p2/init --layout ranks --out cd --overwrite
[[ ! -e cd ]] || fail "different --overwrite wrote $(ls -A cd)"
expect_error "some ranks discard" \
  "init: error \(rank 1\): ranks were started with different options: this rank has --out, rank 0 has --discard" \
  "${MPIRUN[@]}" -np 1 p2/init --layout ranks --discard : -np 1 p2/init --layout ranks --out ce
[[ ! -e ce ]] || fail "a rank wrote while rank 0 discarded: $(ls -A ce)"
# The same directory spelled two ways is one directory.
"${MPIRUN[@]}" -np 1 p2/init --layout ranks --out same --quiet : -np 1 p2/init --layout ranks --out "./same//" --quiet ||
  fail "one --out spelled two ways"
cmp same/index.json ref/index.json || fail "one --out spelled two ways: another index"
expect_error "--rank under mpirun" \
  "init: error: --rank 1 computes one rank alone, but the launcher started 4 processes, which would all write rank 1's file" \
  "${MPIRUN[@]}" -np 4 p2/init --layout ranks --rank 1 --out cc
[[ ! -e cc ]] || fail "--rank under mpirun wrote $(ls -A cc)"
# Arguments that stop one rank before MPI is up stop the whole job: that rank explains, and the
# others do not wait for it in MPI_Init.
expect_error "--rank on one rank under mpirun" \
  "init: error \(rank 1\): --rank 1 computes one rank alone, but the launcher started 2 processes" \
  timeout 120 "${MPIRUN[@]}" -np 1 p2/init --layout ranks --out cf : -np 1 p2/init --layout ranks --rank 1 --out cf
expect_error "an unknown option on one rank" \
  "init: error \(rank 1\): The following argument was not expected: --bogus" \
  timeout 120 "${MPIRUN[@]}" -np 1 p2/init --layout ranks --out cf : -np 1 p2/init --layout ranks --out cf --bogus
expect_error "no --out on one rank" "init: error \(rank 1\): --out DIR is required" \
  timeout 120 "${MPIRUN[@]}" -np 1 p2/init --layout ranks --out cf : -np 1 p2/init
expect_error "--help on one rank" \
  "init: error \(rank 1\): this rank was given --help and the others were not" \
  timeout 120 "${MPIRUN[@]}" -np 1 p2/init --layout ranks --out cf : -np 1 p2/init --help
[[ ! -e cf ]] || fail "a job stopped before it started wrote $(ls -A cf)"
# --out that is empty, or a link to nothing.
expect_error "an empty --out" "init: error: --out: must not be empty" p2/init --layout ranks --rank 1 --out ""
expect_error "an option as --out" "init: error: --out: '--discard' looks like an option, not a value: give the value first \(./--discard for a directory of that name\)" p2/init --layout ranks --rank 1 --out --discard
[ ! -e ./--discard ] || fail "--out --discard made a directory"
expect_error "an option as --target-cpu" "init: error: --target-cpu: '--quiet' looks like an option, not a value: give the value first$" p2/init --layout ranks --rank 1 --out cq --target-cpu --quiet
expect_error "--discard with --out" "init: error: --discard writes nothing, so --out cq would stay empty: drop --discard to write the checkpoint, or --out to time the run" p2/init --layout ranks --rank 1 --out cq --discard
[ ! -e cq ] || fail "a refused run made its --out"
ln -s nowhere dangling
expect_error "a dangling --out link" \
  "init: error \(rank 1\): dangling is a symbolic link to nothing \(or to a file\): make it name a directory" \
  p2/init --layout ranks --rank 1 --out dangling
[[ -L dangling && ! -e nowhere ]] || fail "a dangling --out link was changed"
echo "ok ranks that disagree"

# Several writers of one rank at once: none removes another's temporary (each holds a lock on
# its own), and every one of them completes the same file.
for round in 1 2 3 4 5; do
  rm -rf cc
  pids=()
  for w in 1 2 3; do
    p2/init --layout ranks --rank 1 --out cc --quiet 2>"writer$w.txt" &
    pids+=($!)
  done
  for w in 0 1 2; do
    wait "${pids[$w]}" || fail "writer $((w + 1)) of rank 1 failed (round $round): $(cat "writer$((w + 1)).txt")"
  done
  [[ $(ls -A cc) == rank-00001-of-00002.safetensors ]] || fail "writers left $(ls -A cc)"
  cmp cc/rank-00001-of-00002.safetensors ref/rank-00001-of-00002.safetensors || fail "writers' file differs"
done
echo "ok concurrent writers of one rank"

#===------------------------------------------------------------------------===#
# assemble: never over the checkpoint it reads; every shard checked, owner of a slice or not
#===------------------------------------------------------------------------===#
cp -r ref ca
for out in ca/rank-00000-of-00002.safetensors ca/index.json ./ca//index.json; do
  expect_error "assemble -o $out" "initc: error: -o $out is the checkpoint's own (rank-00000-of-00002.safetensors|index.json) \(in ca\): writing it would destroy the checkpoint being assembled; choose another -o" \
    "$INITC" assemble ca -o "$out"
done
cmp ca/rank-00000-of-00002.safetensors ref/rank-00000-of-00002.safetensors && cmp ca/index.json ref/index.json ||
  fail "assemble changed the checkpoint it reads"
"$INITC" verify ca >/dev/null || fail "verify after refused assembles"

"$INITC" compile f32.mlir --mesh dp=2 --shard replicated -o pr >/dev/null
"${MPIRUN[@]}" -np 2 pr/init --layout ranks --out ch --quiet || fail "replicated run"
rm ch/rank-00001-of-00002.safetensors
expect_error "assemble without a rank that owns no slice" \
  "initc: error: rank 1 \(rank-00001-of-00002.safetensors\): .*no such file: rerun .prog/init --layout ranks --rank 1 --out ch" \
  "$INITC" assemble ch -o x.safetensors
echo garbage >ch/rank-00001-of-00002.safetensors
expect_error "assemble with garbage for a rank that owns no slice" \
  "initc: error: rank 1 \(rank-00001-of-00002.safetensors\): .*not a safetensors file.*rerun .prog/init --layout ranks --rank 1 --out ch" \
  "$INITC" assemble ch -o x.safetensors
[[ ! -e x.safetensors ]] || fail "assemble wrote a model from a broken checkpoint"
echo "ok assemble"

# Into an hf directory: never inside the checkpoint; a source half written, or with a corrupt
# slice, refused by name, leaving nothing under a final name.
for out in ca ca/hf ./ca/sub/dir; do
  expect_error "assemble -o $out" "initc: error: -o $out is inside the checkpoint ca being assembled: .*choose a directory outside it" \
    "$INITC" assemble ca -o "$out"
done
[[ ! -e ca/hf && ! -e ca/sub ]] || fail "assemble wrote into the checkpoint it reads"
mkdir notes && echo mine >notes/README
expect_error "assemble into a directory of other files" \
  "initc: error: -o notes holds README, which is not a file of an hf checkpoint: choose a new or empty directory" \
  "$INITC" assemble ca -o notes
"$INITC" assemble ca -o hfo >/dev/null || fail "assemble into an hf directory"
"$INITC" assemble hfo -o hfo.safetensors >/dev/null || fail "assemble an hf directory"
"$INITC" assemble ca -o ca.safetensors >/dev/null || fail "assemble ca"
cmp ca.safetensors hfo.safetensors || fail "the hf directory holds other bytes than the checkpoint"
cp -r hfo hfh && rm hfh/initc-checkpoint.json
expect_error "assemble a half-written hf checkpoint" \
  "initc: error: hfh is an hf checkpoint not completely written: it has no initc-checkpoint.json" \
  "$INITC" assemble hfh -o hh.safetensors
no_output hh.safetensors
# A flipped bit in the embedding's last element: named by tensor, box, writer rank and file.
# assemble's record has one rank (0) that wrote each tensor whole: the box at [0, 0].
cp -r hfo hfc
read -r file rank box < <($PYTHON -c '
import json
record = json.load(open("hfc/initc-checkpoint.json"))
assert record["mesh"]["shape"] == [] and record["sums"]["ranks"] == 1, record["mesh"]
entry = record["tensors"]["model.embed_tokens.weight"]
rows, cols = entry["shape"]
last = {"rank": 0, "offset": [0, 0]}
at = entry["offset"] + {"F32": 4, "BF16": 2}[entry["dtype"]] * rows * cols - 1
with open("hfc/" + entry["file"], "r+b") as f:
    f.seek(at)
    byte = f.read(1)[0] ^ 4
    f.seek(at)
    f.write(bytes([byte]))
print(entry["file"], last["rank"], "\\[%d, %d\\]" % tuple(last["offset"]))')
expect_error "assemble an hf checkpoint with a corrupt slice" \
  "initc: error: model.embed_tokens.weight box at $box by rank $rank \($file\): checksum mismatch, the file is corrupt: rerun .prog/init --layout hf --rank $rank --out hfc" \
  "$INITC" assemble hfc -o hfc-out
[[ -z $(ls -A hfc-out) ]] || fail "assemble left $(ls -A hfc-out) from a corrupt checkpoint"
echo "ok assemble into and from hf directories"

#===------------------------------------------------------------------------===#
# An edited index is the damaged file, and the rerun it names restores it
#===------------------------------------------------------------------------===#
cp -r ref cf
sed -i 's/"dtype":"F32"/"dtype":"BF16"/' cf/index.json
expect_error "verify an edited index" \
  "initc: error: cf/index.json: the contents do not match its \"checksum\" .*: index.json was edited or is damaged, the shards are not at fault: rerun the whole job" \
  "$INITC" verify cf
expect_error "assemble an edited index" "index.json was edited or is damaged" "$INITC" assemble cf -o cf.safetensors
[[ ! -e cf.safetensors ]] || fail "assemble wrote a model from an edited index"
"${MPIRUN[@]}" -np 2 p2/init --layout ranks --out cf --overwrite --quiet || fail "the rerun the message names"
cmp cf/index.json ref/index.json || fail "the rerun did not restore index.json"
echo "ok edited index"

#===------------------------------------------------------------------------===#
# A signal while a file is written: the temporary goes, the exit status names the signal
#===------------------------------------------------------------------------===#
cat >big.mlir <<'EOF'
init.seed 3
init.param @a : tensor<4096x4096xf32> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<4096x4096xf32>
  init.yield %0 : tensor<4096x4096xf32>
}
init.param @b : tensor<4096x4096xbf16> {
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<4096x4096xbf16>
  init.yield %0 : tensor<4096x4096xbf16>
}
EOF
"$INITC" compile big.mlir -o big >/dev/null
"$INITC" compile big.mlir --mesh dp=2 --shard fsdp -o big2 >/dev/null
# signal_when_written SIGNAL DIR PREFIX CMD...: runs CMD, sends SIGNAL to it as soon as a file
# named PREFIX* appears in DIR, and prints CMD's exit status as a shell shows it (128 + N for a
# signal; 0 when CMD ended on its own first), or "finished" when CMD ended before the file
# appeared. CMD starts with SIGNAL's default action whatever this script inherited (a
# non-interactive shell starts its background jobs with SIGINT ignored), or with it ignored, as
# nohup leaves SIGHUP, when IGNORED=1.
signal_when_written() {
  $PYTHON - "$@" <<'EOF'
import os, signal, subprocess, sys, time
sig, folder, prefix, cmd = getattr(signal, sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
action = signal.SIG_IGN if os.environ.get("IGNORED") == "1" else signal.SIG_DFL
proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open("signal.log", "w"),
                        preexec_fn=None if sig == signal.SIGKILL else lambda: signal.signal(sig, action))
deadline = time.monotonic() + 300
while proc.poll() is None and time.monotonic() < deadline:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        names = []
    if any(n.startswith(prefix) for n in names):
        proc.send_signal(sig)
        rc = proc.wait()
        print(128 - rc if rc < 0 else rc)
        sys.exit(0)
proc.kill()
proc.wait()
print("finished")
EOF
}
# Each is tried again when the run ended before the signal could stop it (a loaded machine can
# hold the loop above back for a whole write).
mkdir -p sig
for attempt in 1 2 3; do
  rm -rf sig/ckpt
  status=$(signal_when_written SIGINT sig/ckpt .rank-00000-of-00001.safetensors.tmp- big/init --layout ranks --out sig/ckpt --quiet)
  [[ $status == finished || $status == 0 ]] || break
done
[[ $status == 130 ]] || fail "prog/init after SIGINT: status $status, expected 130: $(cat signal.log)"
[[ -z $(ls -A sig/ckpt) ]] || fail "SIGINT left in the checkpoint: $(ls -A sig/ckpt)"
big/init --layout ranks --out sig/ckpt --quiet || fail "big run"
# An ignored signal stays ignored (nohup): the run goes on and completes its checkpoint.
status=$(IGNORED=1 signal_when_written SIGHUP nohup .rank-00000-of-00001.safetensors.tmp- big/init --layout ranks --out nohup --quiet)
[[ $status == 0 || $status == finished ]] || fail "prog/init with SIGHUP ignored: status $status: $(cat signal.log)"
[[ $(ls -A nohup | tr '\n' ' ') == "index.json rank-00000-of-00001.safetensors " ]] ||
  fail "prog/init with SIGHUP ignored wrote: $(ls -A nohup)"
cmp -s nohup/rank-00000-of-00001.safetensors sig/ckpt/rank-00000-of-00001.safetensors ||
  fail "prog/init with SIGHUP ignored wrote other bytes"
for attempt in 1 2 3; do
  status=$(signal_when_written SIGTERM sig .model.safetensors.tmp- "$INITC" assemble sig/ckpt -o sig/model.safetensors)
  [[ $status == finished || $status == 0 ]] || break
  rm -f sig/model.safetensors
done
[[ $status == 143 ]] || fail "assemble after SIGTERM: status $status, expected 143: $(cat signal.log)"
[[ $(ls -A sig) == ckpt ]] || fail "SIGTERM left: $(ls -A sig)"
# SIGKILL leaves its temporary, as large as the model: the next assemble to that name removes it.
for attempt in 1 2 3; do
  status=$(signal_when_written SIGKILL sig .model.safetensors.tmp- "$INITC" assemble sig/ckpt -o sig/model.safetensors)
  [[ $status == finished || $status == 0 ]] || break
  rm -f sig/model.safetensors
done
[[ $status == 137 ]] || fail "assemble after SIGKILL: status $status, expected 137: $(cat signal.log)"
ls -A sig | grep -q "^\.model\.safetensors\.tmp-" || fail "SIGKILL left no temporary: $(ls -A sig)"
"$INITC" assemble sig/ckpt -o sig/model.safetensors >/dev/null 2>&1 || fail "assemble after a killed one"
[[ $(ls -A sig | tr '\n' ' ') == "ckpt model.safetensors " ]] || fail "assemble left its killed run's temporary: $(ls -A sig)"
rm sig/model.safetensors
# Under mpirun: mpirun passes SIGTERM on to the ranks, which remove their temporaries.
for attempt in 1 2 3; do
  rm -rf sig/ckpt2
  status=$(signal_when_written SIGTERM sig/ckpt2 .rank-00001-of-00002.safetensors.tmp- "${MPIRUN[@]}" -np 2 big2/init --layout ranks --out sig/ckpt2 --quiet)
  [[ $status == finished || $status == 0 ]] || break
done
[[ $status != finished && $status != 0 ]] || fail "mpirun after SIGTERM: status $status"
[[ -z $(ls -A sig/ckpt2 | grep tmp) ]] || fail "SIGTERM to mpirun left: $(ls -A sig/ckpt2)"
# A compile interrupted while generating code leaves neither its program directory under
# construction nor its object files.
mkdir -p sig/tmp
for attempt in 1 2 3; do
  status=$(TMPDIR=$PWD/sig/tmp signal_when_written SIGINT sig/tmp initc-kernels- "$INITC" compile big.mlir -o sig/prog)
  [[ $status == finished || $status == 0 ]] || break
  rm -rf sig/prog
done
[[ $status == 130 ]] || fail "compile after SIGINT: status $status, expected 130: $(cat signal.log)"
[[ $(ls -A sig | tr '\n' ' ') == "ckpt ckpt2 tmp " && -z $(ls -A sig/tmp) ]] ||
  fail "SIGINT to compile left: $(ls -A sig sig/tmp)"
echo "ok signals"

echo "$cases cases"
echo "PASS $TEST_NAME"
