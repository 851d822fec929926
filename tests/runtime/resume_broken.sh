#!/bin/sh
# tests/runtime/resume_broken.sh: a resume from a checkpoint that lacks a
# piece is a broken checkpoint (89: the wrapper marks it and falls back to
# an older one), whatever the piece: its manifest, a shard, the training
# state blob, a tensor's pieces, an optimizer state; each says so in one
# line naming the step directory. Nothing to resume from stays 66 (not a broken checkpoint,
# never marked): a missing --resume directory, a step directory that is
# gone, a CKPT_DIR with no step at all. One rank, tiny model, seconds.
# Fails on the old code: the missing state blob and the missing manifest
# exited 66.
set -u
ckpt_name=rbroken
. "$top_srcdir/tests/runtime/ckpt_lib.sh"
mkdir "$W/data"
/usr/bin/python3 "$top_srcdir/tests/runtime/tiny_shard.py" "$W/data/s.bin" || fail "no token shard"
TRAIN="$LT --model $top_srcdir/configs/tiny.yaml --data $W/data --seq 16 --micro-batch 1 --quiet --steps 3"
$TRAIN --steps 2 --ckpt-dir "$W/base" >"$W/base.out" 2>&1 || { cat "$W/base.out"; fail "base run"; }
S=step_00000002
[ -f "$W/base/$S/manifest.json" ] || fail "no checkpoint of step 2"
edit() {  # edit CASE PYTHON: the manifest of case's copy changed by PYTHON (m: the manifest)
	/usr/bin/python3 -c "import json,sys; p=sys.argv[1]; m=json.load(open(p)); $2; json.dump(m, open(p,'w'))" \
		"$W/$1/$S/manifest.json" || fail "$1: cannot edit the manifest"
}
# case NAME WANT PATTERN: resume (LLM_TRAIN_RESUME, as the wrapper does) from
# NAME's copy of the checkpoint, prepared by the caller; exit WANT, one
# line matching PATTERN
want() {
	_n=$1 _w=$2 _p=$3
	LLM_TRAIN_RESUME=$W/$_n/$S $TRAIN --ckpt-dir "$W/$_n.out.d" >"$W/$_n.out" 2>"$W/$_n.err"; _rc=$?
	[ $_rc = "$_w" ] || { cat "$W/$_n.err"; fail "$_n: exit $_rc, want $_w"; }
	[ "$(grep -c . "$W/$_n.err")" = 1 ] && grep -q "$_p" "$W/$_n.err" ||
		{ cat "$W/$_n.err"; fail "$_n: not one line matching: $_p"; }
	ls "$W/$_n.out.d" 2>/dev/null | grep -q '^step_' && fail "$_n: trained and saved (from random weights)"
	echo "$_n: exit $_rc: $(cat "$W/$_n.err")"
}
copy() { mkdir "$W/$1" && cp -r "$W/base/$S" "$W/$1/" || fail "cannot copy the checkpoint"; }

copy nomanifest; rm "$W/nomanifest/$S/manifest.json"
want nomanifest 89 "$W/nomanifest/$S/manifest.json: missing manifest"
copy noshard; rm "$W/noshard/$S/rank_00000.bin"
want noshard 89 "$W/noshard/$S/rank_00000.bin: missing shard"
copy noblob; edit noblob 'm["blobs"] = []'
want noblob 89 "$W/noblob/$S: incomplete checkpoint: no blob train of rank 0"
copy nopiece; edit nopiece 'm["pieces"] = m["pieces"][1:]'
want nopiece 89 "$W/nopiece/$S.*"
copy nokind; edit nokind 'm["kinds"] = m["kinds"][:2]; m["pieces"] = [p for p in m["pieces"] if p[1] != 2]'
want nokind 89 "$W/nokind/$S: checkpoint has no adam_v state"
# --resume gives the same class as LLM_TRAIN_RESUME
$TRAIN --resume "$W/noblob/$S/" --ckpt-dir "$W/r.d" >/dev/null 2>"$W/r.err"; rc=$?
[ $rc = 89 ] || { cat "$W/r.err"; fail "--resume STEPDIR/ without its state blob: exit $rc, want 89"; }

# ---- nothing to resume from: 66 -------------------------------------------
mkdir "$W/gone"
want gone 66 "$W/gone/$S: no such checkpoint directory"
$TRAIN --resume "$W/nonexistent" --ckpt-dir "$W/n.d" >/dev/null 2>"$W/n.err"; rc=$?
[ $rc = 66 ] && grep -q "$W/nonexistent: no such checkpoint directory" "$W/n.err" ||
	{ cat "$W/n.err"; fail "--resume MISSING: exit $rc, want 66"; }
mkdir "$W/empty"
$TRAIN --resume "$W/empty" --ckpt-dir "$W/e.d" >/dev/null 2>"$W/e.err"; rc=$?
[ $rc = 66 ] && grep -q "$W/empty: no complete checkpoint" "$W/e.err" ||
	{ cat "$W/e.err"; fail "--resume EMPTY_CKPT_DIR: exit $rc, want 66"; }
echo "PASS: every missing piece of a checkpoint is 89, nothing to resume from 66"
