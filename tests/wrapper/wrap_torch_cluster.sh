#!/bin/sh
# tests/wrapper/wrap_torch_cluster.sh: the PyTorch DDP example
# (etc/examples/ddp_train.py: gloo, the llm_train module) as real Slurm
# jobs on the emulated cluster: sbatch -N2 --llm-train=tp=1,ckpt-interval=5
# (the plugin sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
# LLM_TRAIN_CKPT_INTERVAL, which job.ckpt_due follows), llm-train-wrap
# launching it with srun, llm-train-ckpt-torch as --ckpt-tool. Four jobs
# side by side: unfaulted; kill -9 of rank 1 after step 12: restart from
# the step-10 checkpoint, the same final weights; SIGSTOP of rank 1 after
# step 12: the hang found from its heartbeat, its node (the allocation's
# second) named, restart from step 10, the same final weights; NaN from
# step 12: exit 85, rollback to step 10 with the data skipped, finished
# (weights differ: data was skipped). wrap_torch.sh runs the same locally.
set -u
. "$top_srcdir/tests/cluster/lib.sh"
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
torch_cluster_need 2
W=$CLUSTER_WORK
unset LLM_TRAIN_FAULT LLM_TRAIN_CKPT_INTERVAL
CK=$top_builddir/wrapper/llm-train-ckpt-torch
EX=$top_srcdir/etc/examples/ddp_train.py

job() {  # NAME [FAULT] [WRAPPER-OPTS]: submit; print the job id
	_n=$1 _f=${2:-}; shift; [ $# -gt 0 ] && shift
	cat >"$W/$_n.sh" <<JOB
#!/bin/sh
scontrol show hostnames "\$SLURM_JOB_NODELIST" | sed -n 2p >"$W/$_n.second"
export PYTHONPATH=$top_srcdir/wrapper/python LLM_TRAIN_PYTHONPATH=$top_srcdir/wrapper/python
export OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo EXAMPLE_FAULT=$_f
exec "$WRAP" --ckpt-dir "$W/$_n" --ckpt-tool "$CK" --tick 0.2 --hang-timeout-min 6 --hang-timeout-max 30 \\
	--backoff 0.2 $* -- /usr/bin/python3 "$EX" --steps 20
JOB
	chmod +x "$W/$_n.sh"
	(cd "$W" && sbatch --parsable --no-requeue -N2 --ntasks-per-node=1 --llm-train=tp=1,ckpt-interval=5 -o "$_n.out" "$_n.sh")
}
done_ok() {  # NAME JOBID
	_st=$(cluster_sbatch_wait "$2" 240) || { cat "$W/$1.out"; fail "$1: job $2 ended $_st"; }
	[ -s "$W/$1/final_weights.sha256" ] || { cat "$W/$1.out"; fail "$1: no final weights"; }
}
ref=$(job ref) || fail "sbatch ref"
kill=$(job kill kill@12:1) || fail "sbatch kill"
stop=$(job stop stop@12:1 --hang-timeout-max 6) || fail "sbatch stop"
nan=$(job nan nan@12 --rollback-steps 3 --skip-batches 4) || fail "sbatch nan"

done_ok ref "$ref"
[ "$(count launch "$W/ref/ledger.jsonl")" = 1 ] || fail "ref: not one launch"
grep -q '"event":"rank_times","attempt":0,"ranks":2' "$W/ref/ledger.jsonl" || fail "ref: no rank_times of 2 ranks"

done_ok kill "$kill"
[ "$(count failure "$W/kill/ledger.jsonl")" = 1 ] || { cat "$W/kill.out"; fail "kill: not one failure"; }
grep '"event":"launch","attempt":1' "$W/kill/ledger.jsonl" | grep -q '"resume_step":10' || fail "kill: not resumed from step 10"
cmp -s "$W/ref/final_weights.sha256" "$W/kill/final_weights.sha256" || fail "kill: final weights differ from the reference"
echo "ok: kill -9 of rank 1: restarted from step 10, same final weights"

done_ok stop "$stop"
second=$(cat "$W/stop.second")
grep '"event":"hang"' "$W/stop/ledger.jsonl" | grep -q "\"rank\":1,\"node\":\"$second\"" ||
	{ cat "$W/stop.out"; fail "stop: the hang of rank 1 on $second is not named"; }
grep '"event":"launch","attempt":1' "$W/stop/ledger.jsonl" | grep -q '"resume_step":10' || fail "stop: not resumed from step 10"
cmp -s "$W/ref/final_weights.sha256" "$W/stop/final_weights.sha256" || fail "stop: final weights differ from the reference"
echo "ok: SIGSTOP of rank 1: hang found from its heartbeat on $second, restarted from step 10, same final weights"

done_ok nan "$nan"
grep '"event":"failure"' "$W/nan/ledger.jsonl" | grep -q '"class":"numerical"' || { cat "$W/nan.out"; fail "nan: no numerical failure"; }
grep '"event":"launch","attempt":1' "$W/nan/ledger.jsonl" | grep -q '"resume_step":10,"skip_batches":[1-9]' ||
	{ grep '"event":"launch"' "$W/nan/ledger.jsonl"; fail "nan: not rolled back to step 10 with data skipped"; }
cmp -s "$W/ref/final_weights.sha256" "$W/nan/final_weights.sha256" && fail "nan: data was skipped but the weights equal the reference"
echo "ok: NaN from step 12: exit 85, rolled back to step 10, data skipped, finished"
echo PASS
