#!/bin/sh
# tests/wrapper/wrap_cluster_noopt.sh: a job submitted without any of the
# plugin's options (no --llm-train, no --llm-ckpt-dir: llm-train-ckpt-torch(1)'s
# example did so, giving the wrapper --ckpt-dir instead) gets no RANK,
# WORLD_SIZE, MASTER_ADDR or MASTER_PORT in its tasks, and a PyTorch
# env:// script fails on every attempt with "MASTER_ADDR expected": the
# wrapper says why in one line at start; with --llm-train it says nothing
# of the kind. Red before: no such line (four tracebacks per attempt only).
# The same from an salloc shell: salloc --llm-train gets no such line
# (red before: it did, though its tasks got their ranks), a plain salloc does;
# the wrapper takes salloc's --llm-ckpt-dir (red before: "no checkpoint dir").
set -u
. "$top_srcdir/tests/cluster/lib.sh"
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
cluster_need
W=$CLUSTER_WORK
cat >"$W/j.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-dir "$W/ck.\$1" --ckpt-tool none --tick 0.2 --max-restarts 0 -- sh -c 'echo "task \$SLURM_PROCID RANK=\${RANK-unset}"'
JOB
chmod +x "$W/j.sh"
a=$(cd "$W" && sbatch --parsable --no-requeue -N2 --ntasks-per-node=1 -o noopt.out j.sh noopt) || fail "sbatch"
b=$(cd "$W" && sbatch --parsable --no-requeue -N2 --ntasks-per-node=1 --llm-train=dp=auto -o opt.out j.sh opt) ||
	fail "sbatch --llm-train"
st=$(cluster_sbatch_wait "$a" 60) || { cat "$W/noopt.out"; fail "job $a ended $st"; }
st=$(cluster_sbatch_wait "$b" 60) || { cat "$W/opt.out"; fail "job $b ended $st"; }
grep -q "RANK=unset" "$W/noopt.out" || { cat "$W/noopt.out"; fail "without options the tasks got a RANK"; }
grep -q "has no --llm-train or --llm-ckpt-dir option: the plugin sets no RANK" "$W/noopt.out" ||
	{ cat "$W/noopt.out"; fail "no line saying the job has none of the plugin's options"; }
grep -q "RANK=[01]" "$W/opt.out" || { cat "$W/opt.out"; fail "with --llm-train the tasks got no RANK"; }
grep -q "has no --llm-train" "$W/opt.out" && { cat "$W/opt.out"; fail "said so for a job with --llm-train"; }
echo "ok: a job without the plugin's options is named at start; one with --llm-train is not"
# under salloc the wrapper runs in the salloc shell, not in a step of the
# plugin (no LLM_TRAIN=1 there): salloc --llm-train hands its steps the
# option through SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_*, and the
# tasks get their ranks; no line says otherwise (was: the false line)
(cd "$W" && salloc -N2 --ntasks-per-node=1 --llm-train=dp=auto ./j.sh salloc-opt) >"$W/salloc-opt.out" 2>&1 ||
	{ cat "$W/salloc-opt.out"; fail "salloc --llm-train"; }
(cd "$W" && salloc -N2 --ntasks-per-node=1 ./j.sh salloc-noopt) >"$W/salloc-noopt.out" 2>&1 ||
	{ cat "$W/salloc-noopt.out"; fail "salloc"; }
grep -q "RANK=[01]" "$W/salloc-opt.out" || { cat "$W/salloc-opt.out"; fail "salloc --llm-train: the tasks got no RANK"; }
grep -q "has no --llm-train" "$W/salloc-opt.out" &&
	{ cat "$W/salloc-opt.out"; fail "said so under salloc --llm-train"; }
grep -q "RANK=unset" "$W/salloc-noopt.out" && grep -q "has no --llm-train or --llm-ckpt-dir option" "$W/salloc-noopt.out" ||
	{ cat "$W/salloc-noopt.out"; fail "salloc without options: no line saying so"; }
echo "ok: under salloc --llm-train no such line; under a plain salloc the line"
# and its checkpoint dir: the salloc shell has no LLM_TRAIN_CKPT_DIR (no
# step of the plugin set it); the wrapper takes --llm-ckpt-dir, or the
# --llm-train spec's ckpt-dir, as the tasks get it (was: exit 64, "no
# checkpoint dir: give --ckpt-dir or set LLM_TRAIN_CKPT_DIR")
cat >"$W/j2.sh" <<JOB
#!/bin/sh
exec "$WRAP" --ckpt-tool none --tick 0.2 --max-restarts 0 -- sh -c 'echo "task \$SLURM_PROCID CKPT=\$LLM_TRAIN_CKPT_DIR"'
JOB
chmod +x "$W/j2.sh"
for how in "--llm-ckpt-dir=$W/ck.sa1" "--llm-train=dp=auto,ckpt-dir=$W/ck.sa2"; do
	d=${how##*=}
	(cd "$W" && salloc -N2 --ntasks-per-node=1 "$how" ./j2.sh) >"$W/sa.out" 2>&1 ||
		{ cat "$W/sa.out"; fail "salloc $how: the wrapper without --ckpt-dir failed"; }
	[ "$(grep -c "^task [01] CKPT=$d\$" "$W/sa.out")" = 2 ] && [ -s "$d/ledger.jsonl" ] ||
		{ cat "$W/sa.out"; fail "salloc $how: want the tasks' LLM_TRAIN_CKPT_DIR and the ledger in $d"; }
done
echo "ok: under salloc --llm-ckpt-dir (or --llm-train=...,ckpt-dir=) the wrapper takes that checkpoint dir"
echo PASS
