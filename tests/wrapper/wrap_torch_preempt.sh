#!/bin/sh
# tests/wrapper/wrap_torch_preempt.sh: a preempted PyTorch job saves the
# step it was signalled at and resumes from it, on the emulated cluster:
# etc/examples/ddp_train.py (gloo, the llm_train module) as a 2-node job
# under llm-train-wrap with srun, ckpt-interval=1000 (no interval save in
# its 20 steps). hold@8 holds rank 0 after step 8 (rank 1 waits in
# ckpt_due's collective); then SIGUSR1 to the batch shell, as
# --signal=B:USR1@N sends it: the wrapper forwards it through srun, every
# rank saves step 8 (each says so) and exits 87, the wrapper requeues the
# job, its next run resumes from step 8, ends 0 at step 20 with the
# weights of an unfaulted job run beside it. Red before the module caught
# the signals: the ranks died of SIGUSR1, no step-8 checkpoint, the
# requeued run trained from step 0.
set -u
TAG=wrap-tpre
. "$top_srcdir/tests/wrapper/torch_lib.sh"
. "$top_srcdir/tests/cluster/lib.sh"
cluster_need
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T"; cluster_cleanup $rc' EXIT
[ "$(cluster_nodes | wc -l)" -ge 2 ] || fail "the cluster has fewer than 2 nodes"
W=$CLUSTER_WORK

job() {  # NAME FAULT: submit; print the job id
	cat >"$W/$1.sh" <<JOB
#!/bin/sh
export GLOO_SOCKET_IFNAME=lo EXAMPLE_FAULT=$2
exec "$WRAP" --ckpt-dir "$W/$1" --ckpt-tool "$CK" --tick 0.2 --hang-timeout-min 10 --hang-timeout-max 30 \\
	--backoff 0.2 -- /usr/bin/python3 "$EX" --steps 20
JOB
	chmod +x "$W/$1.sh"
	(cd "$W" && sbatch --parsable --requeue --open-mode=append -N2 --ntasks-per-node=1 \
		--llm-train=tp=1,ckpt-interval=1000 -o "$1.out" "$1.sh")
}
ref=$(job ref "") || fail "sbatch ref"
pre=$(job pre hold@8) || fail "sbatch pre"
show() { cat "$W/pre.out"; grep -E '"event":"(launch|signal|failure|action|requeue)"' "$W/pre/ledger.jsonl"; fail "$*"; }

i=0
until grep -q '^8 ' "$W/pre/heartbeat/rank_00000" 2>/dev/null; do   # rank 0 holds after step 8
	i=$((i + 1)); [ $i -le 2400 ] || show "rank 0 never reached step 8 (120 s)"
	sleep 0.05
done
scancel --batch --signal=USR1 "$pre" || fail "scancel --signal=USR1 $pre"

st=$(cluster_sbatch_wait "$pre" 240) || show "pre: job $pre ended $st"
[ "$(cluster_job_field "$pre" ExitCode)" = 0:0 ] || show "pre: exit code $(cluster_job_field "$pre" ExitCode)"
for r in 0 1; do
	grep -q "^rank $r: stopped after the save of step 8\$" "$W/pre.out" || show "pre: rank $r did not stop after step 8"
done
grep -q "llm_train: preempted (SIGUSR1): checkpoint of step 8 written, exit 87" "$W/pre.out" || show "pre: no exit 87 after step 8"
ledger pre "launches=2 failures=preempted restarts=0 requeues=1"
[ "$(cluster_job_field "$pre" Restarts)" = 1 ] || show "pre: Slurm did not requeue the job once"
grep '"event":"launch"' "$W/pre/ledger.jsonl" | tail -n1 | grep -q '"resume_step":8,' ||
	show "pre: the requeued run did not resume from step 8"
got=$(cd "$W/pre" && ls -d step_* | tr '\n' ' ')
[ "$got" = "step_00000008 step_00000020 " ] || show "pre: checkpoints $got, want the signalled step 8 and the final 20"
[ "$("$CK" ckpt-list "$W/pre" | sed -n 2p)" = "8 $W/pre/step_00000008" ] || show "pre: step 8 is not a complete checkpoint"
echo "ok: SIGUSR1 to the batch shell: both ranks saved step 8, exit 87, requeued, resumed from step 8, ended 0"

st=$(cluster_sbatch_wait "$ref" 240) || { cat "$W/ref.out"; fail "ref: job $ref ended $st"; }
cmp -s "$W/ref/final_weights.sha256" "$W/pre/final_weights.sha256" || show "pre: final weights differ from the unfaulted run"
echo "ok: the same final weights as the unfaulted run"
echo PASS
