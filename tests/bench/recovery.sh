#!/bin/sh
# tests/bench/recovery.sh: time from an injected fault to the first resumed
# training step under llm-train-wrap on the emulated cluster, in place
# (kill -9 of one rank: restart in the same allocation) and by requeue
# (preemption: SIGUSR1 to the batch shell, checkpoint, scontrol requeue,
# the job's next run). Reference measured in the same run: the clean
# start's launch-to-first-step time. Trainer: llm-train when
# LLMT_BENCH_TRAINER names it, else the wrapper's test trainer.
# Writes the measured costs to $top_builddir/build/bench-recovery.env for
# bench/goodput.sh.
set -u
. "$top_srcdir/tests/cluster/lib.sh"
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
cluster_need
W=$CLUSTER_WORK
export LLM_TRAIN_CKPT_INTERVAL=5
unset LLM_TRAIN_FAULT
N=${LLMT_BENCH_NODES:-4}

LT=${LLMT_BENCH_TRAINER:-}
if [ -n "$LT" ]; then
	# the real trainer: tiny model, dp over N nodes, MPI over PMIx
	LLM_TRAIN=$LT "$top_srcdir/scripts/make-corpus" "$W/corpus" --max-bytes 300000 --shard-tokens 100000 \
		>/dev/null || fail "make-corpus failed"
	export SLURM_MPI_TYPE=pmix OMP_NUM_THREADS=1 LLM_TRAIN_TP=1 LLM_TRAIN_PP=1 LLM_TRAIN_DP=$N
	CMD="$LT --model $top_srcdir/configs/tiny.yaml --data $W/corpus --seq 64 --micro-batch 2 --lr 1e-3 --warmup 2 --steps 40 --ckpt-interval 5 --quiet"
	TOOL="--ckpt-tool $LT"
else
	CMD="$TRAINER --steps 60"
	TOOL=
fi

job() {  # NAME: submit an N-node, N-rank job; print its id
	cat >"$W/$1.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$W/$1" $WRAP_FAST $TOOL -- $CMD
JOB
	chmod +x "$W/$1.sh"
	(cd "$W" && sbatch --parsable --requeue --open-mode=append -o "$1.out" -N"$N" --ntasks-per-node=1 "$1.sh")
}

# rank1 JOBID: pid of the task with SLURM_PROCID=1 of that job
rank1() {
	for _p in $(pgrep -f "$(basename "${LT:-$TRAINER}")"); do
		_e=$(tr '\0' '\n' <"/proc/$_p/environ" 2>/dev/null) || continue
		echo "$_e" | grep -qx "SLURM_JOB_ID=$1" && echo "$_e" | grep -qx "SLURM_PROCID=1" && { echo "$_p"; return 0; }
	done
	return 1
}
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.6f\", $* }"; }
# first_step LEDGER ATTEMPT: t_first_step of that attempt
first_step() {
	grep '"event":"attempt"' "$1" | grep "\"attempt\":$2," | sed 's/.*"t_first_step":\([0-9.]*\).*/\1/'
}
field() { grep "\"event\":\"$2\"" "$1" | head -n 1 | sed "s/.*\"$3\":\([0-9.]*\).*/\1/"; }

j=$(job clean) || fail "sbatch"
cluster_sbatch_wait "$j" 120 >/dev/null || fail "clean run failed"
launch=$(field "$W/clean/ledger.jsonl" attempt t_launch)
first=$(first_step "$W/clean/ledger.jsonl" 0)
clean=$(calc "$first - $launch")

j=$(job inplace) || fail "sbatch"
wait_file "$W/inplace/step_00000010/manifest.json" 60 || fail "no checkpoint"
pid=$(rank1 "$j") || fail "no rank 1"
t0=$(now); kill -9 "$pid"
cluster_sbatch_wait "$j" 120 >/dev/null || fail "in-place run failed"
inplace=$(calc "$(first_step "$W/inplace/ledger.jsonl" 1) - $t0")

j=$(job requeue) || fail "sbatch"
wait_file "$W/requeue/step_00000010/manifest.json" 60 || fail "no checkpoint"
t0=$(now); scancel --batch --signal=USR1 "$j"
cluster_sbatch_wait "$j" 180 >/dev/null || fail "requeued run failed"
requeue=$(calc "$(first_step "$W/requeue/ledger.jsonl" 1) - $t0")

ckpt=$(sed -n 's/.*"ckpt_time_s": *\([0-9.e-]*\).*/\1/p' "$W/clean/metrics.jsonl" "$W/clean/"*/metrics.jsonl 2>/dev/null | awk '$1 > 0' | sort -g |
	awk '{v[NR]=$1} END {print NR ? v[int((NR+1)/2)] : 0}')
printf 'clean start (launch to first step): %.2f s  [reference]\n' "$clean"
printf 'in place (kill -9 of a rank to first resumed step): %.2f s  (%.2fx the clean start)\n' "$inplace" "$(calc "$inplace / $clean")"
printf 'requeue (SIGUSR1 to first step of the next run): %.2f s  (%.2fx the clean start)\n' "$requeue" "$(calc "$requeue / $clean")"
printf 'checkpoint cost (median ckpt_time_s): %.4f s\n' "$ckpt"
mkdir -p "$top_builddir/build"
printf 'CKPT=%s\nRESTART=%s\nREQUEUE=%s\n' "$ckpt" "$inplace" "$requeue" >"$top_builddir/build/bench-recovery.env"
