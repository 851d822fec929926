#!/bin/sh
# tests/wrapper/wrap_torch_badckpt.sh: the PyTorch path's broken
# checkpoint (etc/examples/ddp_train.py, two local gloo ranks, under
# llm-train-wrap --no-srun with llm-train-ckpt-torch): a first job leaves
# steps 10 and 20; step 20's state.pt is then overwritten with zeros of
# the same size (its llm_train.complete marker still matches: it is
# listed). The next job's torch.load fails in phase load: the wrapper
# retries it in place once, then records ckpt_bad (rule load_phase) for
# step 20, resumes from step 10 and the job completes (exit 0); the bad
# state.pt is left as it was. Fails on the old code: the same checkpoint
# twice, then exit 70 (two attempts without progress).
set -u
TAG=torch-badck
. "$top_srcdir/tests/wrapper/torch_lib.sh"
D=$T/ck
job() {  # NAME ARGS...: one job under the wrapper
	_n=$1; shift
	env WORLD_SIZE=2 "$WRAP" --no-srun --ckpt-dir "$D" --ckpt-tool "$CK" --tick 0.2 --hang-timeout-min 5 \
		--hang-timeout-max 30 --backoff 0.2 -- "$T/two.sh" /usr/bin/python3 "$EX" "$@" >"$T/$_n.out" 2>&1
}
job first --steps 20 --ckpt-every 10 || { cat "$T/first.out"; fail "first job: exit $?"; }
S=$D/step_00000020/state.pt
[ -s "$S" ] && [ -d "$D/step_00000010" ] || fail "first job: no checkpoints 10 and 20: $(ls "$D")"
head -c "$(stat -c %s "$S")" /dev/zero >"$S.z" && mv "$S.z" "$S" && cp "$S" "$T/bad.pt"
"$CK" ckpt-list "$D" | grep -q "^20 " || fail "the damaged step 20 is not listed (the case needs it listed)"
# steps 21-24 saved at 14, 21, 24: step 20 is not saved again
job second --steps 24 --ckpt-every 7
rc=$?
[ $rc = 0 ] || { cat "$T/second.out"; fail "a broken newest checkpoint: wrapper exit $rc, want 0"; }
L=$D/ledger.jsonl
grep '"event":"ckpt_bad"' "$L" | grep '"rule":"load_phase"' | grep -q "\"path\":\"$D/step_00000020\"" ||
	{ cat "$L"; fail "no ckpt_bad event for step 20"; }
grep '"event":"launch"' "$L" | tail -n 3 | sed 's/.*"resume_step":\([0-9]*\).*/\1/' | tr '\n' ' ' >"$T/resumes"
[ "$(cat "$T/resumes")" = "20 20 10 " ] || { cat "$L"; fail "resumed from $(cat "$T/resumes"), want 20 20 10"; }
[ -d "$D/step_00000024" ] || fail "the job did not reach step 24: $(ls "$D")"
cmp -s "$S" "$T/bad.pt" || fail "the bad checkpoint was changed"
echo "ok: torch.load failed twice on step 20 (load phase): ckpt_bad, resumed from step 10, done; step 20 kept"
