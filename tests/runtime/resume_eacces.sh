#!/bin/sh
# tests/runtime/resume_eacces.sh: a manifest the file system will not give
# (EACCES here; EIO, ESTALE, EMFILE alike) is not a broken checkpoint: the
# resume exits 74 (I/O, retried), not 89, which makes the wrapper mark the
# checkpoint bad for every later job of the run dir; a CKPT_DIR it cannot
# list is 74 too, never a fresh start. As root it runs the trainer as
# nobody (setpriv). Fails on the old code: exit 89; the unlistable
# CKPT_DIR trained from random weights (here only its save failed, on the
# directory's fsync; an EIO gone by then saves the random-weight steps).
set -u
AS=
if [ "$(id -u)" = 0 ]; then
	command -v setpriv >/dev/null || { echo "SKIP: root without setpriv"; exit 77; }
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi
ckpt_name=eacces
. "$top_srcdir/tests/runtime/ckpt_lib.sh"
chmod 755 "$W"
mkdir "$W/data"
/usr/bin/python3 "$top_srcdir/tests/runtime/tiny_shard.py" "$W/data/s.bin" || fail "no token shard"
D=$W/ck
TRAIN="$LT --model $top_srcdir/configs/tiny.yaml --data $W/data --seq 16 --micro-batch 1 --ckpt-interval 2 --quiet"
$TRAIN --steps 2 --ckpt-dir "$D" >"$W/first.out" 2>&1 || { cat "$W/first.out"; fail "first run"; }
[ -d "$D/step_00000002" ] || fail "no checkpoint of step 2"
mkdir "$W/unl" && cp -r "$D/step_00000002" "$W/unl/" || fail "cannot copy the checkpoint"
[ -n "$AS" ] && chown -R 65534:65534 "$W"
chmod 000 "$D/step_00000002/manifest.json"
LLM_TRAIN_RESUME=$D/step_00000002 $AS $TRAIN --steps 4 --ckpt-dir "$W/ck2" >"$W/res.out" 2>&1
rc=$?
[ $rc = 74 ] || { cat "$W/res.out"; fail "unreadable manifest: exit $rc, want 74 (I/O, retried; 89 marks it bad)"; }
echo "unreadable manifest: exit 74"

# a CKPT_DIR it cannot list (no read permission; EIO alike), LLM_TRAIN_RESUME
# unset: 74, never a fresh start from random weights beside the checkpoint
chmod 300 "$W/unl"
$AS $TRAIN --steps 3 --ckpt-dir "$W/unl" >"$W/unl.out" 2>&1
rc=$?
[ $rc = 74 ] && grep -q "$W/unl: cannot list the checkpoint directory: Permission denied: not starting from random" "$W/unl.out" ||
	{ cat "$W/unl.out"; fail "unlistable CKPT_DIR: exit $rc, want 74 naming it"; }
chmod 700 "$W/unl"
ls "$W/unl" | grep -qv '^step_00000002$' && { ls -a "$W/unl"; fail "unlistable CKPT_DIR: something was written there"; }
echo "unlistable CKPT_DIR: exit 74"
