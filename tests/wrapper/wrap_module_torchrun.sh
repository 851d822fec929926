#!/bin/sh
# tests/wrapper/wrap_module_torchrun.sh: llm-train-wrap watches one
# heartbeat per Slurm task (rank_00000 .. ntasks-1); under torchrun per
# node inside the wrapper (srun --ntasks-per-node=1 torchrun
# --nproc_per_node=2) WORLD_SIZE is larger and a hang of a rank past them
# is never found (its peers wait in ddp_hook's reduction, fresh: seen on
# the emulated cluster, rank 3 of 4 hung 40 s with a 10 s timeout). So
# llm_train.Job() says so on rank 0, once, naming both numbers; one task
# per rank (the plugin's variables, no torchrun) stays quiet. Red before:
# no warning.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-wrap-mtrun.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_CKPT_INTERVAL SLURM_NTASKS
export PYTHONPATH=$top_srcdir/wrapper/python LLM_TRAIN_CKPT_DIR=$T/ck LLM_TRAIN_ATTEMPT=0
py='import llm_train; llm_train.Job(signals=False)'
RANK=0 WORLD_SIZE=4 SLURM_STEP_NUM_TASKS=2 /usr/bin/python3 -c "$py" 2>"$T/many.err" || fail "Job() failed: $(cat "$T/many.err")"
grep -q "WORLD_SIZE 4 but the step has 2 tasks" "$T/many.err" || fail "no warning for 4 ranks in 2 tasks: '$(cat "$T/many.err")'"
RANK=1 WORLD_SIZE=4 SLURM_STEP_NUM_TASKS=2 /usr/bin/python3 -c "$py" 2>"$T/r1.err" || fail "Job() failed on rank 1"
[ -s "$T/r1.err" ] && fail "rank 1 warned too: $(cat "$T/r1.err")"
RANK=0 WORLD_SIZE=2 SLURM_STEP_NUM_TASKS=2 /usr/bin/python3 -c "$py" 2>"$T/one.err" || fail "Job() failed"
[ -s "$T/one.err" ] && fail "one task per rank warned: $(cat "$T/one.err")"
env -u LLM_TRAIN_ATTEMPT RANK=0 WORLD_SIZE=4 SLURM_STEP_NUM_TASKS=2 /usr/bin/python3 -c "$py" 2>"$T/nowrap.err" || fail "Job() failed"
[ -s "$T/nowrap.err" ] && fail "warned without llm-train-wrap: $(cat "$T/nowrap.err")"
echo "PASS: torchrun per node inside llm-train-wrap is named (4 ranks, 2 watched); one task per rank is quiet"
