#!/bin/sh
# tests/wrapper/wrap_torch_auto.sh: ckpt-interval=auto (the shipped
# policy's default, so every job that names no --llm-train=ckpt-interval
# gets it) honours the script's job.ckpt_due(step, every=N) until a save
# has been timed: etc/examples/ddp_train.py --ckpt-every 3 --steps 11
# under LLM_TRAIN_CKPT_INTERVAL=auto saves step 3 first. Red before:
# auto's first interval was 600 s whatever every= said, so a job of a few
# minutes saved nothing but its final step and a crash lost all of it.
set -u
TAG=wrap-tauto
. "$top_srcdir/tests/wrapper/torch_lib.sh"
LLM_TRAIN_CKPT_INTERVAL=auto; export LLM_TRAIN_CKPT_INTERVAL
timeout -k 5 120 "$WRAP" --no-srun --ckpt-dir "$T/auto" --ckpt-tool "$CK" --tick 0.2 --hang-timeout-min 10 \
	--hang-timeout-max 30 --max-restarts 0 -- "$T/two.sh" /usr/bin/python3 "$EX" --steps 11 --ckpt-every 3 \
	>"$T/auto.out" 2>&1 || { cat "$T/auto.out"; fail "auto: the job failed"; }
got=$(cd "$T/auto" && ls -d step_* | tr '\n' ' ')
case "$got" in
step_00000003\ *step_00000011\ ) ;;
*) fail "ckpt-interval=auto, every=3: checkpoints '$got', want step 3 first (no save timed yet) and the final 11" ;;
esac
echo "ok: ckpt-interval=auto: the first save at every=3 (step 3), then Young's interval ($got)"
echo PASS
