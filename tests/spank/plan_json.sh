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
"$plan" --nodes 'n[1-8]' --topology "$tmp/topology.conf" --layout tp=2,pp=2,dp=auto \
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
"$plan" --nodes 'n[1-8]' --topology "$tmp/topology.conf" --layout tp=2,pp=2,dp=auto \
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
# bad input: exit 64, one line naming the value
check_bad() {
	want=$1; shift
	"$plan" "$@" >"$tmp/out" 2>"$tmp/err"
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
