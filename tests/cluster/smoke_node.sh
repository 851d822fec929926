#!/bin/sh
# tests/cluster/smoke_node.sh: node failures on the emulated cluster:
# cluster_node_crash takes a node down with its steps (the job ends
# NODE_FAIL once slurmctld notices), cluster_node_restart brings it back,
# cluster_node_kill ends only the slurmd.
set -u
. "$top_srcdir/tests/cluster/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
ts() { echo "$(date +%T.%N | cut -c1-10) $*"; }
cluster_need --nodes 2 --cpus 2

jobid=$(cd "$CLUSTER_WORK" && sbatch --parsable --no-requeue -N2 -o job.out --wrap 'srun -N2 -n2 sleep 300') ||
	fail "sbatch failed"
i=0
until [ "$(_cl_stepd_pids "$CLUSTER_DIR" node2 | wc -l)" -ge 1 ] && [ "$(_cl_stepd_pids "$CLUSTER_DIR" node1 | wc -l)" -ge 2 ]; do
	i=$((i + 1)); [ $i -le 300 ] || fail "job $jobid did not start its step on both nodes in 60 s"
	sleep 0.2
done
steps2=$(_cl_stepd_pids "$CLUSTER_DIR" node2)
tasks2=$(_cl_descendants $steps2)

ts crash; cluster_node_crash node2 || fail "cluster_node_crash node2 failed"
_cl_daemon_pid "$CLUSTER_DIR" slurmd node2 >/dev/null && fail "node2's slurmd survived the crash"
for p in $tasks2; do _cl_alive "$p" && fail "process $p of node2 survived the crash"; done
_cl_daemon_pid "$CLUSTER_DIR" slurmd node1 >/dev/null || fail "the crash of node2 took node1's slurmd"
[ -n "$(_cl_stepd_pids "$CLUSTER_DIR" node1)" ] || fail "the crash of node2 took node1's steps"

ts wait; state=$(cluster_sbatch_wait "$jobid" 90); ts waited
[ "$state" = NODE_FAIL ] || fail "job $jobid on the crashed node ended $state, want NODE_FAIL"
case $(cluster_node_state node2) in down*) ;; *) fail "node2 is $(cluster_node_state node2), want down";; esac
echo "crashed node2: job $jobid ended $state, node2 $(cluster_node_state node2)"

ts restart; cluster_node_restart node2 || fail "cluster_node_restart node2 failed"
cluster_wait_idle 60 || fail "nodes not idle after the restart"

ts kill; old=$(_cl_daemon_pid "$CLUSTER_DIR" slurmd node1)
cluster_node_kill node1 || fail "cluster_node_kill node1 failed"
_cl_alive "$old" && fail "node1's slurmd $old survived kill -9"
cluster_node_restart node1 || fail "cluster_node_restart node1 failed"
new=$(_cl_daemon_pid "$CLUSTER_DIR" slurmd node1) || fail "node1 has no slurmd after restart"
[ "$new" != "$old" ] || fail "node1's slurmd pid did not change"
ts srun; timeout 60 srun -N2 -n2 true || fail "srun over both nodes failed after the restarts"
echo "PASS"
