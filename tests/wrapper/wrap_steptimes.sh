#!/bin/sh
# tests/wrapper/wrap_steptimes.sh: goodput of a job of short steps is
# accounted from the ranks' own step times. llm-train (one rank, run
# directly: --no-srun) trains 12 steps of a tiny model, all of them between
# two of the wrapper's ticks (--tick 30: the step is over before the first
# one). The attempt's step time must be the ranks' mean (rank_times event,
# checkpoint stall left out), the useful time 12 x that step time, and the
# checkpoint stall the ranks' own. Fails on the old code, which learned the
# step time from heartbeats at its tick: step_s 0.0, "goodput 0.0%".
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
LT=$top_builddir/runtime/llm-train
[ -x "$LT" ] || { echo "SKIP: $LT not built"; exit 77; }
command -v bible >/dev/null 2>&1 || { echo "SKIP: bible-kjv not installed (corpus)"; exit 77; }
T=$(mktemp -d /tmp/llmt-wrap-steps.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_FAULT SLURM_JOB_ID LLM_TRAIN_CKPT_INTERVAL
export OMP_NUM_THREADS=1 OMPI_MCA_btl=self,tcp LLM_TRAIN_TP=1 LLM_TRAIN_PP=1 LLM_TRAIN_DP=1 WORLD_SIZE=1 RANK=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
LLM_TRAIN=$LT "$top_srcdir/scripts/make-corpus" "$T/corpus" --max-bytes 200000 --shard-tokens 50000 >/dev/null ||
	fail "make-corpus failed"
PATH=$top_builddir/runtime:$PATH "$WRAP" --no-srun --ckpt-dir "$T/ck" --tick 30 -- \
	"$LT" --model "$top_srcdir/configs/tiny.yaml" --data "$T/corpus" --seq 64 --steps 12 --quiet \
	>"$T/out" 2>&1 || { cat "$T/out"; fail "the run failed"; }
/usr/bin/python3 - "$T/ck/ledger.jsonl" "$T/out" <<'PY' || { cat "$T/out"; exit 1; }
import json, re, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
def one(name):
    e = [x for x in ev if x["event"] == name]
    if len(e) != 1: sys.exit("FAIL: %d %s events" % (len(e), name))
    return e[0]
rt, at, end = one("rank_times"), one("attempt"), one("end")
tot = rt["total_s"]
if rt["ranks"] != 1 or not tot["step"] > 0: sys.exit("FAIL: rank_times %r" % rt)
want = (tot["step"] - tot["ckpt"]) / 12
if abs(at["step_s"] - want) > 1e-9 * want or not at["step_s"] > 0:
    sys.exit("FAIL: attempt step_s %r, the ranks' %r" % (at["step_s"], want))
if abs(at["ckpt_s"] - tot["ckpt"]) > 1e-9: sys.exit("FAIL: ckpt_s %r, the ranks' %r" % (at["ckpt_s"], tot["ckpt"]))
if at["last_step"] != 12: sys.exit("FAIL: last_step %r" % at["last_step"])
if not at["t_launch"] <= at["t_first_step"] <= at["t_end"]: sys.exit("FAIL: first step outside the attempt %r" % at)
if abs(end["useful_s"] - 12 * want) > 1e-6 or not end["goodput"] > 0:
    sys.exit("FAIL: useful %r s, goodput %r, want 12 x %r" % (end["useful_s"], end["goodput"], want))
out = open(sys.argv[2]).read()
m = re.search(r"goodput ([0-9.]+)% \(useful ([0-9.]+) s of [0-9.]+ s allocated, 12 steps\)", out)
if not m or float(m.group(1)) == 0: sys.exit("FAIL: summary line: %r" % (m and m.group(0)))
print("ok: step %.4f s x 12 = useful %.3f s, goodput %.1f%%" % (want, end["useful_s"], 100 * end["goodput"]))
PY
