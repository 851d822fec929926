#!/bin/sh
# tests/security/ledger_bytes.sh: bytes that are not UTF-8 in what the
# wrapper records (the command's path; the checkpoint dir, which the plugin
# takes as any path of printable bytes; the checkpoint tool's lines).
# Before: jansson refused such a string, json_pack returned NULL and the
# event went to the ledger without any field: a "start" without its job
# id read back as another job's run, so the restart budget began again at
# every requeue (and the run count, pid and command were lost); a
# "launch" after a crash lost its resume point. Now the bytes become '?'
# and every field is kept.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-ledger-bytes.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_FAULT LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW
cmd=$(printf '%s/tr\377ainer' "$T")
cp "$TRAINER" "$cmd" && chmod +x "$cmd" || exit 1
ck=$(printf '%s/ck\376\377' "$T")
LLM_TRAIN_CKPT_INTERVAL=5 LLM_TRAIN_FAULT=crash@7 SLURM_JOB_ID=4711 "$WRAP" --no-srun --ckpt-dir "$ck" \
	$WRAP_FAST -- "$cmd" --steps 10 >"$T/out" 2>&1 || { cat "$T/out"; fail "the run failed"; }
L=$ck/ledger.jsonl
grep '"event":"start"' "$L" | grep -q '"job":"4711"' || fail "start event without its job: $(grep start "$L")"
grep '"event":"start"' "$L" | grep -q '"command":"[^"]*/tr?ainer"' || fail "start event without the command: $(grep start "$L")"
grep '"event":"launch"' "$L" | grep '"resume_step":5' | grep -q '"resume":"[^"]*/ck??/' ||
	fail "the resumed launch lost its checkpoint: $(grep launch "$L")"
echo "PASS: start and launch events keep their fields"
