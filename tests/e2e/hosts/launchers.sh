#!/usr/bin/env bash
# prog/init started without MPI: by torchrun (the pinned venv's, --no-python; one agent, and two
# agents of 2 workers each meeting by c10d rendezvous), and by a plain
# environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT per process). Each checkpoint, hf and
# dcp, is bytewise mpirun's. Then what goes wrong, each with one message and exit code 1 or 2:
# a rank killed after the ranks met (named by rank and host), two processes started as one rank,
# ranks started with different WORLD_SIZE, a job of the wrong size under torchrun, RANK/
# WORLD_SIZE without MASTER_ADDR, values that are not numbers, and under mpirun a RANK/WORLD_SIZE
# left in the environment that contradicts MPI's.
# (srun, with and without MPI, is tests/e2e/hosts/slurm.sh.)
source "$(dirname "$0")/../common.bash"
source "$(dirname "$0")/launch_checks.bash"
cd "$WORK"
CONFIG="$ROOT/tests/e2e/configs/llama_uneven.json"
unset RANK WORLD_SIZE LOCAL_RANK MASTER_ADDR MASTER_PORT INITC_RENDEZVOUS INITC_RENDEZVOUS_TIMEOUT
while read -r name; do unset "$name"; done < <(compgen -e | grep -E '^(SLURM_|TORCHELASTIC_|OMPI_COMM_WORLD|PMIX_|PMI_)')
VENV=$(bash "$ROOT/python/venv.sh" --no-install)

"$INITC" import hf "$CONFIG" --dtype bf16 --seed 7 -o m.mlir
"$INITC" compile m.mlir --mesh dp=2,tp=2 --shard fsdp+tp -o prog >/dev/null
"${MPIRUN[@]}" -np 4 prog/init --out ref --quiet || fail "mpirun reference run"
"${MPIRUN[@]}" -np 4 prog/init --layout dcp --out ref-dcp --quiet || fail "mpirun dcp reference run"

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}


# env_launch N PORT CMD...: starts CMD as ranks 0..N-1 of a plain environment launch and waits
# for all; the highest exit code is returned, every rank's stderr is in err.txt.
env_launch() {
  local n=$1 port=$2 r pids=() rc=0 one
  shift 2
  : >err.txt
  for ((r = 0; r < n; ++r)); do
    RANK=$r WORLD_SIZE=$n MASTER_ADDR=localhost MASTER_PORT=$port "$@" 2>>err.txt &
    pids+=($!)
  done
  for r in "${pids[@]}"; do
    one=0
    wait "$r" || one=$?
    ((one > rc)) && rc=$one
  done
  return $rc
}

env_launch 4 "$(free_port)" prog/init --out env --quiet || fail "env launch: $(cat err.txt)"
same_as ref env "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT launch of 4"
env_launch 4 "$(free_port)" prog/init --layout dcp --out env-dcp --quiet || fail "env launch dcp: $(cat err.txt)"
same_as ref-dcp env-dcp "the same with --layout dcp"
# --standalone: torchrun picks a free port and holds MASTER_PORT with its own store.
"$VENV/bin/torchrun" --standalone --nproc-per-node 4 --no-python prog/init --out torchrun --quiet \
  2>torchrun.err || fail "torchrun: $(tail -5 torchrun.err)"
same_as ref torchrun "torchrun --standalone --nproc-per-node 4 --no-python prog/init"
# Two torchrun agents ("nodes") of 2 workers each, meeting by c10d rendezvous.
rdzv=$(free_port)
pids=()
for node in 0 1; do
  "$VENV/bin/torchrun" --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d \
    --rdzv-endpoint "localhost:$rdzv" --rdzv-id "launchers-$$" --no-python \
    prog/init --out torchrun-2 --quiet 2>"torchrun-$node.err" &
  pids+=($!)
done
for node in 0 1; do
  wait "${pids[$node]}" || fail "torchrun agent $node of 2: $(tail -5 "torchrun-$node.err")"
done
same_as ref torchrun-2 "torchrun --nnodes 2 --nproc-per-node 2 (c10d rendezvous)"


# connections PORT: the established connections to PORT (ranks that reached rank 0).
connections() { ss -Htn state established "( dport = :$1 )" | wc -l; }
wait_connections() {
  local i
  for i in $(seq 300); do (($(connections "$1") >= $2)) && return 0; sleep 0.05; done
  fail "ranks did not reach rank 0 at port $1: $(cat err.txt)"
}

# A rank that dies after it reached rank 0. Rank 0 is stopped (SIGSTOP) once it listens, so that
# the others' connections and hellos wait in its kernel's queue; rank 2 is killed once all three
# hellos are there, then rank 0 goes on: it names rank 2, the others stop without a word.
port=$(free_port)
: >err.txt
pids=()
RANK=0 WORLD_SIZE=4 MASTER_ADDR=localhost MASTER_PORT=$port prog/init --out killed --quiet 2>>err.txt &
pids+=($!)
for i in $(seq 300); do ss -Hltn "( sport = :$port )" | grep -q . && break; sleep 0.05; done
kill -STOP "${pids[0]}"
for r in 1 2 3; do
  RANK=$r WORLD_SIZE=4 MASTER_ADDR=localhost MASTER_PORT=$port prog/init --out killed --quiet 2>>err.txt &
  pids+=($!)
done
# Each hello is more than its 16-byte frame header.
for i in $(seq 300); do
  (($(ss -Htn state established "( sport = :$port )" | awk '$1 > 16' | wc -l) == 3)) && break
  sleep 0.05
done
kill -9 "${pids[2]}"
wait "${pids[2]}" 2>/dev/null || true
kill -CONT "${pids[0]}"
rc=0
for r in 0 1 3; do
  one=0
  wait "${pids[$r]}" || one=$?
  ((one > rc)) && rc=$one
done
one_message "a rank killed after the ranks met" 1 $rc \
  "init: error \(rank 0\): rank 2 \(host $(hostname)\) ended before the job did"
ls killed/*.safetensors >/dev/null 2>&1 && fail "a killed job left $(ls killed)"

port=$(free_port)
rc=0
: >err.txt
# The second rank 1 comes last, so that every other rank waits at rank 0 to be told.
for r in 0 1 2 1; do
  RANK=$r WORLD_SIZE=4 MASTER_ADDR=localhost MASTER_PORT=$port INITC_RENDEZVOUS_TIMEOUT=20 \
    prog/init --out bad --quiet 2>>err.txt &
  ((r == 2)) && wait_connections "$port" 2
done
for job in $(jobs -p); do one=0; wait "$job" || one=$?; ((one > rc)) && rc=$one; done
one_message "two processes started as rank 1" 2 $rc \
  "two processes were started as rank 1 \(on $(hostname) and $(hostname)\): give each process of the job its own RANK"

port=$(free_port)
rc=0
: >err.txt
for r in 0 1; do
  RANK=$r WORLD_SIZE=$((r == 0 ? 2 : 4)) MASTER_ADDR=localhost MASTER_PORT=$port \
    INITC_RENDEZVOUS_TIMEOUT=20 prog/init --out bad --quiet 2>>err.txt &
done
for job in $(jobs -p); do one=0; wait "$job" || one=$?; ((one > rc)) && rc=$one; done
one_message "ranks started with different WORLD_SIZE" 2 $rc \
  "ranks disagree on the size of the job: rank 1 \($(hostname)\) was started as one of 4 ranks, rank 0 \($(hostname)\) as one of 2"

rc=0
"$VENV/bin/torchrun" --standalone --nproc-per-node 2 --no-python prog/init --out bad --quiet \
  >/dev/null 2>err.txt || rc=$?
# torchrun's own exit code is 1 whatever its workers' were; their message is the point.
one_message "a torchrun job of 2 for a mesh of 4" 1 $rc \
  "the mesh dp=2,tp=2 has 4 devices but torchrun started 2 ranks: run torchrun --nproc-per-node 4 --no-python .*prog/init --out DIR"

rc=0
RANK=0 WORLD_SIZE=4 prog/init --out bad 2>err.txt || rc=$?
one_message "RANK/WORLD_SIZE without MASTER_ADDR" 2 $rc \
  "RANK/WORLD_SIZE say rank 0 of 4, but MASTER_ADDR and MASTER_PORT .* are not both set"
rc=0
RANK=4 WORLD_SIZE=4 MASTER_ADDR=localhost MASTER_PORT=1 prog/init --out bad 2>err.txt || rc=$?
one_message "RANK outside WORLD_SIZE" 2 $rc "RANK=4 is outside WORLD_SIZE=4"
rc=0
RANK=0 WORLD_SIZE=4 MASTER_ADDR=localhost MASTER_PORT=http prog/init --out bad 2>err.txt || rc=$?
one_message "MASTER_PORT not a port" 2 $rc "MASTER_PORT gives the port 'http', not a TCP port"

# Under srun without MPI, rank 0 is on the step's first node, named by Slurm's hostlist syntax;
# the port follows from the job and step ids (10000 + (7 x 5 + 2) mod 20000). The ".invalid"
# host resolves nowhere, so rank 1 waits its second and says where it looked.
rc=0
SLURM_JOB_ID=5 SLURM_STEP_ID=2 SLURM_PROCID=1 SLURM_STEP_NUM_TASKS=4 \
  SLURM_STEP_NODELIST='rack[07-09,11].invalid,gpu1' INITC_RENDEZVOUS_TIMEOUT=1 \
  prog/init --out bad 2>err.txt || rc=$?
one_message "srun's first node and derived port" 1 $rc \
  "rank 1 of 4 \(.*, started by srun\) could not reach rank 0 at rack07.invalid:10037 \(port from a port derived from SLURM_JOB_ID and SLURM_STEP_ID\)"
rc=0
SLURM_JOB_ID=5 SLURM_STEP_ID=2 SLURM_PROCID=1 SLURM_STEP_NUM_TASKS=4 SLURM_STEP_NODELIST=n1.invalid \
  SLURM_STEP_RESV_PORTS=12011-12014 INITC_RENDEZVOUS_TIMEOUT=1 prog/init --out bad 2>err.txt || rc=$?
one_message "srun's reserved port" 1 $rc "could not reach rank 0 at n1.invalid:12011 \(port from SLURM_STEP_RESV_PORTS\)"

rc=0
"${MPIRUN[@]}" -np 4 -x RANK=0 -x WORLD_SIZE=4 prog/init --out bad --quiet >/dev/null 2>err.txt || rc=$?
one_message "mpirun with a RANK/WORLD_SIZE that contradicts MPI's" 2 $rc \
  "init: error \(rank 1\): two launchers disagree: MPI \(mpirun\) started this process as rank 1 of 4, but RANK/WORLD_SIZE say rank 0 of 4"
# A RANK/WORLD_SIZE that agrees with MPI's is no contradiction (a script that exports both).
"${MPIRUN[@]}" -np 4 bash -c 'RANK=$OMPI_COMM_WORLD_RANK WORLD_SIZE=4 exec prog/init --out mpi-agrees --quiet' ||
  fail "mpirun with an agreeing RANK/WORLD_SIZE"
same_as ref mpi-agrees "mpirun with RANK/WORLD_SIZE that agree with MPI's"
[[ ! -e bad ]] || fail "a failed run wrote $(ls -A bad)"
echo "PASS $TEST_NAME"
