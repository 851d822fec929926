#!/bin/sh
# tests/security/wrap_fifo_ranks.sh: a FIFO where llm-train-wrap appends
# (RUN_DIR/ranks.jsonl, the per-rank step samples; the job, a PyTorch
# script, writes the run dir too). Before: the watch loop's fopen(..., "a")
# waited in open(2) for a reader forever: the rank's hang was never found,
# the job sat until its time limit. Now the append is refused at once
# (O_NONBLOCK, regular files only) and the hang is found as usual.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-wrap-fifor.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_FAULT SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW LLM_TRAIN_CKPT_INTERVAL
cat >"$T/job.py" <<'PY'
import os, time, llm_train
job = llm_train.Job()
p = job.run_dir + "/ranks.jsonl"
if not os.path.exists(p):
    os.mkfifo(p)
job.start()
for step in range(1, 6):
    time.sleep(0.3)
    job.step(step, loss=1.0)
time.sleep(3600)   # hung
PY
PYTHONPATH=$top_srcdir/wrapper/python timeout -k 5 60 "$WRAP" --no-srun --ckpt-dir "$T/ck" --ckpt-tool none \
	--tick 0.1 --hang-timeout-min 2 --hang-timeout-max 3 --max-restarts 0 --metrics-every 0.2 -- \
	/usr/bin/python3 "$T/job.py" >"$T/out" 2>&1
rc=$?
case $rc in 124|137) cat "$T/out"; fail "the wrapper blocked on a FIFO ranks.jsonl (timeout, exit $rc)";; esac
grep -q '"event":"hang"' "$T/ck/ledger.jsonl" || { cat "$T/out"; fail "no hang found (exit $rc)"; }
echo "PASS: a FIFO as ranks.jsonl refused; the hang found (exit $rc)"
