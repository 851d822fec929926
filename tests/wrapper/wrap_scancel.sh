#!/bin/sh
# tests/wrapper/wrap_scancel.sh: `scancel JOBID` ends a job run by
# llm-train-wrap. Its SIGTERM is what a preemption and the time limit send
# too, and scontrol shows all of them as COMPLETING (Reason=None for a
# cancel and a PreemptMode=CANCEL preemption), so the wrapper took every
# cancel for a preemption: it saved, ran `scontrol requeue`, and the job
# came back (found on the emulated cluster: Restarts=4 after four
# scancels). Now the wrapper asks slurmctld for the base state
# (`llm-train-wrap job-state`, libslurm): CANCELLED ends the job, with a
# "cancelled" event and no requeue.
set -u
. "$top_srcdir/tests/cluster/lib.sh"
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
cluster_need
W=$CLUSTER_WORK
export LLM_TRAIN_CKPT_INTERVAL=5
unset LLM_TRAIN_FAULT TEST_TRAINER_SLOW_RANK
cat >"$W/scancel.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$W/scancel" $WRAP_FAST -- "$TRAINER" --steps 1000000
JOB
chmod +x "$W/scancel.sh"
id=$(cd "$W" && sbatch --parsable --requeue -N1 -o scancel.out scancel.sh) || fail "sbatch"
stop_it() { scontrol update JobId="$id" Requeue=0 2>/dev/null; scancel "$id" 2>/dev/null; }
wait_file "$W/scancel/step_00000005/manifest.json" 120 || { stop_it; cat "$W/scancel.out"; fail "no step-5 checkpoint"; }
[ "$(cluster_job_field "$id" Restarts)" = 0 ] || { stop_it; fail "restarted before the scancel"; }
scancel "$id" || fail "scancel $id"
i=0
while :; do
	st=$(cluster_job_state "$id")
	case $st in CANCELLED|COMPLETED|FAILED|PENDING|"") break;; esac
	i=$((i + 1)); [ $i -le 240 ] || { stop_it; fail "job $id still $st 120 s after scancel"; }
	sleep 0.5
done
L=$W/scancel/ledger.jsonl
if grep -q '"event":"requeue"' "$L" || [ "$st" = PENDING ]; then
	stop_it; cat "$W/scancel.out"; fail "scancel requeued the job (state $st): it would come back"
fi
[ "$st" = CANCELLED ] || { cat "$W/scancel.out"; fail "job $id ended $st after scancel, want CANCELLED"; }
grep -q '"event":"cancelled"' "$L" || { cat "$W/scancel.out"; fail "no cancelled event in the ledger"; }
[ "$(cluster_job_field "$id" Restarts)" = 0 ] || fail "Restarts is not 0"
echo "PASS: scancel of a wrapper job: CANCELLED, not requeued ($(grep -c . "$L") ledger lines)"
