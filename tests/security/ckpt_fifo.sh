#!/bin/bash
# A FIFO in place of a checkpoint's manifest.json or rank shard, or of an
# import's model.safetensors: llm-train's readers (ckpt-list, which
# llm-train-wrap runs before every attempt, ckpt-verify, the resume, import)
# waited in open(2) for a writer forever (ckpt-list: killed by the 20 s
# guard here, exit 124). Now each says "not a regular file" at once, the
# checkpoint is the bad one (65) and the others are still listed.
. "${top_srcdir:?}/tests/security/lib.sh"
sec_tmpdir
lt=${top_builddir:?}/runtime/llm-train
[ -x "$lt" ] || { echo "FAIL: $lt not built"; exit 1; }
d=$sec_dir
fail=0
bad() { echo "FAIL: $*"; fail=1; }
sec_tiny "$d"
train() { (cd "$d" && "$lt" --model "$d/m.yaml" --data "$d/data" --seq 16 --micro-batch 1 --quiet "$@"); }
c=$d/ck
train --steps 3 --ckpt-interval 1 --ckpt-dir "$c" >"$d/t.out" 2>&1 || { cat "$d/t.out"; exit 1; }
for s in 1 2 3; do [ -f "$c/step_0000000$s/manifest.json" ] || { echo "FAIL: no step $s"; ls "$c"; exit 1; }; done
rm "$c/step_00000003/manifest.json" && mkfifo "$c/step_00000003/manifest.json" || exit 1
shard=$(cd "$c/step_00000002" && ls rank_*.bin | head -1)
rm "$c/step_00000002/$shard" && mkfifo "$c/step_00000002/$shard" || exit 1
run() {   # $1: name; the rest: the command, under a 20 s guard against the hang
	local n=$1; shift
	timeout -k 5 20 "$@" >"$d/$n.out" 2>&1; echo $? >"$d/$n.rc"   # -k: main's resume hung past SIGTERM
}
run list "$lt" ckpt-list "$c"
[ "$(cat "$d/list.rc")" = 124 ] && bad "ckpt-list hung on the FIFOs"
grep -q "step_00000003/manifest.json: cannot open: not a regular file" "$d/list.out" ||
	bad "ckpt-list: no line for the FIFO manifest: $(cat "$d/list.out")"
grep -q "^1 $c/step_00000001$" "$d/list.out" || bad "ckpt-list: the good step 1 not listed: $(cat "$d/list.out")"
run verify3 "$lt" ckpt-verify "$c/step_00000003"
[ "$(cat "$d/verify3.rc")" = 65 ] || bad "ckpt-verify of the FIFO manifest: exit $(cat "$d/verify3.rc"): $(cat "$d/verify3.out")"
run verify2 "$lt" ckpt-verify "$c/step_00000002"
[ "$(cat "$d/verify2.rc")" = 65 ] && grep -q "$shard: " "$d/verify2.out" ||
	bad "ckpt-verify of the FIFO shard: exit $(cat "$d/verify2.rc"): $(cat "$d/verify2.out")"
# the resume passes both by and goes on from step 1
(cd "$d" && run resume "$lt" --model "$d/m.yaml" --data "$d/data" --seq 16 --micro-batch 1 --quiet --steps 4 \
	--ckpt-interval 100 --ckpt-dir "$c")
[ "$(cat "$d/resume.rc")" = 0 ] || bad "the resume: exit $(cat "$d/resume.rc"): $(tail -3 "$d/resume.out")"
[ -d "$c/step_00000004" ] || bad "the resume saved no step 4"
# import of a model.safetensors that is a FIFO
"$lt" export "$c/step_00000001" "$d/hf" >"$d/exp.out" 2>&1 || bad "export: $(cat "$d/exp.out")"
rm -f "$d/hf/model.safetensors" && mkfifo "$d/hf/model.safetensors"
run import "$lt" import "$d/hf" "$d/imp"
[ "$(cat "$d/import.rc")" != 124 ] && [ "$(cat "$d/import.rc")" != 0 ] &&
	grep -q "model.safetensors: not a regular file" "$d/import.out" ||
	bad "import of a FIFO model.safetensors: exit $(cat "$d/import.rc"): $(cat "$d/import.out")"
[ $fail = 0 ] && echo "ok: ckpt-list, ckpt-verify, the resume and import refuse FIFOs at once; the resume went on"
exit $fail
