#!/bin/sh
# tests/bench/selftest.sh: `llm-train selftest` (default size) on the
# emulated cluster, 4 nodes x 1 rank: its time per run (the report's
# elapsed_s and srun's wall time); false positives over N clean runs
# (LLMT_BENCH_CLEAN, default 20); the smallest injected compute slowdown
# found (LLM_TRAIN_FAULT=slow on node2, LLM_TRAIN_FAULT_SLOW swept,
# LLMT_BENCH_TRIES runs each, default 3) and the smallest send delay found
# (slowlink on node4, LLM_TRAIN_FAULT_DELAY_MS swept). Prints a line per
# run and a summary; nothing is asserted.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/cluster/lib.sh"
cluster_need
trap 'cluster_cleanup $?' EXIT
LT=$top_builddir/runtime/llm-train
[ -x "$LT" ] || { echo "FAIL: $LT not built"; exit 1; }
export OMP_NUM_THREADS=1
W=$CLUSTER_WORK
clean=${LLMT_BENCH_CLEAN:-20}
tries=${LLMT_BENCH_TRIES:-3}

# run ENV...: one self-test; prints "rc wall_s elapsed_s bad_nodes"
run() {
	_t0=$(date +%s.%N)
	env "$@" timeout 180 srun -J llmt-st-bench --mpi=pmix -N 4 -n 4 "$LT" selftest --json "$W/b.json" \
		>"$W/b.out" 2>&1
	_rc=$?
	_t1=$(date +%s.%N)
	/usr/bin/python3 - "$W/b.json" "$_rc" "$_t0" "$_t1" <<'PY'
import json, sys
try:
    o = json.load(open(sys.argv[1]))
except Exception:
    o = {"elapsed_s": -1, "bad_nodes": ["(no report)"]}
print(sys.argv[2], "%.1f" % (float(sys.argv[4]) - float(sys.argv[3])), "%.1f" % o["elapsed_s"],
      ",".join(o["bad_nodes"]) or "-")
PY
	rm -f "$W/b.json"
}

fp=0 runs=0
for i in $(seq 1 "$clean"); do
	r=$(run)
	echo "clean $i: $r"
	runs=$((runs + 1))
	set -- $r
	[ "$1" = 0 ] || fp=$((fp + 1))
	echo "$2 $3" >>"$W/times"
done
med() { cut -d' ' -f"$1" "$W/times" | sort -n | awk '{v[NR]=$1} END {printf "median %s s (min %s, max %s)", v[int((NR+1)/2)], v[1], v[NR]}'; }
echo "time per run (4 nodes x 1 rank, small): srun wall $(med 1); the report's elapsed_s $(med 2)"
echo "false positives: $fp of $runs clean runs"

# sweep FAULT NODE VAR UNIT VALUES...: the smallest value found every time
sweep() {
	_fault=$1 _node=$2 _var=$3 _unit=$4; shift 4
	smallest=
	for v in "$@"; do
		found=0
		for k in $(seq 1 "$tries"); do
			r=$(run LLM_TRAIN_FAULT=$_fault@1/$_node $_var=$v)
			echo "$_fault $v$_unit try $k: $r"
			set -- $r
			[ "$4" = "$_node" ] && found=$((found + 1))
		done
		echo "$_fault $v$_unit: found $found of $tries"
		[ $found = "$tries" ] && smallest=$v
	done
}
sweep slow node2 LLM_TRAIN_FAULT_SLOW x 3 2 1.75 1.6 1.5 1.4 1.25
echo "smallest slowdown found every time: x${smallest:-none} (--slow-factor 1.5)"
sweep slowlink node4 LLM_TRAIN_FAULT_DELAY_MS ms 20 10 5 2 1 0.5
echo "smallest send delay found every time: ${smallest:-none} ms (--link-factor 30)"
