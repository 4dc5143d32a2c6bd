#!/usr/bin/env bash
# A run over several hosts with node-local disks, on one machine: three "hosts" are network
# namespaces joined by a bridge, and mpirun starts an orted on each through a launch agent (as ssh
# would on a cluster) that also gives it a mount namespace of its own, in which the host's own
# directory is mounted at one common path. 4 ranks over the hosts (2, 1, 1) write to that path,
# so each host keeps only its own ranks' files; the files gathered from the three hosts are one
# checkpoint, which verifies and holds the same tensors, bit for bit, as a run on one host.
#
# Needs root with CAP_NET_ADMIN and CAP_SYS_ADMIN (ip netns, veth, a bridge, unshare -m, mount):
# without them it fails and says so, as every test that cannot run does.
source "$(dirname "$0")/../common.bash"

# The layout each host writes into its node-local directory.
LAYOUT=ranks
MESH=dp=2,tp=2
RANKS=4
# Host h runs SLOTS[h-1] ranks; mpirun fills the hosts in order (--map-by slot).
SLOTS=(2 1 1)
# The node-local directory's path, the same on every host; in this (root) namespace it stays an
# empty directory, which shows that no host wrote to a shared disk.
LOCAL="$WORK/node-local"

# The files a rank writes, and those rank 0 adds for the job, in LAYOUT.
rank_files() {
  local rank=$1
  case $LAYOUT in
  ranks) printf 'rank-%05d-of-%05d.safetensors\n' "$rank" "$RANKS"
    ((rank == 0)) && echo index.json ;;
  dcp) printf 'shard-%05d-of-%05d.safetensors\n' "$rank" "$RANKS" ;;
  esac
  return 0
}
[[ $LAYOUT == ranks || $LAYOUT == dcp ]] || fail "LAYOUT=$LAYOUT: this test knows the files of ranks and dcp"

# Names unique to this run (interface names have at most 15 characters), so that runs side by
# side do not meet.
TAG=$$
BRIDGE="icbr$TAG"
NS_PREFIX="initc-$TAG-host"
NET=""
HOSTS_UP=0  # namespaces made so far (host1 .. hostN)
BRIDGE_UP=0

cleanup() {
  local h ns pids
  for ((h = 1; h <= HOSTS_UP; ++h)); do
    ns="$NS_PREFIX$h"
    # What is left of this run's orteds and ranks on the host (after a failure or a timeout).
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -z $pids ]] || kill -9 $pids 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  ((BRIDGE_UP == 0)) || ip link del "$BRIDGE" 2>/dev/null || true
  # The bind mounts lived in the hosts' private mount namespaces and went with their processes:
  # nothing is mounted here.
  rm -rf "$WORK"
}
trap cleanup EXIT
# Interrupted or timed out, the script still exits through cleanup.
trap 'exit 130' INT
trap 'exit 143' TERM

cd "$WORK"
mkdir -p "$LOCAL"

# --- the hosts --------------------------------------------------------------------------------
# setup CMD...: runs a step of making the hosts; a refusal is the machine's, said as such.
setup() {
  "$@" 2>"$WORK/err.txt" && return 0
  fail "cannot set up the hosts: '$*' failed ($(head -c 300 "$WORK/err.txt" | tr '\n' ' '))." \
    "This test needs root with CAP_NET_ADMIN and CAP_SYS_ADMIN (ip netns, veth, bridge," \
    "unshare -m, mount --bind): run it where those are granted (e.g. a container started with" \
    "--privileged)"
}
setup unshare --mount --uts --propagation private true

# A /24 that no interface of this machine uses (a concurrent run takes another).
for ((i = 0; i < 250; ++i)); do
  candidate="10.77.$(((TAG + i) % 250))"
  if ! ip -4 -o addr show | grep -qF " $candidate."; then
    NET=$candidate
    break
  fi
done
[[ -n $NET ]] || fail "no free 10.77.X.0/24 for the hosts' network"

setup ip link add "$BRIDGE" type bridge
BRIDGE_UP=1
setup ip addr add "$NET.1/24" dev "$BRIDGE"
setup ip link set "$BRIDGE" up
for h in 1 2 3; do
  ns="$NS_PREFIX$h"
  setup ip netns add "$ns"
  HOSTS_UP=$h
  setup ip link add "icv$TAG-$h" type veth peer name "icp$TAG-$h"
  setup ip link set "icp$TAG-$h" netns "$ns"
  setup ip link set "icv$TAG-$h" master "$BRIDGE" up
  setup ip -n "$ns" link set "icp$TAG-$h" name eth0
  setup ip -n "$ns" addr add "$NET.$((h + 1))/24" dev eth0
  setup ip -n "$ns" link set eth0 up
  setup ip -n "$ns" link set lo up
  mkdir -p "$WORK/host$h"
done
# Each host reaches the others: a closed port answers "refused" (a TCP reset), a filtered
# network lets the connection time out.
for h in 1 2 3; do
  peer="$NET.$(((h % 3) + 2))"
  out=$(timeout 5 ip netns exec "$NS_PREFIX$h" bash -c "exec 3<>/dev/tcp/$peer/9" 2>&1) && true
  [[ $out == *"Connection refused"* ]] ||
    fail "host $h cannot reach $peer over bridge $BRIDGE (${out:-timed out}): is bridged" \
      "traffic filtered (net.bridge.bridge-nf-call-iptables)?"
done

# The launch agent: mpirun calls it as it would call ssh, `agent HOST COMMAND...`. It enters the
# host's network namespace, then a mount and UTS namespace of the host's own, names the host,
# mounts the host's directory at the common path and runs the command as a remote shell would.
cat >agent.sh <<EOF
#!/bin/bash
set -eu
while [[ \$1 == -* ]]; do shift; done # ssh options, if any
case \$1 in
$NET.2) h=1 ;;
$NET.3) h=2 ;;
$NET.4) h=3 ;;
*) echo "agent: unknown host \$1" >&2; exit 255 ;;
esac
shift
exec ip netns exec "$NS_PREFIX\$h" unshare --mount --uts --propagation private /bin/sh -c '
  hostname "initc-host-\$1" && mount --bind "\$2" "\$3" || exit 255
  shift 3
  exec /bin/sh -c "\$*"' agent "\$h" "$WORK/host\$h" "$LOCAL" "\$@"
EOF
chmod +x agent.sh
{
  for h in 1 2 3; do echo "$NET.$((h + 1)) slots=${SLOTS[h - 1]}"; done
} >hostfile

# --- the program, on one host and on three ----------------------------------------------------
"$INITC" import hf "$ROOT/tests/e2e/configs/llama_uneven.json" --dtype bf16 --seed 7 \
  -o model.mlir || fail "import"
"$INITC" compile model.mlir --mesh "$MESH" --shard tp -o prog >/dev/null || fail "compile"

timeout 60 "${MPIRUN[@]}" -np "$RANKS" prog/init --out one --layout "$LAYOUT" --quiet \
  >one.log 2>&1 || fail "the run on one host: $(tail -5 one.log)"

# Only the bridge's network: the daemons' out-of-band channel and MPI's TCP transport never take
# this machine's other interfaces, and ranks of one host talk over shared memory (vader).
MULTI=(mpirun --hostfile hostfile -np "$RANKS" --map-by slot --bind-to none
  --mca plm_rsh_agent "$WORK/agent.sh" --mca plm_rsh_no_tree_spawn 1
  --mca oob_tcp_if_include "$NET.0/24" --mca btl_tcp_if_include "$NET.0/24"
  --mca btl tcp,self,vader --mca pml ob1)
# Where each rank runs: the host the hostfile's order and slots give it, in that host's network.
timeout 60 "${MULTI[@]}" /bin/sh -c \
  'echo "$OMPI_COMM_WORLD_RANK $(hostname) $(ip -4 -o addr show dev eth0 | awk "{print \$4}")"' \
  >placement.txt 2>&1 || fail "mpirun over the three hosts: $(tail -15 placement.txt)"
rank=0
for h in 1 2 3; do
  for ((r = rank; r < rank + SLOTS[h - 1]; ++r)); do
    grep -qx "$r initc-host-$h $NET.$((h + 1))/24" placement.txt ||
      fail "rank $r is not on host $h ($NET.$((h + 1))): $(sort placement.txt | tr '\n' ';')"
  done
  rank=$((rank + SLOTS[h - 1]))
done

# ranks expects one directory that every rank sees, which rank 0 makes: on node-local disks the
# job script makes it on each host. dcp is written for node-local disks and makes its own.
if [[ $LAYOUT == ranks ]]; then
  for h in 1 2 3; do mkdir "$WORK/host$h/ckpt"; done
fi
timeout 90 "${MULTI[@]}" prog/init --out "$LOCAL/ckpt" --layout "$LAYOUT" --quiet \
  >hosts.log 2>&1 || fail "the run on three hosts: $(tail -15 hosts.log)"

# --- what each host holds ---------------------------------------------------------------------
[[ -z $(ls -A "$LOCAL") ]] || fail "the common path was written in the root namespace: $(ls -A "$LOCAL")"
rank=0
for h in 1 2 3; do
  expected=$(for ((r = rank; r < rank + SLOTS[h - 1]; ++r)); do rank_files "$r"; done | sort)
  rank=$((rank + SLOTS[h - 1]))
  held=$(cd "$WORK/host$h/ckpt" 2>/dev/null && ls -A | sort) || fail "host $h wrote no ckpt/"
  [[ $held == "$expected" ]] ||
    fail "host $h holds [$(echo $held)], expected only its own ranks' [$(echo $expected)]"
done

# --- gathered, the three hosts' files are the checkpoint of one host ---------------------------
mkdir gathered
for h in 1 2 3; do cp "$WORK/host$h/ckpt/"* gathered/; done
"$INITC" verify gathered >verify.txt 2>&1 || fail "verify of the gathered files: $(tail -5 verify.txt)"
for file in $(cd one && ls -A); do
  [[ -e gathered/$file ]] || fail "the one-host run wrote $file, which no host wrote"
done
"$INITC" assemble one -o one.safetensors >/dev/null 2>assemble.txt ||
  fail "assemble of the one-host run: $(tail -3 assemble.txt)"
"$INITC" assemble gathered -o gathered.safetensors >/dev/null 2>assemble.txt ||
  fail "assemble of the gathered files: $(tail -3 assemble.txt)"
cmp one.safetensors gathered.safetensors ||
  fail "the three hosts' tensors differ from the one-host run's"
# And file by file: where a rank computes does not change a byte it writes.
for file in $(cd gathered && ls -A); do
  cmp "one/$file" "gathered/$file" || fail "$file differs between one host and three"
done

# --- a host that lost its disk ----------------------------------------------------------------
# The same command again: host 3's rank is computed again, bit for bit, and the complete, verified
# files of the other hosts are kept as they are.
kept() { (cd "$WORK" && find host1/ckpt host2/ckpt -name '*.safetensors' -printf '%p %T@ %s\n' | sort); }
before=$(kept)
rm -f "$WORK/host3/ckpt/"*
timeout 90 "${MULTI[@]}" prog/init --out "$LOCAL/ckpt" --layout "$LAYOUT" --quiet \
  >rerun.log 2>&1 || fail "the rerun on three hosts: $(tail -15 rerun.log)"
[[ $(kept) == "$before" ]] || fail "the rerun rewrote files that hosts 1 and 2 still had"
held=$(cd "$WORK/host3/ckpt" && ls -A | sort)
[[ $held == "$(rank_files 3)" ]] || fail "after the rerun host 3 holds [$(echo $held)]"
for h in 1 2 3; do
  for file in $(cd "$WORK/host$h/ckpt" && ls -A); do
    cmp "$WORK/host$h/ckpt/$file" "gathered/$file" || fail "host $h's $file differs after the rerun"
  done
done
echo "PASS $TEST_NAME ($LAYOUT on hosts of ${SLOTS[*]} ranks)"
