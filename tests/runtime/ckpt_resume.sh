#!/bin/sh
# tests/runtime/ckpt_resume.sh: checkpoints in real MPI jobs on the emulated
# cluster (tiny model, fp32, global batch 8):
# - resume is bit-exact: 6 steps in one go under (tp,pp,dp) = (2,1,2) vs 3
#   steps, stop, resume, 3 more: master weights, AdamW m and v identical
#   (compared by tests/runtime/ckpt_compare.py, a second reader of the
#   format), and so are the losses of steps 4-6;
# - loading under another layout: resume the step-3 checkpoint under
#   (1,2,1): after step 6 every tensor within 1e-4 (max-norm relative; fp32
#   sums in another order) of the uninterrupted run;
# - retention (--ckpt-keep 2 with a checkpoint every step keeps 2);
# - ckpt-verify / ckpt-list exit codes and messages on damaged copies, and
#   a resume from a damaged checkpoint exits 89 (bad checkpoint: the
#   wrapper falls back to an older one) touching nothing saved;
# - export refuses to overwrite an earlier export.
set -u
. "$top_srcdir/tests/runtime/loop_lib.sh"
CMP="/usr/bin/python3 $top_srcdir/tests/runtime/ckpt_compare.py"
W=$CLUSTER_WORK
common="--precision fp32 --steps 6"

rtrain "$W/A" "" 2 1 2 $common --micro-batch 2 --grad-accum 2 --ckpt-dir "$W/A" --ckpt-interval 3 \
	|| { rc=$?; cat "$W/last.out"; fail "A: llm-train exited $rc"; }
rtrain "$W/B" "" 2 1 2 --precision fp32 --steps 3 --micro-batch 2 --grad-accum 2 --ckpt-dir "$W/B" \
	--ckpt-interval 1 --ckpt-keep 2 || { rc=$?; cat "$W/last.out"; fail "B (steps 1-3): exited $rc"; }
[ "$(ls -d "$W"/B/step_* | wc -l)" = 2 ] || fail "retention: want 2 checkpoints in B, have $(ls "$W/B")"
[ -d "$W/B/step_00000003" ] && [ -d "$W/B/step_00000002" ] || fail "retention kept the wrong ones: $(ls "$W/B")"
[ "$(cat "$W/B/latest")" = step_00000003 ] || fail "latest is $(cat "$W/B/latest")"
cp -r "$W/B" "$W/B3"
rtrain "$W/B" "$W/B3" 2 1 2 $common --micro-batch 2 --grad-accum 2 --ckpt-dir "$W/B" --ckpt-interval 3 \
	|| { rc=$?; cat "$W/last.out"; fail "B (resume): exited $rc"; }
grep -q "resumed from $W/B/step_00000003" "$W/last.out" || { cat "$W/last.out"; fail "B did not resume"; }
$CMP "$W/A/step_00000006" "$W/B/step_00000006" || fail "resume is not bit-exact"
losses "$W/A/metrics.jsonl" | tail -3 >"$W/a.loss"
losses "$W/B/metrics.jsonl" | tail -3 >"$W/b.loss"
cmp -s "$W/a.loss" "$W/b.loss" || fail "losses of steps 4-6 differ: $(paste "$W/a.loss" "$W/b.loss")"

rtrain "$W/C" "" 1 2 1 $common --micro-batch 2 --grad-accum 4 --ckpt-dir "$W/C" --resume "$W/B3/step_00000003" \
	|| { rc=$?; cat "$W/last.out"; fail "C (resume under 1,2,1): exited $rc"; }
$CMP "$W/C/step_00000006" "$W/A/step_00000006" 1e-4 || fail "resume under another layout differs"

# ckpt-verify and ckpt-list
"$LT" ckpt-verify "$W/A/step_00000006" >/dev/null || fail "ckpt-verify of a good checkpoint: exit $?"
"$LT" ckpt-list "$W/A" >"$W/list" || fail "ckpt-list: exit $?"
printf '6 %s\n3 %s\n' "$W/A/step_00000006" "$W/A/step_00000003" | cmp -s - "$W/list" \
	|| fail "ckpt-list printed: $(cat "$W/list")"
damage() { # name how want
	rm -rf "$W/X"; mkdir -p "$W/X"; cp -r "$W/A/step_00000006" "$W/X/"
	_s=$W/X/step_00000006
	case $2 in
	flip) printf '\377' | dd of="$_s/rank_00002.bin" bs=1 seek=100 conv=notrunc 2>/dev/null;;
	truncate) truncate -s 1000 "$_s/rank_00001.bin";;
	remove) rm "$_s/rank_00003.bin";;
	manifest) truncate -s 200 "$_s/manifest.json";;
	esac
	"$LT" ckpt-verify "$_s" >"$W/v.out" 2>"$W/v.err"; _rc=$?
	[ $_rc = 65 ] || fail "$1: ckpt-verify exit $_rc, want 65"
	[ "$(wc -l <"$W/v.err")" = 1 ] && grep -q "$3" "$W/v.err" || fail "$1: message: $(cat "$W/v.err")"
	echo "$1: $(cat "$W/v.err")"
	"$LT" ckpt-list "$W/X" >"$W/l.out" 2>"$W/l.err" || fail "$1: ckpt-list exit $?"
	[ ! -s "$W/l.out" ] && grep -q "step_00000006: invalid" "$W/l.err" || fail "$1: ckpt-list listed it"
}
damage checksum flip "wrong checksum"
damage size truncate "wrong size"
damage missing remove "missing shard"
damage manifest manifest "bad manifest"

# resuming from a damaged checkpoint: exit 89, nothing saved is touched
damage checksum2 flip "wrong checksum"
(cd "$W/X" && find . -type f | sort | xargs md5sum) >"$W/before"
rtrain "$W/X.unused" "" 2 1 2 $common --micro-batch 2 --grad-accum 2 --ckpt-dir "$W/X" --ckpt-interval 1; rc=$?
[ $rc = 89 ] || { cat "$W/last.out"; fail "resume from a damaged checkpoint: exit $rc, want 89"; }
grep -q "wrong checksum" "$W/last.out" || { cat "$W/last.out"; fail "no reason given"; }
(cd "$W/X" && find . -type f ! -path './heartbeat/*' ! -name metrics.jsonl | sort | xargs md5sum) >"$W/after"
grep -v -e ' ./heartbeat/' -e ' ./metrics.jsonl' "$W/before" | cmp -s - "$W/after" \
	|| fail "the failed run changed the checkpoint directory: $(diff "$W/before" "$W/after")"

# export, and never over an earlier export
"$LT" export "$W/A" "$W/E" >/dev/null || fail "export: exit $?"
[ -s "$W/E/model.safetensors" ] && [ -s "$W/E/config.json" ] || fail "export wrote $(ls "$W/E")"
"$LT" export "$W/A" "$W/E" 2>"$W/e.err"; rc=$?
[ $rc = 64 ] || fail "export over an earlier export: exit $rc, want 64"
echo PASS
