# tests/wrapper/lib-wrap.sh: helpers for the wrapper's shell tests (sourced).
# WRAP is the built llm-train-wrap; TRAINER and CKTOOL the test trainer and
# its checkpoint tool (test doubles of llm-train, named as such).
WRAP=$top_builddir/wrapper/llm-train-wrap
TRAINER=$top_srcdir/tests/wrapper/test-trainer.py
CKTOOL=$top_srcdir/tests/wrapper/test-ckpt-tool.py
# Fast settings for tiny steps: watch every 0.1 s, hang after 2 s of silence.
WRAP_FAST="--ckpt-tool $CKTOOL --tick 0.1 --hang-timeout-min 2 --hang-timeout-max 20 --backoff 0.2 --preempt-grace 10"

fail() { echo "FAIL: $*"; exit 1; }

[ -x "$WRAP" ] || { echo "FAIL: $WRAP not built"; exit 1; }
[ -x /usr/bin/python3 ] || { echo "SKIP: /usr/bin/python3 missing"; exit 77; }

# wait_file PATH SECONDS: until PATH exists.
wait_file() {
	_i=0
	while [ ! -e "$1" ]; do
		_i=$((_i + 1)); [ $_i -le $(($2 * 20)) ] || return 1
		sleep 0.05
	done
}

# rank_pid CKPT RANK ATTEMPT: pid of that rank of that attempt (test trainer).
rank_pid() {
	wait_file "$1/pids/rank_$(printf %05d "$2").attempt_$3" 30 || return 1
	cut -d' ' -f1 "$1/pids/rank_$(printf %05d "$2").attempt_$3"
}

# rank_host CKPT RANK ATTEMPT
rank_host() {
	wait_file "$1/pids/rank_$(printf %05d "$2").attempt_$3" 30 || return 1
	cut -d' ' -f2 "$1/pids/rank_$(printf %05d "$2").attempt_$3"
}

# real_pid JOBID PROCID: the llm-train ($LT) process of that task
real_pid() {
	for _p in $(pgrep -f "$LT --model"); do
		_e=$(tr '\0' '\n' <"/proc/$_p/environ" 2>/dev/null) || continue
		echo "$_e" | grep -qx "SLURM_JOB_ID=$1" && echo "$_e" | grep -qx "SLURM_PROCID=$2" && { echo "$_p"; return 0; }
	done
	return 1
}

# count EVENT LEDGER [PATTERN]: ledger lines of that event (matching PATTERN).
count() {
	grep "\"event\":\"$1\"" "$2" | grep -c -- "${3:-.}"
}

# ledger NAME WANT: job NAME's ledger ($W/NAME/ledger.jsonl) counts exactly
# WANT: "launches=N failures=CLASS,... restarts=N requeues=N" (failure
# classes sorted), so no extra crash is restarted into a pass. The one
# stated exception (ompi_null_crash, tests/cluster/lib.sh): when the job's
# output ($W/NAME.out) shows Open MPI's wire-up crash, the wrapper restarted
# it as it should, and that launch (one signal-11 failure and its restart)
# is discounted, said so.
ledger() {
	_known=0
	command -v ompi_null_crash >/dev/null && ompi_null_crash "$W/$1.out" && _known=1
	_got=$(/usr/bin/python3 - "$W/$1/ledger.jsonl" $_known <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
n = lambda e: sum(1 for x in ev if x.get('event') == e)
acts = [x.get('act') for x in ev if x.get('event') == 'action' and 'source' not in x]  # not a preflight's
fails = [x for x in ev if x.get('event') == 'failure']
launches, restarts = n('launch'), acts.count('restart')
seg = [x for x in fails if x.get('signal') == 11 and x.get('class') == 'transient']
if sys.argv[2] == '1' and seg and restarts:
    fails.remove(seg[0]); launches -= 1; restarts -= 1
    print('discounted: one launch that died in Open MPI\'s wire-up (signal 11, one frame at (nil))', file=sys.stderr)
print('launches=%d failures=%s restarts=%d requeues=%d' % (
    launches, ','.join(sorted(x.get('class', '?') for x in fails)), restarts, acts.count('requeue')))
PY
)
	echo "$1: $_got"
	[ "$_got" = "$2" ] || fail "$1: ledger counts '$_got', want '$2'"
}

# SLOWAFTER8: for `export $SLOWAFTER8` before sbatch. The tests with the
# real trainer bring their faults (kill -9, SIGSTOP, SIGUSR1, a node crash)
# after the step-8 checkpoint; the 16 steps after it take ~1.5 s, too short
# a window for a signal through scancel and slurmctld on a busy machine.
# With it, the job's first attempt runs 30x slower from step 9 on (the slow
# fault: a sleep after each step's compute, every rank alike, the numbers
# as without it), so the fault always lands mid-run. The SIGSTOP tests
# use it too: a rank stopped there showed the wrapper only its init beat
# (the node file lags) or a save, and waited for the startup or pause cap
# (60 or 600 s), until wr_hang_find learned both (wrapper/hang.c).
SLOWAFTER8="LLM_TRAIN_FAULT=slow@9 LLM_TRAIN_FAULT_SLOW=30"

# real_trainer_setup [CLUSTER_NEED-ARGS]: for the tests with the real
# trainer (llm-train, tiny model, dp=2 over two nodes, MPI over PMIx): LT,
# RT_SRC/RT_BUILD (where llm-train's sources and build are, default the
# tree), the cluster (cluster_need), W and the KJV corpus in $W/corpus.
# FAIL without llm-train (a build output), SKIP without bible-kjv.
real_trainer_setup() {
	RT_SRC=${RT_SRC:-$top_srcdir}
	RT_BUILD=${RT_BUILD:-$top_builddir}
	LT=$RT_BUILD/runtime/llm-train
	[ -x "$LT" ] || { echo "FAIL: $LT not built (a build output, never a skip)"; exit 1; }
	command -v bible >/dev/null 2>&1 || { echo "SKIP: bible-kjv not installed (corpus)"; exit 77; }
	. "$top_srcdir/tests/cluster/lib.sh"
	cluster_need "$@"
	W=$CLUSTER_WORK
	LLM_TRAIN=$LT "$RT_SRC/scripts/make-corpus" "$W/corpus" --max-bytes 300000 \
		--shard-tokens 100000 >/dev/null || fail "make-corpus failed"
	export SLURM_MPI_TYPE=pmix OMP_NUM_THREADS=1 LLM_TRAIN_TP=1 LLM_TRAIN_PP=1 LLM_TRAIN_DP=2
	unset LLM_TRAIN_FAULT LLM_TRAIN_CKPT_INTERVAL
}

# torch_cluster_need [N]: the cluster tests' preamble for a PyTorch script
# (after tests/cluster/lib.sh): a skip without Debian's torch, the
# cluster started, at least N nodes (default 1)
torch_cluster_need() {
	/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || { echo "SKIP: python3-torch missing"; exit 77; }
	cluster_need
	[ "$(cluster_nodes | wc -l)" -ge "${1:-1}" ] || fail "the cluster has fewer than ${1:-1} nodes"
}
