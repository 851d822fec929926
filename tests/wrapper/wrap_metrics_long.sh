#!/bin/sh
# tests/wrapper/wrap_metrics_long.sh: a metrics.jsonl line longer than the
# wrapper's 8 KiB line buffer (a script's own record with a large extra
# field: the file is the job's bytes). Before: the live reader took the
# buffer-full piece for a line still being written and stopped there for
# the rest of the job: the Prometheus textfile and the dashboard kept the
# step before it forever. Now a complete long line is skipped and the
# lines after it are read. Then NUL bytes in metrics.jsonl (a crash's
# zero-filled tail): measured by strlen, the piece before the first NUL
# stopped the reader the same way; now the record after them is read.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-wrap-mlong.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_FAULT SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW LLM_TRAIN_CKPT_INTERVAL
# job.py MODE: 7 steps of metrics and heartbeats; step 3's record is one
# line over 8 KiB (MODE long) or comes after 64 NUL bytes (MODE nul)
cat >"$T/job.py" <<'PY'
import json, os, sys, time
ck = os.environ["LLM_TRAIN_CKPT_DIR"]; hb = ck + "/heartbeat"
os.makedirs(hb, exist_ok=True)
for step in range(1, 8):
    d = {"step": step, "loss": 2.0 / step}
    if step == 3 and sys.argv[1] == "long":
        d["hist"] = [0.5] * 4000
    with open(ck + "/metrics.jsonl", "a") as f:
        f.write(("\0" * 64 if step == 3 and sys.argv[1] == "nul" else "") + json.dumps(d) + "\n")
    with open(hb + "/rank_00000.tmp", "w") as f:
        f.write("%d %d %s 0.1 here\n" % (step, time.time_ns(), "done" if step == 7 else "train"))
    os.replace(hb + "/rank_00000.tmp", hb + "/rank_00000")
    time.sleep(0.5)
PY
for mode in long nul; do
	timeout -k 5 60 "$WRAP" --no-srun --ckpt-dir "$T/$mode" --ckpt-tool none --tick 0.1 --metrics-every 0.2 \
		-- /usr/bin/python3 "$T/job.py" $mode >"$T/$mode.out" 2>&1 || { cat "$T/$mode.out"; fail "$mode: the run failed"; }
	grep -q '^llm_train_step{job=""} 7$' "$T/$mode/llm_train.prom" ||
		fail "$mode: the textfile stopped at step 3's record: $(grep '^llm_train_step{' "$T/$mode/llm_train.prom")"
	echo "ok: $mode: the lines after step 3's record are read"
done
echo PASS
