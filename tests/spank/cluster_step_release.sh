#!/bin/bash
# tests/spank/cluster_step_release.sh: a step srun refuses inside an
# allocation (a layout that does not fit the step, also under
# --export=NONE, and --llm-explain) is
# released, so the job's next srun runs and the job ends. On Slurm 22.05 a
# failing local_user_init leaves the step RUNNING in slurmctld (it exists
# already, no slurmstepd ever completes it, scancel JOB.STEP does not free
# it): every later srun of the job waited "Requested nodes are busy" until
# the time limit. Checks the one llm_train line (first, before Slurm's),
# srun's exit code 1, that no refused command ran, and that afterwards
# the nodes are idle, undrained, with every slurmd alive and no slurmstepd
# left.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
so=$top_builddir/spank/.libs/llm_train.so
[ -f "$so" ] || { echo "FAIL: $so not built (a build output, never a skip)"; exit 1; }
. "$top_srcdir/tests/cluster/lib.sh"
cluster_need --nodes 2 --plugin "$so"
fail() { echo "FAIL: $*"; exit 1; }
w=$CLUSTER_WORK
cat >"$w/job.sh" <<EOF
#!/bin/sh
srun --llm-explain touch $w/ran 2>$w/explain.err
echo "explain rc=\$?"
srun -n3 --llm-tp=2 touch $w/ran 2>$w/layout.err
echo "layout rc=\$?"
srun --export=NONE -n3 --llm-tp=2 touch $w/ran 2>$w/export.err
echo "export rc=\$?"
srun -N2 touch $w/after
echo "plain rc=\$?"
EOF
# --time: the red case (the step never released) ends at the time limit
jid=$(sbatch --parsable -N2 -n4 --time=1 -o "$w/job.out" "$w/job.sh") || fail "sbatch"
st=$(cluster_sbatch_wait "$jid" 45) ||
	{ cat "$w/job.out"; scontrol show step "$jid" 2>&1 | grep StepId; fail "job ended $st (a refused step was never released)"; }
grep -q '^plain rc=0$' "$w/job.out" && [ -e "$w/after" ] || { cat "$w/job.out"; fail "the srun after the refusals did not run"; }
[ ! -e "$w/ran" ] || fail "a refused srun ran its command"
for k in explain layout export; do
	grep -q "^$k rc=1\$" "$w/job.out" || { cat "$w/job.out"; fail "$k: srun did not exit 1"; }
	e=$w/$k.err
	[ "$(grep -c 'llm_train: ' "$e")" = 1 ] || { cat "$e"; fail "$k: not exactly one llm_train line"; }
	# ours is the first error the user reads, Slurm's follow
	head -n 1 "$e" | grep -q 'llm_train: ' || { cat "$e"; fail "$k: Slurm's lines before ours"; }
done
grep -q 'llm_train: explain mode: step not launched' "$w/explain.err" || fail "explain refusal line"
grep -q 'environment of task 3 (node2)' "$w/job.out" || { cat "$w/job.out"; fail "srun --llm-explain printed no map"; }
grep -q 'llm_train: .*does not divide the 3 tasks' "$w/export.err" || { cat "$w/export.err"; fail "--export=NONE refusal line"; }
grep -q 'llm_train: .*does not divide the 3 tasks' "$w/layout.err" || { cat "$w/layout.err"; fail "layout refusal line"; }
echo "ok: refused and --llm-explain steps released; the next srun ran, job $jid COMPLETED"

cluster_all_well
echo "ok: every node idle and undrained, every slurmd alive, no slurmstepd left"
echo "PASS"
