#!/bin/bash
# tests/spank/cluster_auto.sh: --llm-train=tp=auto,pp=auto on the emulated
# cluster with the real plugin: the ranks of a batch job's step get the
# layout llm-train-plan --auto chooses for the same allocation and node
# type (memory_gib, gflops of the policy), the wrapper's ledger records the
# choice, srun --llm-explain prints the candidates, a model that fits
# nothing is refused before launch with the smallest allocation, and auto
# without a model, with a hostile model file or without the node type's
# memory is refused with one line. Fails on the code before tp=auto
# ("tp=auto is not a number").
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
plan=$top_builddir/spank/llm-train-plan
so=$top_builddir/spank/.libs/llm_train.so
wrap=$top_builddir/wrapper/llm-train-wrap
for f in "$plan" "$wrap"; do [ -x "$f" ] || { echo "FAIL: $f not built (a build output, never a skip)"; exit 1; }; done
[ -f "$so" ] || { echo "FAIL: $so not built (a build output, never a skip)"; exit 1; }
. "$top_srcdir/tests/cluster/lib.sh"
cluster_need --nodes 2 --plugin "$so"
fail() { echo "FAIL: $*"; exit 1; }
w=$CLUSTER_DIR/spank-auto
mkdir -p "$w" || exit 1
src=$(cd "$top_srcdir" && pwd -P)
tiny=$src/configs/tiny.yaml big=$src/configs/bench-768.yaml
pol=$CLUSTER_DIR/etc/llm-train.yaml
cp "$pol" "$w/orig.yaml" || exit 1
# policy MEM GFLOPS: the emulated node type with that memory and rate
policy() {
	sed "s/^    gpus_per_node: 0\$/    gpus_per_node: 0\n    memory_gib: $1\n    gflops: $2/" \
		"$w/orig.yaml" >"$w/p.yaml" && cp "$w/p.yaml" "$pol" || fail "policy"
	grep -q "memory_gib: $1" "$pol" || fail "policy has no memory_gib"
}
refused() {   # WANT CMD...: fails, one llm_train line holding WANT
	want=$1; shift
	"$@" >"$w/out" 2>"$w/err" && { cat "$w/out" "$w/err"; fail "accepted: $*"; }
	grep -q "llm_train: .*$want" "$w/err" || { cat "$w/err"; fail "no 'llm_train: ...$want' for: $*"; }
	[ "$(grep -c 'llm_train: ' "$w/err")" = 1 ] || { cat "$w/err"; fail "more than one llm_train line: $*"; }
}
trap 'cp "$w/orig.yaml" "$pol"; cluster_cleanup $?' EXIT

# ---- the batch job: ranks get the planner's layout, the ledger records it ---
policy 8 100    # 4 GiB and 50 GFLOP/s per rank at 2 tasks per node
cat >"$w/job.sh" <<EOF
#!/bin/sh
echo "B \$LLM_TRAIN_AUTO"
$wrap --ckpt-dir $w/ck --max-restarts 0 -- sh -c 'echo T \$SLURM_PROCID \$LLM_TRAIN_TP \$LLM_TRAIN_PP \$LLM_TRAIN_DP \$LLM_TRAIN_MICRO_BATCH \$LLM_TRAIN_GRAD_ACCUM \$LLM_TRAIN_RECOMPUTE \$LLM_TRAIN_SEQ \$LLM_TRAIN_TP_RANK'
EOF
jid=$(sbatch --parsable -N2 --ntasks-per-node=2 -o "$w/job.out" \
	--llm-train=tp=auto,pp=auto,model="$tiny",global-batch=8 "$w/job.sh") || fail "sbatch tp=auto"
cluster_sbatch_wait "$jid" 120 >/dev/null || { cat "$w/job.out"; fail "auto job ended badly"; }
"$plan" --auto --model "$tiny" --nodes 2 --tasks-per-node 2 --mem-per-rank 4 --gflops 50 \
	--global-batch 8 --json >"$w/plan.json" || fail "llm-train-plan --auto"
/usr/bin/python3 - "$w/job.out" "$w/plan.json" "$w/ck/ledger.jsonl" <<'EOF' || { cat "$w/job.out"; fail "ranks vs planner"; }
import json, sys
out, planf, ledger = sys.argv[1:4]
ch = json.load(open(planf))["chosen"]
want = [str(ch[k]) for k in ("tp", "pp", "dp", "micro_batch", "grad_accum", "recompute")] + ["256"]
rows = [l.split() for l in open(out) if l.startswith("T ")]
assert len(rows) == 4, f"{len(rows)} task lines"
for r in rows:
    assert r[2:9] == want, f"task {r[1]}: {r[2:9]}, the planner chose {want}"
b = [l for l in open(out) if l.startswith("B ")][0]
assert f"tp={ch['tp']} pp={ch['pp']} dp={ch['dp']}" in b, b
ev = [json.loads(l) for l in open(ledger)]
lay = [e for e in ev if e["event"] == "layout"]
assert len(lay) == 1, f"{len(lay)} layout events"
for k in ("tp", "pp", "dp", "micro_batch", "grad_accum", "candidates"):
    assert k in lay[0], k
assert (lay[0]["tp"], lay[0]["pp"], lay[0]["dp"]) == (ch["tp"], ch["pp"], ch["dp"]), lay[0]
assert lay[0]["candidates"] == json.load(open(planf))["feasible"], lay[0]
assert lay[0]["step_s"] > 0 and lay[0]["memory_bytes"] > 0
print(f"ok: ranks and ledger: tp={ch['tp']} pp={ch['pp']} dp={ch['dp']} micro-batch {ch['micro_batch']}")
EOF

# ---- srun --llm-explain inside the allocation: the candidates --------------
cat >"$w/ex.sh" <<EOF
#!/bin/sh
srun --llm-explain true
echo "srun rc=\$?"
EOF
jid=$(sbatch --parsable -N2 --ntasks-per-node=2 -o "$w/ex.out" \
	--llm-train=tp=auto,pp=auto,model="$tiny" "$w/ex.sh") || fail "sbatch explain"
cluster_sbatch_wait "$jid" 60 >/dev/null || { cat "$w/ex.out"; fail "explain job"; }
grep -q 'llm_train: explain: planner: 2 nodes x 2 tasks, 4.00 GiB per rank' "$w/ex.out" || { cat "$w/ex.out"; fail "no planner line"; }
grep -q '<- chosen' "$w/ex.out" || fail "no chosen candidate"
grep -q 'environment of task 3' "$w/ex.out" || fail "no rank map after the candidates"
grep -q 'srun rc=1' "$w/ex.out" || fail "srun --llm-explain launched"
sbatch -N1 --llm-train=tp=auto,model="$tiny",explain "$w/ex.sh" >"$w/out" 2>"$w/err" && fail "sbatch --llm-explain submitted"
grep -q 'llm_train: explain: layout chosen by the planner at step start' "$w/out" || { cat "$w/out" "$w/err"; fail "sbatch explain of auto"; }
echo "ok: srun --llm-explain prints the candidates, sbatch --llm-explain says where they are chosen"

# ---- a model that fits nothing: refused before launch, smallest allocation --
policy 2 100    # 1 GiB per rank: bench-768 needs 3 nodes x 2 tasks
"$plan" --auto --model "$big" --nodes 1 --tasks-per-node 2 --mem-per-rank 1 --gflops 50 --json \
	>"$w/nofit.json" 2>/dev/null
min=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["min_nodes"])' "$w/nofit.json")
# srun outside an allocation: the nodes refuse every task with the line
printf '#!/bin/sh\ntouch %s/ran\n' "$w" >"$w/touch.sh"
srun -N1 -n2 --llm-train=tp=auto,pp=auto,model="$big" "$w/touch.sh" >"$w/out" 2>"$w/err" && fail "srun launched"
grep -q "llm_train: task refused: .*smallest allocation that fits is $min nodes x 2 tasks" "$w/err" ||
	{ cat "$w/err"; fail "srun: the nodes' refusal names no smallest allocation"; }
# srun inside an allocation knows the nodes: it refuses itself, one line
cat >"$w/in.sh" <<EOF
#!/bin/sh
srun --llm-train=tp=auto,pp=auto,model=$big $w/touch.sh 2>$w/in.err
echo "srun rc=\$?"
srun true
echo "after rc=\$?"
EOF
jid=$(sbatch --parsable -N1 --ntasks-per-node=2 -o "$w/in.out" "$w/in.sh") || fail "sbatch"
cluster_sbatch_wait "$jid" 60 >/dev/null || { cat "$w/in.out"; fail "in-allocation job"; }
grep -q 'srun rc=1' "$w/in.out" || { cat "$w/in.out" "$w/in.err"; fail "srun launched a model that fits nothing"; }
# the refused step is released: the job's next srun runs (cluster_step_release.sh)
grep -q 'after rc=0' "$w/in.out" || { cat "$w/in.out"; fail "the srun after the refusal did not run"; }
grep -q "llm_train: no layout of 1 nodes x 2 tasks .*smallest allocation that fits is $min nodes x 2 tasks: step not launched" "$w/in.err" ||
	{ cat "$w/in.err"; fail "srun's refusal"; }
[ "$(grep -c 'llm_train: ' "$w/in.err")" = 1 ] || { cat "$w/in.err"; fail "more than one line from srun"; }
jid=$(sbatch --parsable -N1 --ntasks-per-node=2 -o "$w/nofit.out" \
	--llm-train=tp=auto,model="$big" "$w/touch.sh") || fail "sbatch of a readable model refused at submit"
st=$(cluster_sbatch_wait "$jid" 60) && fail "a job whose model fits nothing ended $st"
[ ! -e "$w/ran" ] || fail "the batch script of a model that fits nothing ran"
grep -rq "smallest allocation that fits is $min nodes x 2 tasks" "$CLUSTER_DIR"/log/ "$w/nofit.out" 2>/dev/null ||
	fail "the batch step's refusal names no smallest allocation"
echo "ok: a model that fits nothing is refused with the smallest allocation ($min nodes x 2 tasks)"

# ---- bad input: one line, nothing submitted ---------------------------------
refused 'tp=auto needs model=FILE' sbatch -N1 --llm-train=tp=auto "$w/touch.sh"
refused 'micro-batch=auto needs model=FILE' srun -N1 --llm-train=micro-batch=auto true
ln -sf /etc/shadow "$w/shadow.yaml"
refused 'symbolic link (refused): job not submitted' sbatch -N1 --llm-train=tp=auto,model="$w/shadow.yaml" "$w/touch.sh"
mkfifo "$w/fifo.yaml"
refused 'not a regular file' timeout 20 sbatch -N1 --llm-train=tp=auto,model="$w/fifo.yaml" "$w/touch.sh"
printf 'root:$6$secret$x:1::\n\001: [\n' >"$w/garbage.yaml"
refused 'not a model config' sbatch -N1 --llm-train=pp=auto,model="$w/garbage.yaml" "$w/touch.sh"
grep -q secret "$w/err" && fail "the refusal quotes the model file"
truncate -s 1G "$w/huge.yaml"
refused 'larger than 64 KiB' sbatch -N1 --llm-train=tp=auto,model="$w/huge.yaml" "$w/touch.sh"
cp "$w/orig.yaml" "$pol"   # the node type declares no memory
srun -N1 -n2 --llm-train=tp=auto,model="$tiny" "$w/touch.sh" >"$w/out" 2>"$w/err" && fail "srun ran without memory_gib"
grep -q 'llm_train: task refused: node type emu declares no memory_gib' "$w/err" || { cat "$w/err"; fail "no memory_gib line"; }
[ ! -e "$w/ran" ] || fail "a refused job ran"
scontrol ping >/dev/null || fail "slurmctld died"
# idle again (a refused step leaves them COMPLETING for a moment), none drained
cluster_wait_idle 30 || { sinfo; fail "nodes not idle after the refusals"; }
echo "ok: auto without a model, hostile model files and a node type without memory refused"
