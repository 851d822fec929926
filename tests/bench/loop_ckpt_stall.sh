#!/bin/sh
# tests/bench/loop_ckpt_stall.sh: what an asynchronous checkpoint costs the
# training loop. The same 12 steps of a ~25M-parameter model (bf16, B=4,
# T=128, 2 threads) run without checkpoints (the reference, same run) and
# with a checkpoint every 4 steps (~300 MB of master weights + AdamW state).
# Reported: the stall (time the loop spends inside the save call, the
# host snapshot) as % of the reference median step, and the slowdown of
# the whole run (the background writer shares the 2 cores). Goal: stall < 5%.
. "${top_srcdir:-.}/tests/bench/loop_lib.sh"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
run() { "$LT" --model "$W/m25.yaml" --data "$W/corpus" --steps 12 --micro-batch 4 --seq 128 \
	--precision bf16 --quiet --sdc-interval 0 "$@"; }
run --run-dir "$W/ref"
run --ckpt-dir "$W/ck" --ckpt-interval 4 --ckpt-keep 2
ref=$(column step_time_s "$W/ref/metrics.jsonl" 'step > 1' | median)
stall=$(column ckpt_time_s "$W/ck/metrics.jsonl" 'step % 4 == 0 and step < 12' | median)
tref=$(column step_time_s "$W/ref/metrics.jsonl" 'step > 1' | awk '{ s += $1 } END { print s }')
tck=$(column step_time_s "$W/ck/metrics.jsonl" 'step > 1 and step < 12' | awk '{ s += $1 } END { print s }')
tref14=$(column step_time_s "$W/ref/metrics.jsonl" 'step > 1 and step < 12' | awk '{ s += $1 } END { print s }')
bytes=$(du -sb "$W/ck/step_00000012" | cut -f1)
awk -v r="$ref" -v s="$stall" -v a="$tref14" -v b="$tck" -v by="$bytes" 'BEGIN {
	printf "loop_ckpt_stall: checkpoint %.0f MB; median step %.3f s; stall %.4f s = %.2f%% of a step (goal < 5%%); steps 2-11 with checkpoints every 4: %.2f s vs %.2f s without (x%.3f)\n",
		by / 1e6, r, s, 100 * s / r, b, a, b / a }'
