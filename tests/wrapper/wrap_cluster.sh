#!/bin/sh
# tests/wrapper/wrap_cluster.sh: llm-train-wrap in real Slurm jobs on the
# emulated cluster with the test trainer (4 ranks, one per node). Each
# faulted job must finish with final weights bit-identical to an unfaulted
# run: kill -9 of one rank mid-step (another rank is a straggler, reported
# with its node); SIGSTOP of one rank (a hang); kill -9 during a checkpoint
# write; one bit flipped in one data-parallel replica (SDC: suspect node
# excluded, spare used, rollback to the checkpoint whose replicas agreed);
# preemption (SIGUSR1 to the batch shell, as --signal=B:USR1 sends it):
# checkpoint, scontrol requeue, resume in the next run of the same job.
# The jobs run side by side (one CPU per node each); faults are injected
# from background shells.
set -u
. "$top_srcdir/tests/cluster/lib.sh"
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
# the shared cluster when it has 4 nodes, else one of its own with 4
if [ -n "${LLMT_CLUSTER_DIR:-}" ] &&
	[ "$(grep -c '^NodeName=' "$LLMT_CLUSTER_DIR/etc/slurm.conf" 2>/dev/null)" -ge 4 ]; then
	cluster_need
else
	cluster_need --nodes 4
fi
[ "$(cluster_nodes | wc -l)" -ge 4 ] || { echo "FAIL: the cluster has fewer than 4 nodes"; exit 1; }
W=$CLUSTER_WORK
export LLM_TRAIN_CKPT_INTERVAL=5
unset LLM_TRAIN_FAULT TEST_TRAINER_SLOW_RANK

# job NAME STEPS SBATCH-OPTS... -- WRAPPER-OPTS...: submit, print the job id.
job() {
	_n=$1 _steps=$2; shift 2
	_sb=
	while [ $# -gt 0 ] && [ "$1" != -- ]; do _sb="$_sb $1"; shift; done
	[ $# -gt 0 ] && shift
	cat >"$W/$_n.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$W/$_n" $WRAP_FAST $* -- "$TRAINER" --steps $_steps
JOB
	chmod +x "$W/$_n.sh"
	(cd "$W" && sbatch --parsable --requeue --open-mode=append -o "$_n.out" $_sb "$_n.sh")
}

# finish NAME JOBID: wait for COMPLETED, compare weights with the reference.
finish() {
	_st=$(cluster_sbatch_wait "$2" 180) || { cat "$W/$1.out"; fail "$1: job $2 ended $_st"; }
	[ -s "$W/$1/final_weights" ] || { cat "$W/$1.out"; fail "$1: no final weights"; }
	if [ "$1" != ref ]; then
		cmp -s "$W/ref/final_weights" "$W/$1/final_weights" ||
			{ cat "$W/$1.out"; fail "$1: final weights differ from the unfaulted run"; }
	fi
}

# ckpt10 NAME: wait for the job's step-10 checkpoint
ckpt10() { wait_file "$W/$1/step_00000010/manifest.json" 120 || { echo "$1: no step-10 checkpoint" >"$W/$1.err"; return 1; }; }

ref=$(job ref 30 -N4 --ntasks-per-node=1) || fail "sbatch ref"
kill9=$(TEST_TRAINER_SLOW_RANK=3; export TEST_TRAINER_SLOW_RANK
	job kill9 30 -N4 --ntasks-per-node=1 -- --straggler-min 0.05) || fail "sbatch kill9"
stop=$(job stop 30 -N4 --ntasks-per-node=1) || fail "sbatch stop"
ckill=$(job ckill 30 -N4 --ntasks-per-node=1) || fail "sbatch ckill"
sdc=$(LLM_TRAIN_FAULT=bitflip@12:2; export LLM_TRAIN_FAULT
	job sdc 30 -N4 --ntasks-per-node=1 -- --spares 1) || fail "sbatch sdc"
pre=$(job pre 30 -N4 --ntasks-per-node=1) || fail "sbatch pre"

# kill -9 of rank 1 after the step-10 checkpoint
( ckpt10 kill9 && kill -9 "$(rank_pid "$W/kill9" 1 0)" ) &
# SIGSTOP of rank 2: a hang, found from its heartbeat, the step killed
( ckpt10 stop && kill -STOP "$(rank_pid "$W/stop" 2 0)" ) &
# kill -9 during a checkpoint write: rank 1 is held (SIGSTOP) so rank 0
# sits in the step-15 save waiting for its shard; rank 0 is killed there
( ckpt10 ckill || exit 1
  p1=$(rank_pid "$W/ckill" 1 0); kill -STOP "$p1"
  i=0
  until grep -q '^15 [0-9]* save ' "$W/ckill/heartbeat/rank_00000" 2>/dev/null; do
	i=$((i + 1)); [ $i -le 1200 ] || { echo "ckill: rank 0 never saved step 15" >"$W/ckill.err"; exit 1; }
	sleep 0.05
  done
  kill -9 "$(rank_pid "$W/ckill" 0 0)"; kill -CONT "$p1" ) &
# preemption: SIGUSR1 to the batch shell (the wrapper), forwarded to the
# ranks; they checkpoint and exit 87; the job is requeued and resumes
( ckpt10 pre && scancel --batch --signal=USR1 "$pre" ) &
wait
for e in "$W"/*.err; do [ -r "$e" ] && fail "$(cat "$e")"; done

finish ref "$ref"
ledger ref "launches=1 failures= restarts=0 requeues=0"

finish kill9 "$kill9"
ledger kill9 "launches=2 failures=transient restarts=1 requeues=0"
grep '"event":"failure"' "$W/kill9/ledger.jsonl" | grep -q '"signal":9' || fail "kill9: failure not recorded with signal 9"
slow=$(rank_host "$W/kill9" 3 0)
grep '"event":"straggler"' "$W/kill9/ledger.jsonl" | grep '"rank":3' | grep -q "\"node\":\"$slow\"" ||
	fail "kill9: straggler rank 3 on $slow not reported"

finish stop "$stop"
ledger stop "launches=2 failures=transient restarts=1 requeues=0"
kill -CONT "$(rank_pid "$W/stop" 2 0)" 2>/dev/null
[ "$(count hang "$W/stop/ledger.jsonl" "\"rank\":2")" = 1 ] || fail "stop: hang of rank 2 not recorded"

# the half-written step 15 (no manifest) is skipped and kept; resume at 10
finish ckill "$ckill"
ledger ckill "launches=2 failures=transient restarts=1 requeues=0"
[ -d "$W/ckill/step_00000015" ] || fail "ckill: the half-written checkpoint was removed"
grep '"event":"launch"' "$W/ckill/ledger.jsonl" | sed -n 2p | grep -q '"resume_step":10' ||
	fail "ckill: second attempt did not resume from step 10"

# bit flip in replica 2 after step 12: the step-15 checkpoint disagrees
# (exit 86, sdc.json names rank 2's node); that node is excluded, the spare
# takes its place, training resumes from step 10 (replicas agreed)
bad=$(rank_host "$W/sdc" 2 0) || fail "sdc: no rank 2"
finish sdc "$sdc"
ledger sdc "launches=2 failures=sdc restarts=1 requeues=0"
[ "$(count failure "$W/sdc/ledger.jsonl" '"class":"sdc"')" = 1 ] || fail "sdc: no sdc failure"
grep '"event":"launch"' "$W/sdc/ledger.jsonl" | tail -1 | grep '"resume_step":10' | grep -q "\"exclude\":\[\"$bad\"\]" ||
	fail "sdc: not resumed from step 10 without $bad"
[ "$(count checkpoint_skipped "$W/sdc/ledger.jsonl" step_00000015)" -ge 1 ] || fail "sdc: disagreeing checkpoint used"

finish pre "$pre"
ledger pre "launches=2 failures=preempted restarts=0 requeues=1"
[ "$(cluster_job_field "$pre" Restarts)" = 1 ] || fail "pre: job not requeued once"
[ "$(count requeue "$W/pre/ledger.jsonl")" = 1 ] || fail "pre: requeue not in the ledger"
[ "$(count start "$W/pre/ledger.jsonl" '"run":1')" = 1 ] || fail "pre: no second run in the ledger"
echo PASS
