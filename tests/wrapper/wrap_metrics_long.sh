#!/bin/sh
# tests/wrapper/wrap_metrics_long.sh: a metrics.jsonl line longer than the
# wrapper's 8 KiB line buffer (a script's own record with a large extra
# field: the file is the job's bytes). Before: the live reader took the
# buffer-full piece for a line still being written and stopped there for
# the rest of the job: the Prometheus textfile and the dashboard kept the
# step before it forever. Now a complete long line is skipped and the
# lines after it are read.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-wrap-mlong.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_FAULT SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW LLM_TRAIN_CKPT_INTERVAL
cat >"$T/job.py" <<'PY'
import json, os, time
ck = os.environ["LLM_TRAIN_CKPT_DIR"]; hb = ck + "/heartbeat"
os.makedirs(hb, exist_ok=True)
def rec(step, **kw):
    d = {"step": step, "loss": 2.0 / step}; d.update(kw)
    with open(ck + "/metrics.jsonl", "a") as f:
        f.write(json.dumps(d) + "\n")
for step in range(1, 8):
    rec(step, hist=[0.5] * 4000) if step == 3 else rec(step)
    with open(hb + "/rank_00000.tmp", "w") as f:
        f.write("%d %d %s 0.1 here\n" % (step, time.time_ns(), "done" if step == 7 else "train"))
    os.replace(hb + "/rank_00000.tmp", hb + "/rank_00000")
    time.sleep(0.5)
PY
timeout -k 5 60 "$WRAP" --no-srun --ckpt-dir "$T/ck" --ckpt-tool none --tick 0.1 --metrics-every 0.2 \
	-- /usr/bin/python3 "$T/job.py" >"$T/out" 2>&1 || { cat "$T/out"; fail "the run failed"; }
grep -q '^llm_train_step{job=""} 7$' "$T/ck/llm_train.prom" ||
	fail "the textfile stopped before the long line: $(grep '^llm_train_step{' "$T/ck/llm_train.prom")"
echo "PASS: the lines after an 8 KiB+ metrics line are read"
