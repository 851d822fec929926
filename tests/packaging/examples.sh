#!/bin/sh
# The example job scripts of etc/examples stay true: each is valid shell;
# its --llm-train layout, checkpoint dir and restart budget pass the sample
# policy etc/llm-train.yaml as the plugin checks them (llm-train-plan runs
# the plugin's own code); and every option its command line gives
# llm-train-wrap and llm-train is one those commands list in --help. The
# example policy printed in llm-train.yaml(5) passes the policy reader too.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

plan=$top_builddir/spank/llm-train-plan
wrap=$top_builddir/wrapper/llm-train-wrap
train=$top_builddir/runtime/llm-train
policy=$top_srcdir/etc/llm-train.yaml
for b in "$plan" "$wrap" "$train"; do
	[ -x "$b" ] || { echo "FAIL: $b is not built"; exit 1; }
done
[ -f "$policy" ] || { echo "FAIL: no sample policy $policy"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/llmt-ex.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
# No topology.conf: the policy says "source: slurm"; keep the host's out.
SLURM_CONF=$tmp/slurm.conf
export SLURM_CONF
"$wrap" --help >"$tmp/wrap.help" 2>&1 || fail "llm-train-wrap --help failed"
"$train" --help >"$tmp/train.help" 2>&1 || fail "llm-train --help failed"

# The check is live: a checkpoint dir outside the policy's roots is refused.
if "$plan" --policy "$policy" --nodes 'cpu001' --tasks-per-node 4 \
	--layout tp=2,dp=auto,ckpt-dir=/nonexistent-root/x --no-map >/dev/null 2>&1; then
	fail "llm-train-plan accepted a checkpoint dir outside the policy's roots"
fi

# The example policy in llm-train.yaml(5) is one the plugin accepts.
yaml5=${top_builddir:-$top_srcdir}/doc/llm-train.yaml.5   # made from doc/llm-train.yaml.5.in
sed -n '/^\.SH EXAMPLE/,/^\.fi/p' "$yaml5" | sed '1,2d;$d' |
	sed 's/\\-/-/g' >"$tmp/man-policy.yaml"
grep -q '^node_types:' "$tmp/man-policy.yaml" || fail "no example policy found in doc/llm-train.yaml.5"
if ! "$plan" --policy "$tmp/man-policy.yaml" --nodes 'gpu[001-002]' --tasks-per-node 8 \
	--layout tp=8,dp=auto,ckpt-dir=/lustre/me/run1,nccl=ib --env --no-map >"$tmp/plan.out" 2>&1; then
	fail "the example policy of llm-train.yaml(5) is refused: $(grep -v 'note:' "$tmp/plan.out")"
fi

sbatch_opt() { # file option: value of "#SBATCH --option=value"
	sed -n "s/^#SBATCH .*--$2=\([^ ]*\).*/\1/p" "$1" | tail -1
}

n=0
for f in "$top_srcdir"/etc/examples/*.sbatch; do
	name=$(basename "$f")
	n=$((n + 1))
	bash -n "$f" || fail "$name: not valid bash"
	nodes=$(sbatch_opt "$f" nodes)
	tpn=$(sbatch_opt "$f" ntasks-per-node)
	spec=$(sbatch_opt "$f" llm-train)
	ckpt=$(sbatch_opt "$f" llm-ckpt-dir)
	[ -n "$nodes" ] && [ -n "$tpn" ] && [ -n "$spec" ] && [ -n "$ckpt" ] \
		|| { fail "$name: needs --nodes, --ntasks-per-node, --llm-train and --llm-ckpt-dir"; continue; }
	# Node names of the sample policy's node types: gpu[...] has 8 GPUs
	# per node and an NVLink domain of one node, cpu[...] has no GPU.
	if grep -q '^#SBATCH .*--gpus-per-node' "$f"; then pre=gpu; else pre=cpu; fi
	hosts=$(printf '%s[001-%03d]' "$pre" "$nodes")
	if ! "$plan" --policy "$policy" --nodes "$hosts" --tasks-per-node "$tpn" \
		--layout "$spec,ckpt-dir=$ckpt" --no-map >"$tmp/plan.out" 2>&1; then
		fail "$name: the sample policy refuses it: $(grep -v 'note:' "$tmp/plan.out")"
	fi
	cmd=$(grep -v '^#' "$f" | grep 'llm-train-wrap' | tail -1)
	[ -n "$cmd" ] || { fail "$name: no llm-train-wrap command line"; continue; }
	wrap_opts=$(echo "$cmd" | sed 's/ -- .*//' | grep -oE -- '--[a-z][a-z0-9-]*' || true)
	train_opts=$(echo "$cmd" | sed -n 's/.* -- llm-train //p' | grep -oE -- '--[a-z][a-z0-9-]*' || true)
	echo "$cmd" | grep -q ' -- llm-train ' || fail "$name: not 'llm-train-wrap ... -- llm-train ...'"
	for o in $wrap_opts; do
		grep -qF -- "$o" "$tmp/wrap.help" || fail "$name: llm-train-wrap has no option $o"
	done
	for o in $train_opts; do
		grep -qF -- "$o" "$tmp/train.help" || fail "$name: llm-train has no option $o"
	done
	echo "ok: $name ($nodes x $tpn tasks, $spec)"
done
[ $n -ge 3 ] || fail "expected at least 3 example job scripts, found $n"

[ $fails = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "PASS: $n example job scripts agree with the sample policy and the commands"
