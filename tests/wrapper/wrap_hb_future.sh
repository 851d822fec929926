#!/bin/sh
# tests/wrapper/wrap_hb_future.sh: a heartbeat whose time lies in the
# future (a node's clock an hour ahead, or a script's wrong unit: the
# time is the job's bytes) and then never changes: the rank hangs.
# Before: the wrapper judged silence by the content time, now - time
# stayed negative and the hang was never found (the job sat until its
# time limit). Now a heartbeat is never taken as newer than when the
# wrapper first read it: the hang is found after the timeout.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-wrap-future.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_FAULT SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW LLM_TRAIN_CKPT_INTERVAL
cat >"$T/job.py" <<'PY'
import os, time
hb = os.environ["LLM_TRAIN_CKPT_DIR"] + "/heartbeat"
os.makedirs(hb, exist_ok=True)
for step in (1, 2, 3):
    time.sleep(0.2)
    with open(hb + "/rank_00000.tmp", "w") as f:
        f.write("%d %d train 0.2 here\n" % (step, time.time_ns() + 3600 * 10**9))
    os.replace(hb + "/rank_00000.tmp", hb + "/rank_00000")
time.sleep(3600)   # hung
PY
timeout -k 5 40 "$WRAP" --no-srun --ckpt-dir "$T/ck" --ckpt-tool none --tick 0.1 --hang-timeout-min 2 \
	--hang-timeout-max 3 --max-restarts 0 -- /usr/bin/python3 "$T/job.py" >"$T/out" 2>&1
rc=$?
case $rc in 124|137) cat "$T/out"; fail "the hang of a rank with a future heartbeat was not found (timeout)";; esac
grep -q '"event":"hang"' "$T/ck/ledger.jsonl" || { cat "$T/out"; fail "no hang event (exit $rc)"; }
echo "PASS: a heartbeat an hour ahead: the hang found (exit $rc)"
