# tests/bench/loop_lib.sh: shared setup of the training-loop benchmarks:
# llm-train, a corpus of real text (scripts/make-corpus), a ~25M-parameter
# bench model, and a median helper.
set -eu
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
LT=$top_builddir/runtime/llm-train
[ -x "$LT" ] || { echo "$LT not built"; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/llmt-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
LLM_TRAIN=$LT "$top_srcdir/scripts/make-corpus" "$W/corpus" --max-bytes 2000000 >/dev/null
cat >"$W/m25.yaml" <<'YAML'
# ~25M parameters: 8 layers, 512 wide, byte vocabulary
vocab_size: 256
d_model: 512
n_layers: 8
n_heads: 8
d_ff: 1408
max_seq: 256
tie_embeddings: true
YAML
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# column NAME FILE [FILTER]: one metrics field, one a line
column() {
	/usr/bin/python3 -c 'import json,sys
for l in open(sys.argv[2]):
    o = json.loads(l)
    if len(sys.argv) < 4 or eval(sys.argv[3], {}, o): print(o[sys.argv[1]])' "$@"
}
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
