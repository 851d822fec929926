#!/bin/sh
# llm-train-plan --json on a topology whose switch order differs from the
# name order: the JSON is a valid array, every rank once, keys present,
# TP groups on one node, DP neighbours of a stage under one leaf; bad
# input exits 64 with one line naming the bad value.
set -u
plan=${top_builddir:-../..}/spank/llm-train-plan
[ -x "$plan" ] || { echo "FAIL: $plan not built"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/topology.conf" <<'T'
SwitchName=leafA Nodes=n[1,3,5,7]
SwitchName=leafB Nodes=n[2,4,6,8]
SwitchName=top Switches=leafA,leafB
T
"$plan" --no-policy --nodes 'n[1-8]' --topology "$tmp/topology.conf" --layout tp=2,pp=2,dp=auto \
	--tasks-per-node 2 --json >"$tmp/map.json" 2>"$tmp/err" || { echo "FAIL: plan exited $?"; cat "$tmp/err"; exit 1; }
/usr/bin/python3 - "$tmp/map.json" <<'P' || exit 1
import json, sys
m = json.load(open(sys.argv[1]))
assert isinstance(m, list) and len(m) == 16, "want 16 entries"
for e in m:
    for k in ("rank", "node", "local_rank", "gpu", "tp", "pp", "dp"):
        assert k in e, "missing %s in %r" % (k, e)
ranks = sorted(e["rank"] for e in m)
assert ranks == list(range(16)), ranks
by = {e["rank"]: e for e in m}
leaf = lambda n: "A" if int(n[1:]) % 2 else "B"
for r, e in by.items():
    assert r == e["tp"] + e["dp"] * 2 + e["pp"] * 2 * 4, e
    if e["tp"] == 1:
        assert by[r - 1]["node"] == e["node"], "TP group split: %r" % e
    if e["dp"] > 0:
        assert leaf(by[r - 2]["node"]) == leaf(e["node"]), "DP neighbours on two leaves: %r" % e
# each node holds local ranks 0..1 exactly once
seen = {}
for e in m:
    seen.setdefault(e["node"], []).append(e["local_rank"])
assert all(sorted(v) == [0, 1] for v in seen.values()), seen
print("map ok: %d ranks" % len(m))
P
# the text form compares with Slurm's default order
"$plan" --no-policy --nodes 'n[1-8]' --topology "$tmp/topology.conf" --layout tp=2,pp=2,dp=auto \
	--tasks-per-node 2 --no-map >"$tmp/text" || { echo "FAIL: text form"; exit 1; }
grep -q "Slurm's default order" "$tmp/text" || { echo "FAIL: no Slurm comparison"; cat "$tmp/text"; exit 1; }
grep -q "cross-leaf -" "$tmp/text" || { echo "FAIL: no cross-leaf saving reported"; cat "$tmp/text"; exit 1; }
# GB200-like nodes of the sample policy: 4 GPUs each, 72-GPU NVLink blocks
# from BlockName= lines whose members interleave in name order. tp=8 spans
# two nodes and must stay inside one block; GPUs and NICs per the policy.
cat >"$tmp/blocks.conf" <<'T'
BlockName=rack1 Nodes=nvl[001,003,005,007,009,011,013,015,017,019,021,023,025,027,029,031,033,035]
BlockName=rack2 Nodes=nvl[002,004,006,008,010,012,014,016,018,020,022,024,026,028,030,032,034,036]
SwitchName=s1 Nodes=nvl[001-036]
T
"$plan" --policy "${top_srcdir:-../..}/etc/llm-train.yaml" --nodes 'nvl[001-036]' --topology "$tmp/blocks.conf" \
	--layout tp=8,pp=2,dp=auto --tasks-per-node 4 --json >"$tmp/nvl.json" 2>"$tmp/err" \
	|| { echo "FAIL: nvl plan exited $?"; cat "$tmp/err"; exit 1; }
/usr/bin/python3 - "$tmp/nvl.json" <<'P' || exit 1
import json, sys
m = json.load(open(sys.argv[1]))
assert len(m) == 144 and sorted(e["rank"] for e in m) == list(range(144))
block = lambda n: int(n[3:]) % 2
by = {e["rank"]: e for e in m}
for r, e in by.items():
    assert block(by[r - r % 8]["node"]) == block(e["node"]), "TP group crosses an NVLink block: %r" % e
    assert e["gpu"] == e["local_rank"] and 0 <= e["gpu"] < 4, e
    assert e["nic"] == "mlx5_%d" % e["gpu"], e
print("nvl map ok: TP groups inside NVLink blocks")
P
# --env: each task's environment per the contract, with the cluster policy's
# NCCL profile substituted per rank
"$plan" --policy "${top_srcdir:-../..}/tests/spank/cluster-policy.yaml" --nodes 'node[1-3]' \
	--topology "$tmp/topology.conf" --layout tp=2,dp=auto,ckpt-dir=/tmp/run1,ckpt-interval=10m \
	--tasks-per-node 2 --env --job-id 4242 --step-id 3 --json >"$tmp/env.json" 2>"$tmp/err" \
	|| { echo "FAIL: --env exited $?"; cat "$tmp/err"; exit 1; }
/usr/bin/python3 - "$tmp/env.json" <<'P' || exit 1
import json, sys
m = json.load(open(sys.argv[1]))
assert len(m) == 6
# no reservation here (SLURM_STEP_RESV_PORTS is the step's): the hash of
# job and step over the policy's fallback range, the same for every task
port = int(m[0]["env"]["MASTER_PORT"])
assert 20000 <= port <= 29999, port
master = [e["node"] for e in m if e["rank"] == 0][0]
for e in m:
    v = e["env"]
    want = {"LLM_TRAIN": "1", "RANK": str(e["rank"]), "WORLD_SIZE": "6", "LOCAL_RANK": str(e["local_rank"]),
            "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": master, "MASTER_PORT": str(port),
            "LLM_TRAIN_TP": "2", "LLM_TRAIN_PP": "1", "LLM_TRAIN_DP": "3",
            "LLM_TRAIN_TP_RANK": str(e["tp"]), "LLM_TRAIN_PP_RANK": str(e["pp"]), "LLM_TRAIN_DP_RANK": str(e["dp"]),
            "LLM_TRAIN_GPU": "-1", "LLM_TRAIN_NIC": "lo", "LLM_TRAIN_CKPT_DIR": "/tmp/run1",
            "LLM_TRAIN_HEARTBEAT_DIR": "/tmp/run1/heartbeat", "LLM_TRAIN_CKPT_INTERVAL": "10m",
            "LLM_TRAIN_NCCL_PROFILE": "cpu", "NCCL_SOCKET_IFNAME": "lo"}
    for k, x in want.items():
        assert v.get(k) == x, "%s=%r, want %r (%r)" % (k, v.get(k), x, e)
    assert "CUDA_VISIBLE_DEVICES" not in v, v
print("env ok")
P
# a ckpt-dir outside the policy's roots is refused like at submit time
"$plan" --policy "${top_srcdir:-../..}/tests/spank/cluster-policy.yaml" --nodes 'node[1-2]' \
	--layout tp=1,ckpt-dir=/etc/x >/dev/null 2>"$tmp/err" && { echo "FAIL: /etc/x accepted"; exit 1; }
grep -q "/etc/x" "$tmp/err" || { echo "FAIL: message lacks /etc/x"; cat "$tmp/err"; exit 1; }
# bad input: exit 64, one line naming the value
check_bad() {
	want=$1; shift
	"$plan" --no-policy "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc = 64 ] || { echo "FAIL: '$*' exited $rc, want 64"; cat "$tmp/err"; exit 1; }
	[ "$(wc -l <"$tmp/err")" = 1 ] || { echo "FAIL: '$*': want one line"; cat "$tmp/err"; exit 1; }
	grep -qF -- "$want" "$tmp/err" || { echo "FAIL: '$*': message lacks '$want'"; cat "$tmp/err"; exit 1; }
}
check_bad "tp=3" --nodes 'n[1-8]' --layout tp=3 --tasks-per-node 2
check_bad "tp=abc" --nodes 'n[1-8]' --layout tp=abc
check_bad "bogus" --nodes 'n[1-8]' --layout tp=1,bogus=2
check_bad "/nonexistent.conf" --nodes 'n[1-8]' --layout tp=1 --topology /nonexistent.conf
check_bad "--tasks-per-node" --nodes 'n[1-8]' --layout tp=1 --tasks-per-node 2x
check_bad "--nodes" --layout tp=1
check_bad "--frobnicate" --frobnicate
check_bad "n1 twice" --nodes 'n1,n2,n1' --layout tp=1
echo "plan_json: ok"
