#!/bin/sh
# tests/wrapper/wrap_torch_hang.sh: a hang under hand-written collectives
# (tests/wrapper/torch-hang.py, two local gloo ranks on "nodes" nA and nB,
# --no-srun, WORLD_SIZE=2 so that both are watched): rank 1 stops at step 3, rank 0 waits for it in an all-reduce.
# - bare (no ddp_hook, nothing marked): both heartbeats stop within a
#   fraction of a second; the wrapper names no rank and no node ("all 2
#   ranks stopped beating within ... no rank singled out"; red before: it
#   blamed a rank and its node, whichever beat first);
# - marked (rank 0 waits inside `with job.collective():`): rank 0 stays
#   fresh and rank 1 on nB is named (red when collective() marks nothing:
#   no rank singled out).
set -u
TAG=wrap-thang
. "$top_srcdir/tests/wrapper/torch_lib.sh"
S=$top_srcdir/tests/wrapper/torch-hang.py
run() {  # MODE: the wrapper's output in $T/MODE.out
	LLM_TRAIN_CKPT_DIR=$T/$1; export LLM_TRAIN_CKPT_DIR
	mkdir -p "$T/$1"
	WORLD_SIZE=2 timeout -k 5 90 "$WRAP" --no-srun --ckpt-dir "$T/$1" --ckpt-tool "$CK" --tick 0.2 --hang-timeout-min 6 \
		--hang-timeout-max 6 --max-restarts 0 -- "$T/two.sh" /usr/bin/python3 "$S" "$1" >"$T/$1.out" 2>&1
	grep -q "llm-train-wrap: hang: " "$T/$1.out" || { cat "$T/$1.out"; fail "$1: no hang found"; }
}

run bare
grep -q "hang: all 2 ranks stopped beating within [0-9.]* s: no rank singled out" "$T/bare.out" ||
	{ cat "$T/bare.out"; fail "bare: a rank was blamed"; }
! grep -q "hang: rank\|hang on n[AB]\|node fault" "$T/bare.out" || { cat "$T/bare.out"; fail "bare: a rank or node named"; }
echo "ok: bare all-reduce: $(grep -o 'all 2 ranks stopped beating within [0-9.]* s: no rank singled out' "$T/bare.out"), no node named"

run marked
grep -q "hang: rank 1 on nB silent" "$T/marked.out" || { cat "$T/marked.out"; fail "marked: rank 1 not named"; }
echo "ok: rank 0 inside job.collective() stayed fresh: $(grep -o 'hang: rank 1 on nB silent for [0-9.]* s' "$T/marked.out")"
echo PASS
