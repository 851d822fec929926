#!/bin/sh
# tests/wrapper/wrap_torch_savehang.sh: a save that hangs inside
# job.phase("save") of the llm_train module (etc/examples/ddp_train.py,
# two local gloo ranks, --no-srun). EXAMPLE_FAULT=savehang@9 holds rank 0
# in the save of step 9 for 120 s before it writes; the module's refresh
# thread keeps both heartbeats fresh in phase save (rank 1 waits in the
# barrier), so no hang limit fires. The save limit (--save-factor 5 x the
# saves of steps 3 and 6, at least --save-timeout-min 3 s; pause cap 600 s)
# must: a save hang, a restart from the step-6 checkpoint, and final
# weights equal to those of a run without the fault (nothing saved lost).
set -u
TAG=wrap-tsavehang
. "$top_srcdir/tests/wrapper/torch_lib.sh"
wrap() {  # NAME [FAULT]
	mkdir -p "$T/$1"
	EXAMPLE_FAULT=${2:-} LLM_TRAIN_CKPT_DIR=$T/$1 "$WRAP" --no-srun --ckpt-dir "$T/$1" --ckpt-tool "$CK" --tick 0.1 \
		--hang-timeout-min 5 --hang-timeout-max 60 --save-factor 5 --save-timeout-min 3 --backoff 0.2 -- \
		"$T/two.sh" /usr/bin/python3 "$EX" --steps 12 --ckpt-every 3 >"$T/$1.out" 2>&1 ||
		{ cat "$T/$1.out"; fail "$1: wrapper exit $?"; }
}
wrap ref
wrap hung savehang@9
L=$T/hung/ledger.jsonl
grep -q "save hang: rank [01] on n[AB] in the save of step 9 for" "$T/hung.out" ||
	{ cat "$T/hung.out"; fail "no save hang in step 9's save"; }
/usr/bin/python3 - "$L" <<'PY' || { cat "$L"; fail "the ledger"; }
import json, sys
ev = list(map(json.loads, open(sys.argv[1])))
h = [e for e in ev if e.get('event') == 'hang']
assert len(h) == 1 and h[0]['save_step'] == 9, h
assert h[0]['save_limit_s'] < h[0]['save_held_s'] < 120 and h[0]['save_limit_s'] < 600, h
la = [e for e in ev if e.get('event') == 'launch']
assert len(la) == 2 and la[1]['resume_step'] == 6, la
print("save hang: held %.1f s, limit %.2f s (longest save %.3f s); resumed from step %d" % (
      h[0]['save_held_s'], h[0]['save_limit_s'], h[0]['save_longest_s'], la[1]['resume_step']))
PY
cmp -s "$T/ref/final_weights.sha256" "$T/hung/final_weights.sha256" || fail "final weights differ from the unfaulted run's"
echo "ok: final weights equal to the unfaulted run's"
echo PASS
