#!/bin/sh
# tests/runtime/start_guard.sh: llm-train's start-up never does the wrong
# thing with a user's weights silently (one rank, tiny model, seconds; the
# last case two ranks under a local mpirun, no cluster):
# - a CKPT_DIR holding only incomplete steps (an import cut short: its
#   .tmp.step_00000000.*; a step_N without its manifest) and
#   LLM_TRAIN_RESUME unset: exit 66, one line naming the directory and the
#   incomplete steps, nothing written there; LLM_TRAIN_RESUME= (the
#   wrapper's fresh start): trains, says the incomplete steps are ignored;
#   --init-from HFDIR: starts from its weights (the same first loss as
#   --init-from in an empty CKPT_DIR), says so; --resume CKPT_DIR: 66 naming
#   the incomplete steps;
# - under llm-train-wrap (--no-srun), after a crash in the first save (the
#   job's own attempt left the incomplete step): the wrapper's
#   LLM_TRAIN_RESUME= restarts in place from scratch and the job completes;
#   the job's first attempt on a cut import (incomplete steps from before
#   the job): LLM_TRAIN_RESUME unset, 66, not retried;
# - --init-from with a complete checkpoint in CKPT_DIR (a requeue, same
#   command line): resumes, and rank 0 says --init-from is not used;
# - --model naming a missing file (train and memory): 66 naming the path;
#   a directory as --model stays a usage error (64);
# - the master-share check failing on one rank (fault sharefail, dp=2):
#   every rank ends with 75 through the step's all-reduce, rank 0 says
#   so, no MPI_Abort.
# Fails on the old code: the incomplete CKPT_DIR trained from random
# weights (exit 0), no line about --init-from, a missing --model exited
# 64, and the share check's failure called MPI_Abort.
set -u
. "$top_srcdir/tests/cluster/lib.sh"   # mpi_local
fail() { echo "FAIL: $*"; exit 1; }
LT=$top_builddir/runtime/llm-train
[ -x "$LT" ] || fail "$LT is not built"
command -v mpirun >/dev/null 2>&1 || fail "mpirun missing (openmpi-bin is a dependency)"
W=$(mktemp -d /tmp/llmt-start.XXXXXX) || exit 1
trap 'rm -rf "$W"' EXIT
export OMP_NUM_THREADS=1
unset LLM_TRAIN_RESUME LLM_TRAIN_CKPT_DIR LLM_TRAIN_RUN_DIR LLM_TRAIN_HEARTBEAT_DIR LLM_TRAIN_FAULT \
	SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW
WRAP=$top_builddir/wrapper/llm-train-wrap
[ -x "$WRAP" ] || fail "$WRAP is not built"
MODEL=$top_srcdir/configs/tiny.yaml
mkdir "$W/data"
/usr/bin/python3 "$top_srcdir/tests/runtime/tiny_shard.py" "$W/data/s.bin" || fail "no token shard"
run() {  # run NAME [options...]: one tiny run; output in $W/NAME.out, .err
	_n=$1; shift
	"$LT" --model "$MODEL" --data "$W/data" --seq 16 --micro-batch 1 --quiet "$@" \
		>"$W/$_n.out" 2>"$W/$_n.err"
}
first_loss() { head -n 1 "$1" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["loss"])'; }

# a trained model and its export (the weights a user brings)
run base --steps 2 --ckpt-dir "$W/base" || { rc=$?; cat "$W/base.err"; fail "base run: exit $rc"; }
"$LT" export --dtype fp32 "$W/base" "$W/hf" >/dev/null || fail "export: exit $?"
# an import cut short: the temporary step directory with a part of its shard
mkdir -p "$W/cut/.tmp.step_00000000.k1"
head -c 4096 "$W/base/step_00000002/rank_00000.bin" >"$W/cut/.tmp.step_00000000.k1/rank_00000.bin"
cp -r "$W/cut" "$W/cut0"

# ---- only incomplete steps, LLM_TRAIN_RESUME unset: refused, 66 ----------
run refuse --steps 1 --ckpt-dir "$W/cut"; rc=$?
[ $rc = 66 ] || { cat "$W/refuse.err"; fail "incomplete CKPT_DIR: exit $rc, want 66 (not random weights)"; }
[ "$(grep -c . "$W/refuse.err")" = 1 ] || { cat "$W/refuse.err"; fail "incomplete CKPT_DIR: not one line"; }
grep -q "$W/cut holds no complete checkpoint.*\.tmp\.step_00000000\.k1.*LLM_TRAIN_RESUME=.*--init-from" "$W/refuse.err" ||
	{ cat "$W/refuse.err"; fail "incomplete CKPT_DIR: the line names not the directory, the step and what to do"; }
[ "$(ls -A "$W/cut")" = ".tmp.step_00000000.k1" ] || { ls -A "$W/cut"; fail "the refused run wrote into $W/cut"; }
echo "refused: $(cat "$W/refuse.err")"
# a step directory without its manifest (a copy cut short) too
mkdir "$W/cut2" && cp -r "$W/base/step_00000002" "$W/cut2/" && rm "$W/cut2/step_00000002/manifest.json"
run refuse2 --steps 1 --ckpt-dir "$W/cut2"; rc=$?
[ $rc = 66 ] && grep -q "$W/cut2 holds no complete checkpoint.*step_00000002" "$W/refuse2.err" ||
	{ cat "$W/refuse2.err"; fail "step dir without manifest: exit $rc, want 66 naming step_00000002"; }
# --resume CKPT_DIR names the incomplete steps
run resume --steps 1 --resume "$W/cut" --ckpt-dir "$W/r"; rc=$?
[ $rc = 66 ] && grep -q "no complete checkpoint (incomplete: \.tmp\.step_00000000\.k1)" "$W/resume.err" ||
	{ cat "$W/resume.err"; fail "--resume on an incomplete CKPT_DIR: exit $rc, want 66 naming the step"; }

# ---- LLM_TRAIN_RESUME= (the wrapper's deliberate fresh start): trains ------
LLM_TRAIN_RESUME= run fresh --steps 1 --ckpt-dir "$W/cut" ||
	{ rc=$?; cat "$W/fresh.err"; fail "LLM_TRAIN_RESUME= on an incomplete CKPT_DIR: exit $rc"; }
grep -q "the incomplete \.tmp\.step_00000000\.k1 ignored; fresh start (LLM_TRAIN_RESUME empty)" "$W/fresh.out" ||
	{ cat "$W/fresh.out"; fail "LLM_TRAIN_RESUME=: no line saying the incomplete step is ignored"; }
[ -d "$W/cut/step_00000001" ] || fail "LLM_TRAIN_RESUME=: no checkpoint saved"

# ---- the wrapper: a crash in the first save, restarts in place ----------
# (the job's first attempt crashes and leaves an incomplete step, as a
# crash inside its save would: the restart is told LLM_TRAIN_RESUME=, a
# fresh start on purpose)
LLM_TRAIN_FAULT=crash@1 "$WRAP" --no-srun --ckpt-dir "$W/wr" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- \
	sh -c 'd=$1 f=$2; shift 2; "$@" && exit 0; rc=$?; mkdir -p "$d/.tmp.step_00000002.k2" &&
		head -c 4096 "$f" >"$d/.tmp.step_00000002.k2/rank_00000.bin"; exit $rc' sh "$W/wr" "$W/base/step_00000002/rank_00000.bin" \
	"$LT" --model "$MODEL" --data "$W/data" --seq 16 --micro-batch 1 --steps 2 --quiet >"$W/wrap.out" 2>&1 ||
	{ rc=$?; cat "$W/wrap.out"; fail "wrapper after a crash in the first save: exit $rc"; }
[ "$(grep -c '"event":"launch"' "$W/wr/ledger.jsonl")" = 2 ] || { cat "$W/wrap.out"; fail "wrapper: not 2 launches"; }
grep -q "the incomplete \.tmp\.step_00000002\.k2 ignored; fresh start" "$W/wrap.out" &&
	[ -d "$W/wr/step_00000002" ] || { cat "$W/wrap.out"; fail "wrapper: the restart did not start fresh and finish"; }
# the same with --ckpt-tool none (the trainer resumes itself: the wrapper
# never sets LLM_TRAIN_RESUME): the restart (LLM_TRAIN_ATTEMPT 1) starts
# fresh too (it was 66, never retried: the job ended)
LLM_TRAIN_FAULT=crash@1 "$WRAP" --no-srun --ckpt-dir "$W/wn" --ckpt-tool none --tick 0.1 --backoff 0.2 -- \
	sh -c 'd=$1 f=$2; shift 2; "$@" && exit 0; rc=$?; mkdir -p "$d/.tmp.step_00000002.k4" &&
		head -c 4096 "$f" >"$d/.tmp.step_00000002.k4/rank_00000.bin"; exit $rc' sh "$W/wn" "$W/base/step_00000002/rank_00000.bin" \
	"$LT" --model "$MODEL" --data "$W/data" --seq 16 --micro-batch 1 --steps 2 --quiet >"$W/wn.out" 2>&1 ||
	{ rc=$?; cat "$W/wn.out"; fail "wrapper --ckpt-tool none after a crash in the first save: exit $rc"; }
grep -q "the incomplete \.tmp\.step_00000002\.k4 ignored; fresh start (a restart" "$W/wn.out" &&
	[ -d "$W/wn/step_00000002" ] || { cat "$W/wn.out"; fail "wrapper --ckpt-tool none: the restart did not start fresh"; }
echo "wrapper --ckpt-tool none, crash in the first save: the restart starts fresh"

# ---- the wrapper's first attempt on a cut import: 66, not retried ---------
# (the incomplete step was there before the job: LLM_TRAIN_RESUME stays
# unset, the trainer's rule refuses; the wrapper does not retry 66)
mkdir -p "$W/wc/.tmp.step_00000000.k3"
"$WRAP" --no-srun --ckpt-dir "$W/wc" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- \
	"$LT" --model "$MODEL" --data "$W/data" --seq 16 --micro-batch 1 --steps 2 --quiet >"$W/wc.out" 2>&1
rc=$?
[ $rc = 66 ] || { cat "$W/wc.out"; fail "wrapper on a cut import: exit $rc, want 66"; }
[ "$(grep -c '"event":"launch"' "$W/wc/ledger.jsonl")" = 1 ] || { cat "$W/wc.out"; fail "wrapper on a cut import: retried"; }
grep -q "holds no complete checkpoint, only the incomplete \.tmp\.step_00000000\.k3" "$W/wc.out" ||
	{ cat "$W/wc.out"; fail "wrapper on a cut import: no line naming the incomplete step"; }
ls "$W/wc" | grep -q '^step_' && fail "wrapper on a cut import: a checkpoint was written"
echo "wrapper, first attempt on a cut import: exit 66, 1 launch"

# ---- --init-from and only incomplete steps: its weights, said ------------
run iref --steps 1 --init-from "$W/hf" --ckpt-dir "$W/iref" ||
	{ rc=$?; cat "$W/iref.err"; fail "--init-from: exit $rc"; }
run init --steps 1 --init-from "$W/hf" --ckpt-dir "$W/cut0" ||
	{ rc=$?; cat "$W/init.err"; fail "--init-from on an incomplete CKPT_DIR: exit $rc"; }
grep -q "$W/cut0 holds no complete checkpoint: the incomplete \.tmp\.step_00000000\.k1 ignored; starting from --init-from $W/hf" \
	"$W/init.out" || { cat "$W/init.out"; fail "--init-from: no line saying the incomplete step is ignored"; }
[ "$(first_loss "$W/cut0/metrics.jsonl")" = "$(first_loss "$W/iref/metrics.jsonl")" ] ||
	fail "--init-from on an incomplete CKPT_DIR: first loss differs from --init-from's (not its weights)"

# ---- --init-from with a complete checkpoint: resumed, and said -----------
run requeue --steps 3 --init-from "$W/hf" --ckpt-dir "$W/base" ||
	{ rc=$?; cat "$W/requeue.err"; fail "requeue: exit $rc"; }
grep -q "^llm-train: resuming from $W/base/step_00000002; --init-from $W/hf is not used (a checkpoint exists)$" \
	"$W/requeue.out" || { cat "$W/requeue.out"; fail "--init-from ignored without a word"; }
grep -q "resumed from $W/base/step_00000002 at step 2" "$W/requeue.out" || { cat "$W/requeue.out"; fail "not resumed"; }

# ---- a missing --model: 66 naming it; a directory: 64 --------------------
"$LT" train --model "$W/nonexistent.yaml" --data "$W/data" --steps 1 >"$W/m.out" 2>"$W/m.err"; rc=$?
[ $rc = 66 ] && grep -q "$W/nonexistent.yaml: cannot open" "$W/m.err" ||
	{ cat "$W/m.err"; fail "train --model MISSING: exit $rc, want 66 naming the file"; }
"$LT" memory --model "$W/nonexistent.yaml" >"$W/m.out" 2>"$W/m.err"; rc=$?
[ $rc = 66 ] && grep -q "$W/nonexistent.yaml: cannot open" "$W/m.err" ||
	{ cat "$W/m.err"; fail "memory --model MISSING: exit $rc, want 66 naming the file"; }
echo "missing --model: exit 66: $(cat "$W/m.err")"
"$LT" train --model "$W/data" --data "$W/data" --steps 1 >"$W/m.out" 2>"$W/m.err"; rc=$?
[ $rc = 64 ] || { cat "$W/m.err"; fail "train --model DIRECTORY: exit $rc, want 64"; }

# ---- the master-share check fails on rank 1 (dp=2): 75 the normal way ----
mpi_local --tcp timeout 120 mpirun -np 2 -x LLM_TRAIN_DP=2 -x OMP_NUM_THREADS -x LLM_TRAIN_FAULT=sharefail@2:1 \
	"$LT" --model "$MODEL" --data "$W/data" --seq 16 --micro-batch 1 --steps 4 --sdc-interval 1 \
	--ckpt-dir "$W/share" --quiet >"$W/share.out" 2>&1; rc=$?
[ $rc = 75 ] || { cat "$W/share.out"; fail "share check failed: exit $rc, want 75"; }
grep -q "rank 1: step 2: the master-share check could not run" "$W/share.out" &&
	grep -q "step 2: the master-share check failed on 1 rank(s): exit 75" "$W/share.out" ||
	{ cat "$W/share.out"; fail "share check failed: no line from rank 1 and from rank 0"; }
grep -q "MPI_ABORT" "$W/share.out" && { cat "$W/share.out"; fail "share check failed: MPI_Abort, not the agreed exit"; }
[ "$(wc -l <"$W/share/metrics.jsonl")" = 1 ] || fail "share check failed: step 2 was trained"
echo "PASS: incomplete CKPT_DIR refused (66) unless said otherwise, --init-from's fate said, missing --model 66, share-check failure 75"
