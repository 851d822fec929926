#!/bin/sh
# tests/runtime/loop_resume.sh: resume is exact. A dp=2 run of 6 steps
# (checkpoint every 3) against a run that dies at step 5 (exit75 fault,
# exit code 75) and is resumed from its step-3 checkpoint on attempt 1:
# the final weights (fp32 safetensors export), the step-6 fp32 master
# weights and AdamW moments (tests/runtime/ckpt_compare.py) and the gradient
# norms must be bit-identical. Then the step-3 checkpoint is resumed under
# another layout (tp=2, dp=1): losses, norms and step-6 state of steps 4-6
# within the limits stated below.
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
CMP="/usr/bin/python3 $top_srcdir/tests/runtime/ckpt_compare.py"
$CMP "$W/a/step_00000006" "$W/b/step_00000006" 0 || fail "resumed fp32 weights or AdamW state differ from the uninterrupted run"
[ "$(norms "$W/a/metrics.jsonl" | tail -n 3)" = "$(norms "$W/b/metrics.jsonl" | tail -n 3)" ] ||
	fail "resumed gradient norms of steps 4-6 differ from the uninterrupted run"
echo "resume: final weights, AdamW state and gradient norms bit-identical"

# another layout from the same checkpoint
LLM_TRAIN_RESUME="$W/b/step_00000003" train 2 1 1 --steps 6 --micro-batch 4 --grad-accum 2 \
	--ckpt-interval 3 --precision fp32 --ckpt-dir "$W/c" || { cat "$W/last.out"; fail "tp=2 resume exited $?"; }
losses "$W/a/metrics.jsonl" | tail -n 3 >"$W/a.loss"
losses "$W/c/metrics.jsonl" >"$W/c.loss"
[ "$(wc -l <"$W/c.loss")" = 3 ] || fail "tp=2 resume: want 3 steps (4-6)"
norms "$W/a/metrics.jsonl" | tail -n 3 >"$W/a.norm"
norms "$W/c/metrics.jsonl" >"$W/c.norm"
# fp32 sums in another order under tp=2: measured loss 2.7e-8, norm
# 1.2e-8, step-6 master 1.2e-7, adam_m 2.9e-7, adam_v 4.4e-7; limits ~20x
for x in loss:5e-7 norm:5e-7; do
	k=${x%%:*} t=${x#*:}
	paste "$W/a.$k" "$W/c.$k" | awk -v t="$t" -v k="$k" '{ d = $1 - $2; if (d < 0) d = -d; r = d / $1; if (r > w) w = r; if (r > t) bad = 1 }
		END { printf "resume under tp=2: worst relative %s difference %.2e (tolerance %g)\n", k, w, t; exit bad }' \
		|| fail "resume under another layout diverged ($k)"
done
$CMP "$W/a/step_00000006" "$W/c/step_00000006" master=3e-6,adam_m=6e-6,adam_v=8e-6 || fail "resume under another layout: step-6 state diverged"
echo PASS
