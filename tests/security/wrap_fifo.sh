#!/bin/sh
# tests/security/wrap_fifo.sh: FIFOs where llm-train-wrap reads what the
# job wrote. The job (any PyTorch script; the user controls every byte
# there) makes heartbeat/node_x, metrics.jsonl and latest named pipes,
# then its one rank hangs. Before: the wrapper opened the first of them
# with fopen and waited in open(2) for a writer forever (wchan
# wait_for_partner): the hang was never found, the job sat until its time
# limit, preemption signals went unanswered. Now such a file is refused
# at once (rdfile.c: O_NONBLOCK, regular files only) and the hang is found
# as usual: the wrapper ends within seconds. (The blocked wrapper did not
# even end on SIGTERM: open(2) restarts after the handler; only SIGKILL.)
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-wrap-fifo.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_FAULT SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW
cat >"$T/job.py" <<'PY'
import os, time
ck = os.environ["LLM_TRAIN_CKPT_DIR"]; hb = ck + "/heartbeat"
os.makedirs(hb, exist_ok=True)
for p in (hb + "/node_x", ck + "/metrics.jsonl", ck + "/latest"):
    if not os.path.exists(p):
        os.mkfifo(p)
for step in (1, 2, 3):
    time.sleep(0.2)
    with open(hb + "/rank_00000.tmp", "w") as f:
        f.write("%d %d train 0.2 here\n" % (step, time.time_ns()))
    os.replace(hb + "/rank_00000.tmp", hb + "/rank_00000")
time.sleep(3600)   # hung
PY
mkdir -p "$T/ck" && mkfifo "$T/ck/metrics.jsonl"   # left by an earlier run: read before the launch
LLM_TRAIN_CKPT_INTERVAL=auto timeout -k 5 60 "$WRAP" --no-srun --ckpt-dir "$T/ck" --ckpt-tool none --tick 0.1 \
	--hang-timeout-min 2 --hang-timeout-max 3 --max-restarts 0 --metrics-every 0.5 -- /usr/bin/python3 "$T/job.py" \
	>"$T/out" 2>&1
rc=$?
case $rc in 124|137) cat "$T/out"; fail "the wrapper blocked on a FIFO (timeout, exit $rc)";; esac
grep -q '"event":"hang"' "$T/ck/ledger.jsonl" || { cat "$T/out"; fail "no hang found (exit $rc)"; }
echo "PASS: FIFOs in the heartbeat and run directories refused; the hang found (exit $rc)"
# The PyTorch jobs' lister (llm-train-ckpt-torch, run by the wrapper before
# every attempt) with a FIFO as a step's marker: it opened it and waited
# for a writer forever, and the wrapper with it. Now: not a complete
# checkpoint, said so, the others listed.
CK=$top_builddir/wrapper/llm-train-ckpt-torch
mkdir -p "$T/t/step_00000001" "$T/t/step_00000002" && mkfifo "$T/t/step_00000002/llm_train.complete"
echo '{"step": 1, "files": {}}' >"$T/t/step_00000001/llm_train.complete"
LLM_TRAIN_PYTHONPATH=$top_srcdir/wrapper/python timeout -k 5 20 "$CK" ckpt-list "$T/t" >"$T/list" 2>"$T/list.err"
rc=$?
[ $rc = 0 ] || { cat "$T/list.err"; fail "llm-train-ckpt-torch with a FIFO marker: exit $rc (124: blocked)"; }
[ "$(cat "$T/list")" = "1 $T/t/step_00000001" ] || fail "ckpt-list: $(cat "$T/list")"
grep -q "step_00000002: " "$T/list.err" || fail "the FIFO marker's step is not reported"
echo "PASS: a FIFO as a checkpoint marker: refused by llm-train-ckpt-torch"
