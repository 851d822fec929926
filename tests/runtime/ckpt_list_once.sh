#!/bin/sh
# tests/runtime/ckpt_list_once.sh: llm-train's start-up lists CKPT_DIR once
# (each listing reads every step's manifest and sizes its shards: on a
# parallel file system with many steps, a cost per rank). Counted with
# strace: the opens of CKPT_DIR as a directory before the first save's
# temporary directory (retention lists it again after a save, by design):
# - only incomplete steps, LLM_TRAIN_RESUME unset: refused (66), 1 listing;
# - the same with LLM_TRAIN_RESUME= (a fresh start on purpose): 1;
# - a complete step, LLM_TRAIN_RESUME unset: resumed from it, 1.
# Fails on the old code: 5, 5 and 2 listings.
set -u
command -v strace >/dev/null || { echo "SKIP: strace not installed"; exit 77; }
ckpt_name=listonce
. "$top_srcdir/tests/runtime/ckpt_lib.sh"
mkdir "$W/data"
/usr/bin/python3 "$top_srcdir/tests/runtime/tiny_shard.py" "$W/data/s.bin" || fail "no token shard"
TRAIN="$LT --model $top_srcdir/configs/tiny.yaml --data $W/data --seq 16 --micro-batch 1 --quiet"
# listings NAME CKPT_DIR WANT_EXIT [env...]: one traced run; prints the count
listings() {
	_n=$1 _d=$2 _w=$3; shift 3
	env "$@" strace -f -qq -e trace=openat,mkdir,mkdirat -o "$W/$_n.trace" $TRAIN --steps 3 --ckpt-dir "$_d" \
		>"$W/$_n.out" 2>&1; _rc=$?
	[ $_rc = "$_w" ] || { cat "$W/$_n.out"; fail "$_n: exit $_rc, want $_w"; }
	/usr/bin/python3 - "$W/$_n.trace" "$_d" <<'PY'
import re, sys
n = 0
for line in open(sys.argv[1]):
    if re.search(r'\bmkdir(at)?\(.*"' + re.escape(sys.argv[2]) + r'/\.tmp\.step_', line):
        break
    if re.search(r'\bopenat\([^,]*, "' + re.escape(sys.argv[2]) + r'/?", [^)]*O_DIRECTORY', line):
        n += 1
print(n)
PY
}
$TRAIN --steps 2 --ckpt-dir "$W/base" >"$W/base.out" 2>&1 || { cat "$W/base.out"; fail "base run"; }
mkdir -p "$W/cut/step_00000002" "$W/cut/.tmp.step_00000004.k1"
cp "$W/base/step_00000002/rank_00000.bin" "$W/cut/step_00000002/"
cp -r "$W/cut" "$W/cut2"

n=$(listings refuse "$W/cut" 66) || exit 1
[ "$n" = 1 ] || fail "only incomplete steps (refused): CKPT_DIR listed $n times, want 1"
n=$(listings fresh "$W/cut2" 0 LLM_TRAIN_RESUME=) || exit 1
[ "$n" = 1 ] || fail "only incomplete steps, LLM_TRAIN_RESUME=: CKPT_DIR listed $n times, want 1"
grep -q "the incomplete .* ignored; fresh start" "$W/fresh.out" || { cat "$W/fresh.out"; fail "fresh: not said"; }
n=$(listings resume "$W/base" 0) || exit 1
[ "$n" = 1 ] || fail "a complete step: CKPT_DIR listed $n times before the first save, want 1"
grep -q "resumed from $W/base/step_00000002 at step 2" "$W/resume.out" || { cat "$W/resume.out"; fail "not resumed"; }
echo "PASS: CKPT_DIR listed once at the start (refused, fresh, resumed)"
