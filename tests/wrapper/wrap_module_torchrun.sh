#!/bin/sh
# tests/wrapper/wrap_module_torchrun.sh: llm-train-wrap watches the
# heartbeats of up to 8 ranks per Slurm task (WR_RANKS_PER_TASK: torchrun
# per node inside it, wrap_torch_torchrun.sh); a step with more ranks than
# that (torchrun --nproc_per_node=20 in one task) leaves ranks unwatched,
# whose hang is never found (their peers wait in ddp_hook's reduction,
# fresh). So llm_train.Job() says so on rank 0, once, naming both
# numbers; 16 ranks in 2 tasks and one task per rank stay quiet. Red
# before: no warning.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-wrap-mtrun.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_CKPT_INTERVAL SLURM_NTASKS
export PYTHONPATH=$top_srcdir/wrapper/python LLM_TRAIN_CKPT_DIR=$T/ck LLM_TRAIN_ATTEMPT=0
py='import llm_train; llm_train.Job(signals=False)'
RANK=0 WORLD_SIZE=20 SLURM_STEP_NUM_TASKS=2 /usr/bin/python3 -c "$py" 2>"$T/many.err" || fail "Job() failed: $(cat "$T/many.err")"
grep -q "WORLD_SIZE 20 but the step has 2 tasks.*ranks 0..15 only" "$T/many.err" ||
	fail "no warning for 20 ranks in 2 tasks: '$(cat "$T/many.err")'"
RANK=0 WORLD_SIZE=16 SLURM_STEP_NUM_TASKS=2 /usr/bin/python3 -c "$py" 2>"$T/16.err" || fail "Job() failed"
[ -s "$T/16.err" ] && fail "16 ranks in 2 tasks (all watched) warned: $(cat "$T/16.err")"
RANK=1 WORLD_SIZE=20 SLURM_STEP_NUM_TASKS=2 /usr/bin/python3 -c "$py" 2>"$T/r1.err" || fail "Job() failed on rank 1"
[ -s "$T/r1.err" ] && fail "rank 1 warned too: $(cat "$T/r1.err")"
RANK=0 WORLD_SIZE=2 SLURM_STEP_NUM_TASKS=2 /usr/bin/python3 -c "$py" 2>"$T/one.err" || fail "Job() failed"
[ -s "$T/one.err" ] && fail "one task per rank warned: $(cat "$T/one.err")"
env -u LLM_TRAIN_ATTEMPT RANK=0 WORLD_SIZE=20 SLURM_STEP_NUM_TASKS=2 /usr/bin/python3 -c "$py" 2>"$T/nowrap.err" || fail "Job() failed"
[ -s "$T/nowrap.err" ] && fail "warned without llm-train-wrap: $(cat "$T/nowrap.err")"
echo "PASS: 20 ranks in 2 tasks named (16 watched); 16 in 2 and one task per rank quiet"
