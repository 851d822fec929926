#!/bin/sh
# tests/wrapper/wrap_ckpt_order.sh: the resume point is the newest
# checkpoint whatever order the checkpoint tool lists them in. A user who
# keeps a copy of an old checkpoint beside the others (`cp -r step_00000010
# step_keep`, or `step_00000010.bak`) had llm-train-ckpt-torch list it
# first (names sorted backwards: 'step_k' > 'step_0'), and the wrapper took
# the first line: every restart resumed from step 10, the progress since
# lost silently. Now the lister sorts by step and the wrapper sorts what
# any tool prints (newest first).
# 3. the torch lister on a CKPT_DIR it cannot list says so in one line and
# exits 74, as llm-train's lister does (red before: a Python traceback and
# exit 1); one that is a file: 66 (before: listed as empty, exit 0, so a
# fresh start). The wrapper on a lister that fails so: the tool's line
# relayed as it is (red before: "checkpoint skipped: ...", as if a
# checkpoint were refused) and its exit code, 74 (red before: 70).
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-wrap-order.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_FAULT SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW LLM_TRAIN_CKPT_INTERVAL
CK=$top_builddir/wrapper/llm-train-ckpt-torch
export LLM_TRAIN_PYTHONPATH=$top_srcdir/wrapper/python
mk() {  # DIR STEP: a complete checkpoint of the llm_train module
	mkdir -p "$1" && echo "{\"step\": $2, \"files\": {}}" >"$1/llm_train.complete"
}
# 1. the torch lister: a kept copy of step 10 among steps 10..30
for s in 10 20 30; do mk "$T/ck/step_$(printf %08d $s)" $s; done
cp -r "$T/ck/step_00000010" "$T/ck/step_keep"
cp -r "$T/ck/step_00000010" "$T/ck/step_00000010.bak"
"$CK" ckpt-list "$T/ck" >"$T/list" 2>"$T/list.err" || fail "ckpt-list failed: $(cat "$T/list.err")"
[ "$(head -n1 "$T/list")" = "30 $T/ck/step_00000030" ] || fail "ckpt-list: newest is not first: $(cat "$T/list")"
[ "$(cut -d' ' -f1 "$T/list" | tr '\n' ' ')" = "30 20 10 10 10 " ] || fail "ckpt-list: not by step: $(cat "$T/list")"
# 2. the wrapper, with a tool that lists out of order
cat >"$T/tool" <<TOOL
#!/bin/sh
printf '10 $T/ck/step_keep\n30 $T/ck/step_00000030\n20 $T/ck/step_00000020\n'
TOOL
chmod +x "$T/tool"
"$WRAP" --no-srun --ckpt-dir "$T/ck" --ckpt-tool "$T/tool" --tick 0.1 -- \
	/bin/sh -c 'echo "$LLM_TRAIN_RESUME" >"$LLM_TRAIN_CKPT_DIR/resumed"' >"$T/out" 2>&1 || { cat "$T/out"; fail "the run failed"; }
[ "$(cat "$T/ck/resumed")" = "$T/ck/step_00000030" ] || fail "resumed from '$(cat "$T/ck/resumed")', not step 30"
echo "ok: the newest checkpoint is picked whatever the listing order"
lists() {  # WANT_RC DIR [AS...]: the torch lister's exit and its one line naming DIR
	_w=$1 _d=$2; shift 2
	"$@" "$CK" ckpt-list "$_d" >"$T/l.out" 2>"$T/l.err"; _rc=$?
	[ $_rc = "$_w" ] && [ "$(wc -l <"$T/l.err")" = 1 ] && grep -q "$_d" "$T/l.err" && ! grep -q Traceback "$T/l.err" ||
		fail "ckpt-list $_d: exit $_rc, want $_w and one line naming it: $(cat "$T/l.err")"
}
: >"$T/file"
lists 66 "$T/file"
mkdir -m 0300 "$T/unl"
if [ "$(id -u)" != 0 ]; then
	lists 74 "$T/unl"
elif command -v setpriv >/dev/null; then
	chmod 0711 "$T"
	lists 74 "$T/unl" setpriv --reuid=65534 --regid=65534 --clear-groups
else
	echo "note: root without setpriv: the unlistable case not run"
fi
echo "ok: the torch lister: a file is 66, an unlistable directory 74, each in one line"
printf '#!/bin/sh\necho "lister: $2: Permission denied" >&2; exit 74\n' >"$T/tool74"
chmod +x "$T/tool74"
"$WRAP" --no-srun --ckpt-dir "$T/ck" --ckpt-tool "$T/tool74" --tick 0.1 -- /bin/true >"$T/out74" 2>&1; rc=$?
[ $rc = 74 ] && grep -q "^llm-train-wrap: lister: $T/ck: Permission denied" "$T/out74" && ! grep -q "skipped" "$T/out74" ||
	{ cat "$T/out74"; fail "wrapper on a lister exiting 74: exit $rc, want 74 and its line relayed"; }
echo "ok: a lister's 74 is the wrapper's 74, its line relayed (not a skipped checkpoint)"
echo PASS
