#!/bin/sh
# tests/wrapper/wrap_preflight.sh: llm-train-wrap's preflight self-test on
# the emulated cluster with the test trainer. SELFTEST (default the test
# double tests/wrapper/test-selftest.sh) runs one task per node before the
# first attempt: node3 gives wrong answers. With a spare (-N4, --spares 1,
# preflight on by default) the job trains on the three other nodes; without
# a spare (-N3, --preflight --shrink --no-requeue) on two with a smaller
# layout; with --no-preflight it runs on node3. The ledger holds node3's
# figures. Fails on the old code (no preflight: node3 kept).
set -u
. "$top_srcdir/tests/cluster/lib.sh"
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
cluster_need
W=$CLUSTER_WORK
SELFTEST=${SELFTEST:-$top_srcdir/tests/wrapper/test-selftest.sh}
export TEST_SELFTEST_WRONG=node3 LLM_TRAIN_CKPT_INTERVAL=5
unset LLM_TRAIN_FAULT

run() {  # NAME SBATCH-OPTS -- WRAPPER-OPTS: submit and wait for the end
	_n=$1; shift
	_sb=
	while [ $# -gt 0 ] && [ "$1" != -- ]; do _sb="$_sb $1"; shift; done
	[ $# -gt 0 ] && shift
	cat >"$W/$_n.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$W/$_n" $WRAP_FAST --selftest-cmd "$SELFTEST" $* -- "$TRAINER" --steps 20 --step-time 0.02
JOB
	chmod +x "$W/$_n.sh"
	_j=$(cd "$W" && sbatch --parsable -o "$_n.out" $_sb "$_n.sh") || fail "$_n: sbatch"
	_st=$(cluster_sbatch_wait "$_j" 120) || { cat "$W/$_n.out"; fail "$_n: job $_j ended $_st"; }
}
hosts() {  # NAME: the nodes its ranks ran on, sorted
	cut -d' ' -f2 "$W/$1"/pids/rank_* | sort -u | tr '\n' ' '
}

run spare -N4 --ntasks-per-node=1 -- --spares 1
L=$W/spare/ledger.jsonl
grep '"event":"preflight"' "$L" | grep -q '"bad_nodes":\["node3"\]' || { cat "$W/spare.out"; fail "spare: node3 not found bad"; }
grep '"event":"preflight"' "$L" | grep -q '"node":"node3","verdict":"wrong","wrong":true' ||
	{ grep preflight "$L"; fail "spare: no evidence of node3 in the ledger"; }
grep '"event":"launch"' "$L" | grep -q '"exclude":\["node3"\]' || { grep launch "$L"; fail "spare: node3 not excluded"; }
[ "$(hosts spare)" = "node1 node2 node4 " ] || fail "spare: ranks ran on $(hosts spare)"
[ -s "$W/spare/selftest-0.json" ] || fail "spare: no selftest-0.json"
ledger spare "launches=1 failures= restarts=0 requeues=0"

run shrink -N4 --ntasks-per-node=1 -- --preflight --shrink --no-requeue
grep '"event":"action"' "$W/shrink/ledger.jsonl" | grep '"source":"preflight"' | grep -q '"ntasks":2' ||
	{ cat "$W/shrink.out"; fail "shrink: no smaller layout after the preflight"; }
[ "$(hosts shrink)" = "node1 node2 " ] || fail "shrink: ranks ran on $(hosts shrink)"

export LLM_TRAIN_PREFLIGHT=1
run policy -N3 --ntasks-per-node=1 --
# no spare, no shrink: requeued without node3, and tested again on the new nodes
L=$W/policy/ledger.jsonl
[ "$(count preflight "$L")" = 2 ] && [ "$(count preflight "$L" '"bad_nodes":\["node3"\]')" = 1 ] ||
	{ grep preflight "$L"; fail "policy: LLM_TRAIN_PREFLIGHT=1 did not test both runs"; }
[ "$(count requeue "$L" '"exclude":\["node3"\]')" = 1 ] || { grep requeue "$L"; fail "policy: not requeued without node3"; }
[ "$(hosts policy)" = "node1 node2 node4 " ] || fail "policy: ranks ran on $(hosts policy)"
run off -N3 --ntasks-per-node=1 -- --no-preflight
[ "$(count preflight "$W/off/ledger.jsonl")" = 0 ] || fail "off: the self-test ran with --no-preflight"
[ "$(hosts off)" = "node1 node2 node3 " ] || fail "off: ranks ran on $(hosts off)"
unset LLM_TRAIN_PREFLIGHT
echo "node3 wrong: excluded before the first attempt (spare; dp 4 -> 2; requeue); --no-preflight runs none"
echo PASS
