#!/bin/sh
# tests/runtime/ckpt_generation.sh: checkpoints are ordered by their
# manifest's generation, not by the clock of the host that wrote them (a
# job's attempts run on other nodes: spares, requeues). One rank, tiny
# model, seconds:
# - A saves steps 2 and 4 (generations 1, 2); step 4's host clock ran a
#   day ahead (its created_ns moved a day on: what a later host whose
#   clock is behind sees);
# - B, a rollback to step 2 (LLM_TRAIN_RESUME), saves step 3: generation 3
#   (its writer lists CKPT_DIR at its first save: no start-up listing);
#   ckpt-list puts 3 first (before: 4, the abandoned, future-dated one);
# - C (LLM_TRAIN_RESUME unset, --ckpt-keep 2) resumes from step 3 (before:
#   4), saves step 5 (generation 4, carried from its start-up listing), and
#   retention keeps 5 and 3 (before: 4 and 5).
set -u
ckpt_name=ckptgen
. "$top_srcdir/tests/runtime/ckpt_lib.sh"
mkdir "$W/data"
/usr/bin/python3 "$top_srcdir/tests/runtime/tiny_shard.py" "$W/data/s.bin" || fail "no token shard"
D=$W/ck
train() {  # NAME RESUME ARGS...: one run (RESUME "-": LLM_TRAIN_RESUME unset), its output in $W/NAME.out
	_n=$1 _r=$2; shift 2
	if [ "$_r" = - ]; then _e="env -u LLM_TRAIN_RESUME"; else _e="env LLM_TRAIN_RESUME=$_r"; fi
	$_e $LT --model "$top_srcdir/configs/tiny.yaml" --data "$W/data" --seq 16 --micro-batch 1 --quiet \
		--ckpt-dir "$D" "$@" >"$W/$_n.out" 2>&1; _rc=$?
	[ $_rc = 0 ] || { cat "$W/$_n.out"; fail "$_n: exit $_rc"; }
}
gen() {  # STEP: its manifest's generation
	/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("generation"))' \
		"$D/step_0000000$1/manifest.json"
}
train A - --steps 4 --ckpt-interval 2
[ "$(gen 2) $(gen 4)" = "1 2" ] || fail "A: generations $(gen 2) $(gen 4), want 1 2"
/usr/bin/python3 - "$D/step_00000004/manifest.json" <<'PY' || fail "cannot date step 4 ahead"
import json, os, sys
m = json.load(open(sys.argv[1]))
m["created_ns"] += 86400 * 10**9
open(sys.argv[1] + ".tmp", "w").write(json.dumps(m, indent=1))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
PY
train B "$D/step_00000002" --steps 3 --ckpt-interval 1
grep -q "resumed from $D/step_00000002 at step 2" "$W/B.out" || { cat "$W/B.out"; fail "B: no rollback to step 2"; }
[ "$(gen 3)" = 3 ] || fail "B: step 3's generation $(gen 3), want 3"
"$LT" ckpt-list "$D" >"$W/list" || fail "ckpt-list: exit $?"
printf '3 %s\n4 %s\n2 %s\n' "$D/step_00000003" "$D/step_00000004" "$D/step_00000002" | cmp -s - "$W/list" ||
	fail "ckpt-list after the rollback, want 3 4 2: $(cat "$W/list")"
echo "ok: a rollback's step 3 is listed first, above the abandoned step 4 dated a day ahead"
train C - --steps 5 --ckpt-interval 5 --ckpt-keep 2
grep -q "resumed from $D/step_00000003 at step 3" "$W/C.out" || { cat "$W/C.out"; fail "C: did not resume from step 3"; }
[ "$(gen 5)" = 4 ] || fail "C: step 5's generation $(gen 5), want 4"
got=$(cd "$D" && ls -d step_* | tr '\n' ' ')
[ "$got" = "step_00000003 step_00000005 " ] || fail "retention (keep 2) left $got, want steps 3 and 5"
echo "ok: the resume takes step 3; retention keeps the newest generations (5, 3)"
echo PASS
