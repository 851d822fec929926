#!/bin/sh
# Cross-leaf and cross-spine bytes per step of the plugin's rank map
# against Slurm's default order (rank = task id), on fragmented
# allocations of a simulated 2,048-node fat tree (64 leaves x 32 nodes,
# 8 spines x 8 leaves, 8 GPUs per node), through llm-train-plan
# --cost-json. Goal: never worse; >= 30% less cross-spine traffic where
# the allocation is fragmented.
set -u
plan=${top_builddir:-../..}/spank/llm-train-plan
[ -x "$plan" ] || { echo "llm-train-plan not built"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$plan" "$tmp" <<'P'
import json, random, subprocess, sys
plan, tmp = sys.argv[1], sys.argv[2]
LEAVES, PER_LEAF, LEAVES_PER_SPINE = 64, 32, 8

def topology(naming):
    # node index i sits on leaf i // 32; its name depends on the naming
    names = {}
    rng = random.Random(7)
    if naming == "switch-order":          # names follow racks
        for i in range(LEAVES * PER_LEAF): names[i] = "n%04d" % i
    elif naming == "interleaved":         # consecutive names on different leaves
        for i in range(LEAVES * PER_LEAF):
            leaf, k = divmod(i, PER_LEAF)
            names[i] = "n%04d" % (k * LEAVES + leaf)
    else:                                 # shuffled: names unrelated to racks
        p = list(range(LEAVES * PER_LEAF)); rng.shuffle(p)
        for i in range(LEAVES * PER_LEAF): names[i] = "n%04d" % p[i]
    lines = []
    for leaf in range(LEAVES):
        lines.append("SwitchName=leaf%02d Nodes=%s" % (leaf, ",".join(names[leaf * PER_LEAF + k] for k in range(PER_LEAF))))
    for s in range(LEAVES // LEAVES_PER_SPINE):
        lines.append("SwitchName=spine%d Switches=leaf[%02d-%02d]" % (s, s * LEAVES_PER_SPINE, (s + 1) * LEAVES_PER_SPINE - 1))
    lines.append("SwitchName=core Switches=spine[0-%d]" % (LEAVES // LEAVES_PER_SPINE - 1))
    path = "%s/topo-%s.conf" % (tmp, naming)
    open(path, "w").write("\n".join(lines) + "\n")
    return path, names

def allocation(names, nnodes, seed, fragmented):
    rng = random.Random(seed)
    if not fragmented:   # whole leaves, in switch order
        idx = list(range(nnodes))
    else:                # busy cluster: a random free subset of each leaf, leaves picked at random
        idx = []
        leaves = list(range(LEAVES)); rng.shuffle(leaves)
        for leaf in leaves:
            free = [leaf * PER_LEAF + k for k in range(PER_LEAF) if rng.random() < 0.45]
            idx += free[: nnodes - len(idx)]
            if len(idx) == nnodes: break
    return sorted(names[i] for i in idx)   # Slurm lists a job's nodes by name

def run(topo, nodes, layout):
    nl = "%s/nodes" % tmp
    out = subprocess.run([plan, "--no-policy", "--nodes", ",".join(nodes), "--topology", topo, "--layout", layout,
                          "--tasks-per-node", "8", "--model-params", "70000000000", "--hidden", "8192",
                          "--layers", "80", "--seq", "4096", "--micro-batches", "16", "--cost-json"],
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit("llm-train-plan failed: " + out.stderr)
    return json.loads(out.stdout)

def pct(a, b): return 100.0 * (a - b) / b if b else 0.0

print("%-13s %-5s %5s %-16s %-8s %12s %12s %8s %12s %12s %8s" % (
    "naming", "frag", "nodes", "layout", "order", "leaf GiB", "slurm", "leaf%", "spine GiB", "slurm", "spine%"))
worse = 0; frag_spine = []
for naming in ("switch-order", "interleaved", "shuffled"):
    topo, names = topology(naming)
    for fragmented in (False, True):
        for nnodes, layout in ((64, "tp=8,pp=4,dp=auto"), (256, "tp=8,pp=8,dp=auto"), (512, "tp=8,pp=4,dp=auto")):
            for seed in (1, 2):
                if not fragmented and seed == 2: continue
                c = run(topo, allocation(names, nnodes, seed, fragmented), layout)
                G = 1024.0 ** 3
                ml, sl = c["map"]["all"]["leaf"] / G, c["slurm"]["all"]["leaf"] / G
                ms, ss = c["map"]["all"]["spine"] / G, c["slurm"]["all"]["spine"] / G
                if ml > sl * (1 + 1e-9) or ms > ss * (1 + 1e-9): worse += 1
                if fragmented and naming != "switch-order": frag_spine.append(pct(ms, ss))
                print("%-13s %-5s %5d %-16s %-8s %12.1f %12.1f %+7.1f%% %12.1f %12.1f %+7.1f%%" % (
                    naming, "yes" if fragmented else "no", nnodes, layout.replace(",dp=auto", ""), c["order"],
                    ml, sl, pct(ml, sl), ms, ss, pct(ms, ss)))
print("cases worse than Slurm's order: %d" % worse)
if frag_spine:
    print("fragmented, names out of switch order: cross-spine change vs Slurm: best %+.1f%%, worst %+.1f%%" % (
        min(frag_spine), max(frag_spine)))
P
