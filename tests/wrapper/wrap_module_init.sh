#!/bin/sh
# tests/wrapper/wrap_module_init.sh: a PyTorch script that hangs after
# llm_train.Job() and before its first step (a dead NFS under its data
# loading, a rendezvous with a peer that never comes) is found hung after
# the start-up timeout. Before: the module's thread rewrote the heartbeat
# in phase init too (its docs: only load and save), so the rank never went
# stale and the job sat until its time limit (or torch's own 30 min).
# Long start-up work belongs in job.phase("load"), refreshed as documented.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-wrap-minit.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_FAULT SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW LLM_TRAIN_CKPT_INTERVAL
export PYTHONPATH=$top_srcdir/wrapper/python
timeout -k 5 40 "$WRAP" --no-srun --ckpt-dir "$T/ck" --ckpt-tool none --tick 0.1 --hang-timeout-min 2 \
	--hang-timeout-max 3 --hang-startup 3 --max-restarts 0 -- /usr/bin/python3 -c '
import time, llm_train
job = llm_train.Job(refresh_s=0.2)
time.sleep(3600)   # hung before the first step' >"$T/out" 2>&1
rc=$?
case $rc in 124|137) cat "$T/out"; fail "a rank hung in init was never found (timeout)";; esac
grep -q '"event":"hang"' "$T/ck/ledger.jsonl" || { cat "$T/out"; fail "no hang event (exit $rc)"; }
# phase load is still refreshed: 4 s of loading with a 3 s start-up timeout
timeout -k 5 40 "$WRAP" --no-srun --ckpt-dir "$T/ld" --ckpt-tool none --tick 0.1 --hang-timeout-min 2 \
	--hang-timeout-max 3 --hang-startup 3 --max-restarts 0 -- /usr/bin/python3 -c '
import time, llm_train
job = llm_train.Job(refresh_s=0.2)
job.phase("load"); time.sleep(4); job.start(); job.step(1); job.done()' >"$T/ld.out" 2>&1 ||
	{ cat "$T/ld.out"; fail "a 4 s load was taken for a hang"; }
echo "PASS: a hang in init found; a long load is not one"
