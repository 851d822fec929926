#!/bin/bash
# The checkpoint, run or heartbeat directory made by another user between
# the ownership check (include/llmt/owndir.h) and the job's own mkdir,
# which then fails with EEXIST: an LD_PRELOAD shim (mkdir_race.c) plays
# that user (uid 4242) at the moment of the mkdir. llm-train, llm-train-wrap
# and the llm_train module check again once the directory is there: 64 and
# one line. Before (the check alone) all three used uid 4242's directory.
. "${top_srcdir:?}/tests/security/lib.sh"
sec_need_root
sec_tmpdir
lt=${top_builddir:?}/runtime/llm-train
W=${top_builddir:?}/wrapper/llm-train-wrap
for b in "$lt" "$W"; do [ -x "$b" ] || { echo "FAIL: $b not built"; exit 1; }; done
d=$sec_dir
${CC:-cc} -shared -fPIC -O1 -o "$d/race.so" "$top_srcdir/tests/security/mkdir_race.c" -ldl ||
	{ echo "FAIL: the shim does not build"; exit 1; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }
mkdir "$d/data" && /usr/bin/python3 - "$d/data/a.bin" <<'PY' || exit 1
import struct, sys
h = [0] * 256; h[0] = 20240520; h[1] = 1; h[2] = 4096
open(sys.argv[1], 'wb').write(struct.pack('<256i', *h) + struct.pack('<4096H', *([65] * 4096)))
PY
printf 'vocab_size: 256\nd_model: 64\nn_layers: 1\nn_heads: 2\nd_ff: 128\nmax_seq: 32\n' >"$d/m.yaml"
cp "$top_srcdir/wrapper/python/llm_train.py" "$d/llm_train.py"
want64() {   # $1: case, $2: output, $3: text of the one line, $4: exit
	if [ "$4" = 64 ] && [ "$(wc -l <"$2")" = 1 ] && grep -qF -- "$3" "$2"; then echo "ok: $1: $(cat "$2")"
	else bad "$1: exit $4, want 64 and one line with '$3': $(head -c 600 "$2")"; fi
}
race() { env LD_PRELOAD="$d/race.so" LLMT_RACE_DIR="$1" "${@:2}"; }
c=$d/c1
(cd "$d" && race "$c" "$lt" --model "$d/m.yaml" --data "$d/data" --steps 1 --seq 16 --micro-batch 1 --quiet \
	--ckpt-dir "$c") >"$d/o1" 2>&1; rc=$?
want64 "llm-train, ckpt dir made under it" "$d/o1" "checkpoint dir $c: owned by uid 4242, not by this user (uid 0): refused" $rc
[ -z "$(ls -A "$c")" ] || bad "llm-train wrote into uid 4242's dir: $(ls -A "$c")"
h=$d/c2
mkdir "$h" || exit 1
(cd "$d" && race "$h/heartbeat" "$lt" --model "$d/m.yaml" --data "$d/data" --steps 1 --seq 16 --micro-batch 1 \
	--quiet --ckpt-dir "$h") >"$d/o2" 2>&1; rc=$?
want64 "llm-train, heartbeat/ made under it" "$d/o2" "heartbeat dir $h/heartbeat: owned by uid 4242" $rc
r=$d/r3
race "$r" "$W" --no-srun --ckpt-dir "$r" -- true >"$d/o3" 2>&1; rc=$?
want64 "llm-train-wrap, run dir made under it" "$d/o3" "llm-train-wrap: run dir $r: owned by uid 4242" $rc
[ -e "$r/ledger.jsonl" ] && bad "llm-train-wrap wrote its ledger into uid 4242's dir"
k=$d/k4
race "$k" "$W" --no-srun --ckpt-dir "$k" --run-dir "$d/own4" -- true >"$d/o4" 2>&1; rc=$?
want64 "llm-train-wrap, ckpt dir made under it" "$d/o4" "llm-train-wrap: checkpoint dir $k: owned by uid 4242" $rc
p=$d/p5
(cd "$d" && race "$p" env PYTHONPATH="$d" LLM_TRAIN_CKPT_DIR="$p" /usr/bin/python3 -c 'import llm_train; llm_train.Job()') \
	>"$d/o5" 2>&1; rc=$?
want64 "llm_train.py, ckpt dir made under it" "$d/o5" "llm_train: rank 0: checkpoint dir $p: owned by uid 4242" $rc
exit $fail
