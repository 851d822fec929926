#!/bin/sh
# tests/wrapper/wrap_node.sh: slurmctld restarted mid-job (then a rank
# killed); a node dies mid-run (tests/cluster's
# cluster_node_crash: its slurmd, slurmstepd and ranks killed) in a private
# 5-node emulated cluster. With a spare node in the allocation the wrapper
# finds the silent rank, cannot end the step on the dead node, calls it a
# node fault and restarts on the spare (srun --exclude); without a spare it
# requeues the job with the node in ExcNodeList. Both jobs finish with the
# final weights of an unfaulted run.
set -u
. "$top_srcdir/tests/cluster/lib.sh"
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
cluster_need --nodes 5 --cpus 2
W=$CLUSTER_WORK
export LLM_TRAIN_CKPT_INTERVAL=5
unset LLM_TRAIN_FAULT
STEPS="--steps 80 --step-time 0.05"

# The unfaulted reference: the test trainer's weights do not depend on
# the number of ranks, so one local rank gives them.
"$WRAP" --no-srun --ckpt-dir "$W/ref" $WRAP_FAST -- "$TRAINER" $STEPS >"$W/ref.out" 2>&1 || fail "reference run"

submit() {  # NAME SBATCH-OPTS -- WRAPPER-OPTS: submit, wait for the step-10 checkpoint
	_n=$1; shift
	_sb=
	while [ $# -gt 0 ] && [ "$1" != -- ]; do _sb="$_sb $1"; shift; done
	[ $# -gt 0 ] && shift
	cat >"$W/$_n.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$W/$_n" $WRAP_FAST $* -- "$TRAINER" $STEPS
JOB
	chmod +x "$W/$_n.sh"
	_j=$(cd "$W" && sbatch --parsable --requeue --no-kill --open-mode=append -o "$_n.out" $_sb "$_n.sh") ||
		fail "$_n: sbatch"
	wait_file "$W/$_n/step_00000010/manifest.json" 60 || fail "$_n: no step-10 checkpoint"
}

done_same() {  # NAME JOBID: completed, with the unfaulted run's weights
	_st=$(cluster_sbatch_wait "$2" 150) || { cat "$W/$1.out"; fail "$1: job $2 ended $_st"; }
	cmp -s "$W/ref/final_weights" "$W/$1/final_weights" ||
		{ cat "$W/$1.out"; fail "$1: final weights differ from the unfaulted run"; }
}

# slurmctld restarted mid-job: stopped for 2 s while the step trains,
# started again; then a rank is killed -9 and the wrapper recovers through
# the restarted controller. (A rank killed while the controller is down
# also recovers, but Slurm then keeps the dead step's CPUs busy for about
# a minute after the restart: too slow for this suite.)
submit ctl -N3 --ntasks-per-node=1
ctl=$(_cl_daemon_pid "$CLUSTER_DIR" slurmctld) || fail "ctl: no slurmctld"
kill -TERM "$ctl"
_cl_wait_gone "$ctl" 20 || fail "ctl: slurmctld did not stop"
sleep 2
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
	/usr/sbin/slurmctld -f "$CLUSTER_DIR/etc/slurm.conf" 9>&- </dev/null || fail "ctl: slurmctld did not restart"
i=0
until scontrol ping >/dev/null 2>&1; do i=$((i + 1)); [ $i -le 100 ] || fail "ctl: slurmctld not back"; sleep 0.2; done
kill -9 "$(rank_pid "$W/ctl" 1 0)" || fail "ctl: rank 1 gone already"
done_same ctl "$_j"
[ "$(count launch "$W/ctl/ledger.jsonl")" = 2 ] || fail "ctl: not one restart"

run() {  # NAME SBATCH-OPTS -- WRAPPER-OPTS: submit, crash rank 1's node after step 10
	submit "$@"
	_bad=$(rank_host "$W/$_n" 1 0) || fail "$_n: no rank 1"
	# The node freezes at once: its slurmd, slurmstepds and ranks (then
	# cluster_node_crash, which takes seconds to find every process of
	# the node, kills them all).
	_frozen=$(_cl_daemon_pid "$CLUSTER_DIR" slurmd "$_bad") || fail "$_n: no slurmd for $_bad"
	_frozen="$_frozen $(_cl_stepd_pids "$CLUSTER_DIR" "$_bad")"
	for _f in "$W/$_n"/pids/rank_*.attempt_0; do
		[ "$(cut -d' ' -f2 "$_f")" = "$_bad" ] && _frozen="$_frozen $(cut -d' ' -f1 "$_f")"
	done
	kill -STOP $_frozen
	cluster_node_crash "$_bad" || fail "$_n: cannot crash $_bad"
	done_same "$_n" "$_j"
	[ "$(count failure "$W/$_n/ledger.jsonl" '"class":"node_fault"')" = 1 ] ||
		{ cat "$W/$_n.out"; fail "$_n: no node fault on $_bad in the ledger"; }
	grep '"event":"launch"' "$W/$_n/ledger.jsonl" | tail -1 | grep -q "\"exclude\":\[\"$_bad\"\]" ||
		fail "$_n: last launch does not exclude $_bad"
	JOB=$_j BAD=$_bad
}

# 4 nodes, 3 used, 1 spare: restart in place on the spare. Heartbeats
# without the optional host field (as a trainer may write them): the wrapper
# learns the dead node from Slurm (not responding after SlurmdTimeout).
export TEST_TRAINER_HB_HOST=0
run spare -N4 --ntasks-per-node=1 -- --spares 1
unset TEST_TRAINER_HB_HOST
[ "$(count requeue "$W/spare/ledger.jsonl")" = 0 ] || fail "spare: requeued although a spare was there"

# 3 nodes, no spare: requeue without the dead node
run nospare -N3 --ntasks-per-node=1
[ "$(count requeue "$W/nospare/ledger.jsonl")" = 1 ] || fail "nospare: not requeued"
[ "$(cluster_job_field "$JOB" ExcNodeList)" = "$BAD" ] || fail "nospare: ExcNodeList is not $BAD"
scontrol show hostnames "$(cluster_job_field "$JOB" NodeList)" | grep -qxF "$BAD" && fail "nospare: ran on $BAD again"
echo PASS
