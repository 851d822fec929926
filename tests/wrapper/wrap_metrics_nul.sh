#!/bin/sh
# tests/wrapper/wrap_metrics_nul.sh: NUL bytes in metrics.jsonl (a node
# crash leaves a zero-filled tail on many file systems; the restarted
# trainer appends after it). Before: the live reader measured a line with
# strlen, took the piece before the first NUL for a line still being
# written and stopped there for the rest of the job: the Prometheus
# textfile and the dashboard kept the step before it forever. Now the
# record after the NULs is read and so are the lines after it.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-wrap-mnul.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_FAULT SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW LLM_TRAIN_CKPT_INTERVAL
cat >"$T/job.py" <<'PY'
import json, os, time
ck = os.environ["LLM_TRAIN_CKPT_DIR"]; hb = ck + "/heartbeat"
os.makedirs(hb, exist_ok=True)
for step in range(1, 6):
    with open(ck + "/metrics.jsonl", "a") as f:
        f.write(("\0" * 64 if step == 3 else "") + json.dumps({"step": step, "loss": 2.0 / step}) + "\n")
    with open(hb + "/rank_00000.tmp", "w") as f:
        f.write("%d %d %s 0.1 here\n" % (step, time.time_ns(), "done" if step == 5 else "train"))
    os.replace(hb + "/rank_00000.tmp", hb + "/rank_00000")
    time.sleep(0.5)
PY
timeout -k 5 60 "$WRAP" --no-srun --ckpt-dir "$T/ck" --ckpt-tool none --tick 0.1 --metrics-every 0.2 \
	-- /usr/bin/python3 "$T/job.py" >"$T/out" 2>&1 || { cat "$T/out"; fail "the run failed"; }
grep -q '^llm_train_step{job=""} 5$' "$T/ck/llm_train.prom" ||
	fail "the textfile stopped at the NULs: $(grep '^llm_train_step{' "$T/ck/llm_train.prom")"
echo "PASS: the lines after NUL bytes in metrics.jsonl are read"
