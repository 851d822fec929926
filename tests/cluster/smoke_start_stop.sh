#!/bin/sh
# tests/cluster/smoke_start_stop.sh: start and stop themselves: bad input
# is refused, start on a running cluster refuses and leaves it alone, two
# clusters run side by side (own ports, own reserved port ranges), stop ends only its own cluster's daemons
# (never a process whose pid merely sits in a pid file), topology shapes.
set -u
. "$top_srcdir/tests/cluster/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
[ -x /usr/sbin/slurmctld ] || { echo "SKIP: Slurm not installed"; exit 77; }
start=$top_srcdir/tests/cluster/start
stop=$top_srcdir/tests/cluster/stop
a=$(mktemp -d /tmp/llmt-ssa.XXXXXX) && b=$(mktemp -d /tmp/llmt-ssb.XXXXXX) || exit 1
bystander=
cleanup() {
	rc=$?
	"$stop" --dir "$a" >/dev/null 2>&1
	"$stop" --dir "$b" >/dev/null 2>&1
	[ -n "$bystander" ] && kill "$bystander" 2>/dev/null
	if [ $rc = 0 ]; then rm -rf "$a" "$b"; else echo "files kept in $a $b"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# Bad input: one message naming the bad value, exit 64, nothing started.
expect_usage() {
	want=$1; shift
	msg=$("$start" --dir "$a" "$@" 2>&1)
	rc=$?
	[ $rc = 64 ] || fail "start $* exited $rc, want 64 ($msg)"
	echo "$msg" | grep -qF -- "$want" || fail "start $*: message lacks '$want': $msg"
}
expect_usage "--nodes '0'" --nodes 0
expect_usage "--cpus 'x'" --cpus x
expect_usage "--topology 'leaves=5'" --nodes 4 --topology leaves=5
expect_usage "node4 is on no leaf" --nodes 4 --topology 's1:node[1-3]'
expect_usage "node2 is on two leaves" --nodes 2 --topology 's1:node[1-2];s2:node2'
expect_usage "'node9' is not one of" --nodes 2 --topology 's1:node[1,9];s2:node2'
expect_usage "unknown argument '--bogus'" --bogus
[ ! -e "$a/run/slurmctld.pid" ] || fail "bad input started something"

# Cluster A (16 nodes, switch order differs from name order) and cluster B
# (2 nodes, explicit leaves, no plugin), started at the same time.
"$start" --dir "$a" --nodes 16 --cpus 1 --topology interleaved=4 >"$a/start.log" 2>&1 &
pa=$!
"$start" --dir "$b" --nodes 2 --no-plugin --topology 'x:node2;y:node1' >"$b/start.log" 2>&1 &
pb=$!
wait $pa || { cat "$a/start.log"; fail "start A failed"; }
wait $pb || { cat "$b/start.log"; fail "start B failed"; }
grep -q "^export SLURM_CONF=$a/etc/slurm.conf\$" "$a/start.log" || fail "start A printed no export line"
grep -qx 'SwitchName=s1 Nodes=node\[1,5,9,13\]' "$a/etc/topology.conf" || fail "interleaved leaf s1 wrong"
grep -qx 'SwitchName=s4 Nodes=node\[4,8,12,16\]' "$a/etc/topology.conf" || fail "interleaved leaf s4 wrong"
SLURM_CONF=$a/etc/slurm.conf scontrol show topology | grep -q 'SwitchName=top .*Switches=s1,s2,s3,s4' ||
	fail "slurmctld of A does not show the spine"
SLURM_CONF=$b/etc/slurm.conf scontrol show topology x | grep -q 'SwitchName=x .*Nodes=node2$' ||
	fail "slurmctld of B does not show the explicit leaf x"
if [ -f "$top_builddir/spank/.libs/llm_train.so" ]; then
	grep -qx "required $a/lib/llm_train.so policy=$a/etc/llm-train.yaml kernel_log=$a/klog/%n" "$a/etc/plugstack.conf" ||
		fail "the built plugin (with the cluster's own kernel logs) is not in A's plugstack.conf"
	for n in 1 2; do
		[ -f "$a/klog/node$n" ] && [ ! -s "$a/klog/node$n" ] || fail "A's node$n has no empty kernel log $a/klog/node$n"
	done
	cmp -s "$top_builddir/spank/.libs/llm_train.so" "$a/lib/llm_train.so" || fail "A/lib/llm_train.so is not the built one"
else
	[ ! -s "$a/etc/plugstack.conf" ] || fail "A's plugstack.conf names a plugin that is not built"
fi
pids_a=$(cat "$a/munge/munged.pid" "$a"/run/*.pid | tr -dc '0-9\n' | sort)
[ "$(echo "$pids_a" | wc -l)" = 18 ] || fail "A has $(echo "$pids_a" | wc -l) pid files, want 18"

# start on a running cluster: refused, cluster untouched.
msg=$("$start" --dir "$a" 2>&1) && fail "second start on A succeeded"
echo "$msg" | grep -q "already running in $a" || fail "refusal does not say so: $msg"
[ "$(cat "$a/munge/munged.pid" "$a"/run/*.pid | tr -dc '0-9\n' | sort)" = "$pids_a" ] || fail "refused start changed A's pids"
for p in $pids_a; do _cl_alive "$p" || fail "A's daemon $p died after the refused start"; done

# Both answer, each on its own ports.
[ ! -s "$b/etc/plugstack.conf" ] || fail "--no-plugin left a plugstack.conf line"
[ "$(grep '^SlurmctldPort=' "$a/etc/slurm.conf")" != "$(grep '^SlurmctldPort=' "$b/etc/slurm.conf")" ] ||
	fail "A and B share a port"
# and each its own reserved ports (MASTER_PORT): every node is this host
ra=$(sed -n 's/^MpiParams=ports=//p' "$a/etc/slurm.conf") rb=$(sed -n 's/^MpiParams=ports=//p' "$b/etc/slurm.conf")
[ -n "$ra" ] && [ -n "$rb" ] && [ "${ra%-*}" != "${rb%-*}" ] || fail "reserved ports of A ($ra) and B ($rb)"
n=$(SLURM_CONF=$a/etc/slurm.conf timeout 30 srun -N16 -n16 printenv SLURMD_NODENAME | sort -u | wc -l)
[ "$n" = 16 ] || fail "srun -N16 on A ran on $n nodes"
SLURM_CONF=$b/etc/slurm.conf timeout 30 srun -N2 -n2 true || fail "srun on B failed"
pids_b=$(cat "$b/munge/munged.pid" "$b"/run/*.pid | tr -dc '0-9\n' | sort)

# stop never ends a process it did not start: a stranger's pid in A's pid
# file survives, and so does all of B.
sleep 300 &
bystander=$!
slurmd3=$(cat "$a/run/slurmd-node3.pid")
echo "$bystander" >"$a/run/slurmd-node3.pid"
"$stop" --dir "$a" >"$a/stop.log" 2>&1 || { cat "$a/stop.log"; fail "stop A failed"; }
_cl_alive "$bystander" || fail "stop A killed pid $bystander, which it did not start"
kill "$bystander"; bystander=
# node3's real slurmd lost its pid file: end it the way stop would have.
case $(_cl_cmdline "$slurmd3") in */slurmd\ -N\ node3\ -f\ "$a"/*) _cl_stop_pid "$slurmd3";; esac
for p in $pids_a; do
	[ "$p" = "$slurmd3" ] && continue
	_cl_alive "$p" && fail "stop A left pid $p running"
done
for p in $pids_b; do _cl_alive "$p" || fail "stop A ended B's daemon $p"; done
SLURM_CONF=$b/etc/slurm.conf timeout 30 srun -N2 -n2 true || fail "B does not work after stop A"
[ -s "$a/log/slurmctld.log" ] || fail "stop A removed its logs"

"$stop" --dir "$b" >/dev/null 2>&1 || fail "stop B failed"
for p in $pids_b; do _cl_alive "$p" && fail "stop B left pid $p running"; done
msg=$("$stop" --dir "$b" 2>&1) || fail "second stop of B failed"
echo "$msg" | grep -q 'nothing of ours' || fail "second stop of B: $msg"
echo "PASS"
