#!/bin/sh
# tests/wrapper/wrap_torch_torchrun.sh: torchrun per node inside
# llm-train-wrap (sbatch -N2 --ntasks-per-node=1, each task the real
# torchrun --nproc_per_node 2 --node_rank $GROUP_RANK, tests/wrapper/torchrun-ref.py)
# starts 4 ranks for 2 Slurm tasks; etc/examples/ddp_train.py's rank 3
# is stopped (SIGSTOP) after step 12: the wrapper, watching every rank's
# heartbeat (not only the tasks' 0 and 1), finds the hang of rank 3,
# restarts from step 10 and the job finishes. Red before: only
# rank_00000 and rank_00001 were read; ranks 0-2 stayed fresh in
# ddp_hook's reduction waiting for rank 3, and the job hung until the
# test's time limit.
set -u
. "$top_srcdir/tests/cluster/lib.sh"
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
torch_cluster_need 2
W=$CLUSTER_WORK
cat >"$W/tr.sh" <<JOB
#!/bin/sh
export PYTHONPATH=$top_srcdir/wrapper/python LLM_TRAIN_PYTHONPATH=$top_srcdir/wrapper/python
export OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo EXAMPLE_FAULT=stop@12:3
exec "$WRAP" --ckpt-dir "$W/ck" --ckpt-tool "$top_builddir/wrapper/llm-train-ckpt-torch" --tick 0.2 \\
	--hang-timeout-min 6 --hang-timeout-max 6 --backoff 0.2 -- sh -c 'exec /usr/bin/python3 \\
	"$top_srcdir/tests/wrapper/torchrun-ref.py" --nnodes 2 --nproc_per_node 2 --node_rank \$GROUP_RANK \\
	--master_addr \$MASTER_ADDR --master_port \$MASTER_PORT "$top_srcdir/etc/examples/ddp_train.py" --steps 16'
JOB
chmod +x "$W/tr.sh"
j=$(cd "$W" && sbatch --parsable --no-requeue -N2 --ntasks-per-node=1 --llm-train=tp=1,ckpt-interval=5 \
	-o tr.out tr.sh) || fail "sbatch"
st=$(cluster_sbatch_wait "$j" 150) || { cat "$W/tr.out"; fail "job $j ended $st (a hang of rank 3 not found?)"; }
grep '"event":"hang"' "$W/ck/ledger.jsonl" | grep -q '"rank":3' ||
	{ cat "$W/tr.out"; fail "no hang of rank 3 in the ledger"; }
grep '"event":"launch","attempt":1' "$W/ck/ledger.jsonl" | grep -q '"resume_step":10' ||
	{ cat "$W/tr.out"; fail "not restarted from step 10"; }
[ -s "$W/ck/final_weights.sha256" ] || { cat "$W/tr.out"; fail "no final weights"; }
grep -q "heartbeats of 4 ranks for 2 tasks" "$W/tr.out" || { cat "$W/tr.out"; fail "the 4 ranks were not named"; }
echo "ok: torchrun per node: a stopped rank 3 of 4 (2 tasks) found, restarted from step 10, finished"
echo PASS
