#!/bin/sh
# tests/cluster/smoke_requeue.sh: a requeued job comes back: its first run
# is requeued with scontrol requeue, the second run sees
# SLURM_RESTART_COUNT=1 and completes (output appended, not truncated).
set -u
. "$top_srcdir/tests/cluster/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
cluster_need

cat >"$CLUSTER_WORK/job.sh" <<'JOB'
#!/bin/sh
echo "run restart=${SLURM_RESTART_COUNT:-unset} node=$SLURMD_NODENAME"
# The first run waits to be requeued; the second one ends at once.
[ -n "${SLURM_RESTART_COUNT:-}" ] || exec sleep 300
JOB
jobid=$(cd "$CLUSTER_WORK" && sbatch --parsable --requeue --open-mode=append -N1 -o job.out job.sh) ||
	fail "sbatch failed"
i=0
until grep -q 'restart=unset' "$CLUSTER_WORK/job.out" 2>/dev/null; do
	i=$((i + 1)); [ $i -le 300 ] || fail "job $jobid did not start its first run in 60 s"
	sleep 0.2
done
scontrol requeue "$jobid" || fail "scontrol requeue $jobid failed"
state=$(cluster_sbatch_wait "$jobid" 90)
cat "$CLUSTER_WORK/job.out"
[ "$state" = COMPLETED ] || fail "requeued job $jobid ended $state"
grep -q '^run restart=unset ' "$CLUSTER_WORK/job.out" || fail "first run's line lost (truncated?)"
grep -q '^run restart=1 ' "$CLUSTER_WORK/job.out" || fail "no second run with SLURM_RESTART_COUNT=1"
[ "$(cluster_job_field "$jobid" Restarts)" = 1 ] || fail "scontrol shows Restarts=$(cluster_job_field "$jobid" Restarts)"
echo "PASS"
