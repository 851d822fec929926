#!/bin/sh
# tests/runtime/loop_resume.sh: resume is exact. A dp=2 run of 6 steps
# (checkpoint every 3) against a run that dies at step 5 (exit75 fault,
# exit code 75) and is resumed from its step-3 checkpoint on attempt 1:
# the final weights (fp32 safetensors export) must be bit-identical. Then
# the step-3 checkpoint is resumed under another layout (tp=2, dp=1): the
# losses of steps 4-6 must match within 1e-4 relative.
set -u
. "$top_srcdir/tests/runtime/loop_lib.sh"
W=$CLUSTER_WORK
common="--steps 6 --micro-batch 2 --grad-accum 2 --ckpt-interval 3 --precision fp32"

train 1 1 2 $common --ckpt-dir "$W/a" || { cat "$W/last.out"; fail "run a exited $?"; }
# the stall at step 4 (10 s with the watchdog off) lets the background write
# of the step-3 checkpoint finish before the abrupt exit at step 5: steps of
# this model take milliseconds, the write's fsyncs more
LLM_TRAIN_COMM_TIMEOUT=0 LLM_TRAIN_FAULT=stall@4,exit75@5 train 1 1 2 $common --ckpt-dir "$W/b"
rc=$?
[ $rc = 75 ] || { cat "$W/last.out"; fail "exit75 fault: want exit 75, got $rc"; }
newest=$("$LT" ckpt-list "$W/b" | head -n 1)
[ "$newest" = "3 $W/b/step_00000003" ] || fail "after the fault the newest checkpoint is '$newest', want step 3"
LLM_TRAIN_ATTEMPT=1 LLM_TRAIN_FAULT=exit75@5 LLM_TRAIN_RESUME="$W/b" train 1 1 2 $common --ckpt-dir "$W/b" \
	|| { cat "$W/last.out"; fail "resumed run exited $?"; }
grep -q "resumed from .*step_00000003 at step 3" "$W/last.out" || fail "no resume message"
"$LT" export --dtype fp32 "$W/a/step_00000006" "$W/ea" >/dev/null || fail "export a"
"$LT" export --dtype fp32 "$W/b/step_00000006" "$W/eb" >/dev/null || fail "export b"
cmp "$W/ea/model.safetensors" "$W/eb/model.safetensors" || fail "resumed weights differ from the uninterrupted run"
echo "resume: final weights bit-identical"

# another layout from the same checkpoint
LLM_TRAIN_RESUME="$W/b/step_00000003" train 2 1 1 --steps 6 --micro-batch 4 --grad-accum 2 \
	--ckpt-interval 3 --precision fp32 --ckpt-dir "$W/c" || { cat "$W/last.out"; fail "tp=2 resume exited $?"; }
losses "$W/a/metrics.jsonl" | tail -n 3 >"$W/a.loss"
losses "$W/c/metrics.jsonl" >"$W/c.loss"
[ "$(wc -l <"$W/c.loss")" = 3 ] || fail "tp=2 resume: want 3 steps (4-6)"
paste "$W/a.loss" "$W/c.loss" | awk '{ d = $1 - $2; if (d < 0) d = -d; r = d / $1; if (r > w) w = r; if (r > 1e-4) bad = 1 }
	END { printf "resume under tp=2: worst relative loss difference %.2e (tolerance 1e-4)\n", w; exit bad }' \
	|| fail "resume under another layout diverged"
echo PASS
