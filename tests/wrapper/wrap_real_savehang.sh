#!/bin/sh
# tests/wrapper/wrap_real_savehang.sh: a checkpoint save that hangs, under
# llm-train-wrap with the real trainer (llm-train, one rank, tiny model,
# --no-srun, no cluster). slowsave@6 sleeps in the save of step 6 for
# twice LLM_TRAIN_COMM_TIMEOUT (120 s here) before anything is written,
# with the heartbeat thread beating on in phase save, as a save stuck on
# the storage does: never silent, so the hang limits never fired and the
# wrapper waited for the save to end (or the pause cap, 10 x
# --hang-timeout-max = 600 s, for a rank whose beats stopped). The save
# limit (wrapper/savewatch.c) is --save-factor x the longest save seen, at
# least --save-timeout-min (3 s): the wrapper must declare a save hang
# (a hang event with save_held_s) before the sleep is over, restart, resume
# from the step-4 checkpoint (the last committed one) and end with weights
# and AdamW moments bit for bit those of a run without the fault. A second
# job on the same run dir hangs in its first save (slowsave@10): its limit
# comes from the first job's save events in the ledger (else, no save seen
# yet, the pause cap). Red with the save limit gone (wr_save_find never
# called): no hang, the job waits out the 120 s save and ends without one.
set -u
TAG=savehang
. "$top_srcdir/tests/wrapper/real_lib.sh"
tiny_data
TRAIN="$LT --model $MODEL --data $W/data --seq 16 --micro-batch 1 --ckpt-interval 2 --quiet"
fin() { printf '%s/step_%08d' "$1" "$2"; }
# the unfaulted runs: 8 steps, then 12 resumed from its step 8 (as the jobs below)
for n in 8 12; do
	$TRAIN --steps $n --ckpt-dir "$W/ref" >"$W/ref$n.out" 2>&1 || { cat "$W/ref$n.out"; fail "reference run $n: exit $?"; }
done
grep -q "resum.*step 8\|step_00000008" "$W/ref12.out" || echo "note: $(head -n 3 "$W/ref12.out")"
D=$W/ck L=$W/ck/ledger.jsonl
# the fault in the first launch of each job only (the second job's
# attempts are numbered on from the first's: a fault of attempt 0 only
# would never fire there)
cat >"$W/once.sh" <<'ONCE'
#!/bin/sh
[ -e "$1.fired" ] || { : >"$1.fired"; LLM_TRAIN_FAULT=$2; export LLM_TRAIN_FAULT; }
shift 2
exec "$@"
ONCE
chmod +x "$W/once.sh"
wrap() {  # NAME STEPS FAULT: the wrapper on $D, its output in $W/NAME.out
	LLM_TRAIN_COMM_TIMEOUT=60 "$WRAP" --no-srun --ckpt-dir "$D" --ckpt-tool "$LT" --tick 0.1 \
		--hang-timeout-min 5 --hang-timeout-max 60 --save-factor 5 --save-timeout-min 3 --backoff 0.2 -- \
		"$W/once.sh" "$W/$1" "$3" $TRAIN --steps "$2" --ckpt-dir "$D" >"$W/$1.out" 2>&1
	_rc=$?
	[ $_rc = 0 ] || { cat "$W/$1.out"; fail "$1: wrapper exit $_rc, want 0"; }
}
field() {  # EVENT FIELD [N]: FIELD of the Nth (default last) EVENT line of the ledger
	/usr/bin/python3 - "$L" "$1" "$2" "${3:--1}" <<'PY'
import json, sys
ev = [e for e in map(json.loads, open(sys.argv[1])) if e.get('event') == sys.argv[2]]
print(ev[int(sys.argv[4])].get(sys.argv[3], '') if ev else '')
PY
}
# a hang event of the save of step STEP, cut short: held less than the
# fault's sleep, its limit max(3, 5 x the longest save then known)
check_hang() {  # NAME STEP
	grep -q "injected fault slowsave@$2 (120.0 s)" "$W/$1.out" || { cat "$W/$1.out"; fail "$1: no slowsave@$2 of 120 s"; }
	grep -q "save hang: rank 0 on .* in the save of step $2 for" "$W/$1.out" ||
		{ cat "$W/$1.out"; fail "$1: no save hang line for step $2 (waited for the save to end)"; }
	/usr/bin/python3 - "$L" "$2" <<'PY' || { cat "$W/$1.out"; fail "$1: the hang event"; }
import json, sys
ev = list(map(json.loads, open(sys.argv[1])))
i = max(k for k, e in enumerate(ev) if e.get('event') == 'hang')
h, saves = ev[i], [e['save_s'] for e in ev[:i] if e.get('event') == 'save']
assert h.get('save_step') == int(sys.argv[2]), h
assert saves and h['save_longest_s'] == max(saves), (h, saves)
want = min(600.0, max(3.0, 5 * max(saves)))
assert abs(h['save_limit_s'] - want) < 1e-9, (h, want)
assert h['save_limit_s'] < h['save_held_s'] < 120, h
print("hang: save of step %d held %.1f s, limit %.2f s (longest save %.3f s, pause cap 600 s)" % (
      h['save_step'], h['save_held_s'], h['save_limit_s'], h['save_longest_s']))
PY
}

wrap first 8 'slowsave!@6'
check_hang first 6
[ "$(grep -c '"event":"hang"' "$L")" = 1 ] || { cat "$L"; fail "first: not one hang"; }
[ "$(field launch resume_step)" = 4 ] || { cat "$L"; fail "first: the restart did not resume from step 4"; }
[ "$(field failure class)" = transient ] || { cat "$L"; fail "first: the save hang is not a transient failure"; }
/usr/bin/python3 "$top_srcdir/tests/runtime/ckpt_compare.py" "$(fin "$W/ref" 8)" "$(fin "$D" 8)" 0 ||
	fail "first: step 8 differs from the unfaulted run's"
echo "first job: save hang at step 6, restart from step 4, step 8 equal to the unfaulted run's"

# the second job's first save: its limit from the ledger's save events
wrap second 12 'slowsave!@10'
check_hang second 10
[ "$(grep -c '"event":"hang"' "$L")" = 2 ] || { cat "$L"; fail "second: not one more hang"; }
[ "$(field launch resume_step)" = 8 ] || { cat "$L"; fail "second: the restart did not resume from step 8"; }
/usr/bin/python3 "$top_srcdir/tests/runtime/ckpt_compare.py" "$(fin "$W/ref" 12)" "$(fin "$D" 12)" 0 ||
	fail "second: step 12 differs from the unfaulted run's"
echo "second job: its first save hung at step 10, found by the ledger's save limit; step 12 equal to the unfaulted run's"
echo PASS
