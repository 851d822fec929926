#!/bin/sh
# tests/wrapper/wrap_torch_requeue.sh: `scontrol requeue JOBID` of a
# running PyTorch job (etc/examples/ddp_train.py held after step 3):
# Slurm sends the batch shell SIGTERM, the wrapper forwards it, every
# rank saves step 3 and exits 87, and the wrapper's own requeue finds the
# job requeued by Slurm already: one line saying so, no requeue_failed
# in the ledger, and the next run resumes from step 3 and finishes. Red
# before: "scontrol requeue JOBID : exit 1: Job is pending execution"
# and a requeue_failed event (the run's exit code then 87's, for a job
# that was requeued all right).
set -u
. "$top_srcdir/tests/cluster/lib.sh"
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
torch_cluster_need
W=$CLUSTER_WORK
cat >"$W/rq.sh" <<JOB
#!/bin/sh
export PYTHONPATH=$top_srcdir/wrapper/python LLM_TRAIN_PYTHONPATH=$top_srcdir/wrapper/python
export OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo EXAMPLE_FAULT=hold@3
exec "$WRAP" --ckpt-dir "$W/ck" --ckpt-tool "$top_builddir/wrapper/llm-train-ckpt-torch" --tick 0.2 \\
	--backoff 0.2 -- /usr/bin/python3 "$top_srcdir/etc/examples/ddp_train.py" --steps 6
JOB
chmod +x "$W/rq.sh"
j=$(cd "$W" && sbatch --parsable --requeue --open-mode=append -N2 --ntasks-per-node=1 \
	--llm-train=tp=1,ckpt-interval=100 -o rq.out rq.sh) || fail "sbatch"
i=0
until grep -qs '^3 ' "$W/ck/heartbeat/rank_00000"; do   # rank 0 holds after step 3
	i=$((i + 1)); [ $i -le 600 ] || { cat "$W/rq.out"; fail "no step 3 in 120 s"; }
	sleep 0.2
done
scontrol requeue "$j" || fail "scontrol requeue $j"
st=$(cluster_sbatch_wait "$j" 240) || { cat "$W/rq.out"; fail "job $j ended $st"; }
grep -q '"event":"launch","attempt":1.*"resume_step":3' "$W/ck/ledger.jsonl" ||
	{ cat "$W/rq.out"; fail "the requeued run did not resume from step 3"; }
[ -s "$W/ck/final_weights.sha256" ] || { cat "$W/rq.out"; fail "the requeued run did not finish"; }
if grep -q "pending execution" "$W/rq.out" || grep -q '"event":"requeue_failed"' "$W/ck/ledger.jsonl"; then
	cat "$W/rq.out"; fail "the wrapper's requeue of a job Slurm requeued counted as failed"
fi
grep -q "requeued by Slurm already" "$W/rq.out" || { cat "$W/rq.out"; fail "no line saying Slurm requeued the job"; }
echo "ok: scontrol requeue: saved step 3, requeued once, resumed from step 3, finished"
echo PASS
