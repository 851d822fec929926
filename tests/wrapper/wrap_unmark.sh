#!/bin/sh
# tests/wrapper/wrap_unmark.sh: `llm-train-wrap ckpt-unmark RUN_DIR
# PATH...|--all` lifts ckpt_bad marks (llm-train, one rank, tiny model,
# seconds, --no-srun, no cluster). The only checkpoint marked bad: the job
# stops with 89 and its line names the command; after ckpt-unmark PATH
# (given another way: a trailing slash) the next job resumes from it; a
# later mark holds again (the ledger is read in order); --all lifts every
# mark. Hostile input: a PATH not marked (a newline, bytes that are not
# UTF-8, an option) is 64, names it, lists the marks and writes nothing; a
# FIFO as the ledger is refused at once (no hang); a missing RUN_DIR or
# ledger is 66, as for report.
# Fails on the old code: the stop line said to delete ledger lines by hand,
# and there was no such subcommand (64: "no checkpoint dir").
set -u
TAG=unmark
. "$top_srcdir/tests/wrapper/real_lib.sh"
tiny_data
D=$W/ck L=$W/ck/ledger.jsonl S=$W/ck/step_00000002
TRAIN="$LT --model $top_srcdir/configs/tiny.yaml --data $W/data --seq 16 --micro-batch 1 --quiet"
job() {  # job NAME STEPS: one wrapper job on $D; its output in $W/NAME.out
	"$WRAP" --no-srun --ckpt-dir "$D" --ckpt-tool "$LT" --tick 0.1 --backoff 0.2 -- \
		$TRAIN --steps "$2" --ckpt-dir "$D" >"$W/$1.out" 2>&1
}
mark() {  # mark PATH: a ckpt_bad event as the wrapper writes it (the manifest's identity)
	/usr/bin/python3 - "$1" "$L" <<'PY'
import json, os, sys, time
st = os.stat(sys.argv[1] + "/manifest.json")
i = "%x:%d.%09d" % (st.st_ino, st.st_mtime_ns // 10**9, st.st_mtime_ns % 10**9)
ev = {"time": time.time(), "event": "ckpt_bad", "attempt": 0, "path": sys.argv[1], "step": 2,
      "rule": "exit_code", "why": "exit 89: the trainer could not load it", "id": i}
open(sys.argv[2], "a").write(json.dumps(ev) + "\n")
PY
}
$TRAIN --steps 2 --ckpt-dir "$D" >"$W/first.out" 2>&1 || { cat "$W/first.out"; fail "first run"; }
: >"$L"
mark "$S"

# ---- marked: the job stops (89) and says how to lift the mark ------------
job stop 4; rc=$?
[ $rc = 89 ] || { cat "$W/stop.out"; fail "the only checkpoint marked: exit $rc, want 89"; }
grep -q "not starting from random weights; to try them again: llm-train-wrap ckpt-unmark $D --all" "$W/stop.out" ||
	{ cat "$W/stop.out"; fail "the stop line does not name ckpt-unmark"; }

# ---- hostile or wrong input: 64, one clear line, nothing written ----------
sum0=$(cksum <"$L")
try() {  # try WANT PATTERN ARGS...: ckpt-unmark exits WANT, says PATTERN, ledger unchanged
	_w=$1 _p=$2; shift 2
	timeout 20 "$WRAP" ckpt-unmark "$@" >"$W/u.out" 2>&1; _rc=$?
	[ $_rc = "$_w" ] || { cat "$W/u.out"; fail "ckpt-unmark $*: exit $_rc, want $_w"; }
	grep -q -- "$_p" "$W/u.out" || { cat "$W/u.out"; fail "ckpt-unmark $*: no line matching $_p"; }
	[ "$(cksum <"$L")" = "$sum0" ] || fail "ckpt-unmark $*: the ledger changed"
}
try 64 "'$D/step_00000004' is not marked bad in $L" "$D" "$D/step_00000004"
grep -q "marked bad: $S" "$W/u.out" || { cat "$W/u.out"; fail "not marked: the marks are not listed"; }
nl=$(printf '%s\nx' "$S")
try 64 "is not marked bad" "$D" "$nl"
try 64 "is not marked bad" "$D" "$(printf '%s\377' "$S")"
try 64 "not a checkpoint path" "$D" "-x"
try 64 "usage" "$D"
try 66 "'$W/nope' is not a run dir" "$W/nope" "$S"
mkdir "$W/empty" && : >"$W/file"
try 66 "'$W/empty' is not a run dir (no $W/empty/ledger.jsonl)" "$W/empty" "$S"
try 64 "'$W/file' is not a run dir" "$W/file" "$S"
mkdir "$W/fifo" && mkfifo "$W/fifo/ledger.jsonl"
timeout 20 "$WRAP" ckpt-unmark "$W/fifo" --all >"$W/u.out" 2>&1; rc=$?
[ $rc = 64 ] && grep -q "cannot read $W/fifo/ledger.jsonl" "$W/u.out" ||
	{ cat "$W/u.out"; fail "a FIFO as the ledger: exit $rc (124: it hung), want 64"; }
echo "hostile input: 64, the ledger unchanged, a FIFO refused"

# ---- ckpt-unmark PATH (another spelling of it): the next job resumes ------
"$WRAP" ckpt-unmark "$D" "$S/" >"$W/u.out" 2>&1 || { cat "$W/u.out"; fail "ckpt-unmark PATH: exit $?"; }
grep -q "$S: mark lifted" "$W/u.out" || { cat "$W/u.out"; fail "ckpt-unmark PATH: not said"; }
tail -n 1 "$L" | grep -q "\"event\":\"ckpt_unmark\",\"path\":\"$S\"" || { tail -n 1 "$L"; fail "no ckpt_unmark event"; }
job again 4 || { cat "$W/again.out"; fail "after ckpt-unmark: exit $?"; }
grep '"event":"launch"' "$L" | tail -n 1 | grep -q '"resume_step":2' || { cat "$W/again.out"; fail "not resumed from 2"; }
echo "ckpt-unmark PATH: the next job resumed from step 2"

# ---- a later mark holds again; --all lifts every mark ---------------------
rm -rf "$D/step_00000004"
mark "$S"
"$WRAP" ckpt-unmark "$D" >/dev/null 2>&1
job stop2 4; rc=$?
[ $rc = 89 ] || { cat "$W/stop2.out"; fail "marked again: exit $rc, want 89"; }
"$WRAP" ckpt-unmark "$D" --all >"$W/u.out" 2>&1 && grep -q "1 mark(s) lifted" "$W/u.out" ||
	{ cat "$W/u.out"; fail "ckpt-unmark --all"; }
job all 4 || { cat "$W/all.out"; fail "after --all: exit $?"; }
echo "PASS: ckpt-unmark lifts marks (PATH, --all), later marks hold, hostile input refused"
