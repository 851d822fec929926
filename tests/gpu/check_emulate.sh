#!/bin/sh
# check_emulate.sh: tests/gpu/check, the device check, end to end over the
# emulated GPU (check --emulate) from a bundle made by tests/gpu/bundle, as
# the device machine will run it: exit 0; exactly results.md, results.json
# and logs.tar.gz in $OUT; the benchmark pairs (ours, then PyTorch with
# naive attention and SDPA, or a line saying why not; the fused attention
# against the chunked one) before the tests, no CPU-only test, the GPU
# tests passing, every part's log in the archive,
# the budget and caps recorded, a spent budget cutting every part; the
# stops, one line each: no bundle, a bundle of other sources, caps over
# the plan; no bundle of a build for this CPU only (--with-march); never
# apt-get. No timing threshold: the run's caps are x20 (a loaded machine
# stays inside them). The old check (15 files, tests first, install-deps
# without a bundle) fails it.
# SKIP (77) without CUDA in the build (the emulation needs its headers) or
# without bible-kjv (the bundle's corpus).
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
here=$top_srcdir/tests/gpu
[ -x "$top_builddir/tests/gpu/gpu_test_emu" ] ||
	{ echo "SKIP: built without CUDA (configure found no CUDA + NCCL)"; exit 77; }
command -v bible >/dev/null 2>&1 || { echo "SKIP: bible-kjv is not installed"; exit 77; }
W=$(mktemp -d "${TMPDIR:-/tmp}/check_emulate.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

grep -Eq 'apt-get|install-deps' "$here/check" && fail "check installs packages"

# ---- the stops: one line each, exit 1, the line in results.md ----------------
# onestop NAME PATTERN: the last run printed one line matching PATTERN
onestop() {
	[ "$rc" = 1 ] || fail "$1: exit $rc, not 1"
	[ "$(wc -l < "$W/stop.out")" = 1 ] || fail "$1: $(wc -l < "$W/stop.out") lines, not one: $(cat "$W/stop.out")"
	grep -q "$2" "$W/stop.out" || fail "$1: '$(cat "$W/stop.out")' does not say '$2'"
	cmp -s "$W/stop.out" "$W/o1/results.md" || fail "$1: results.md is not the line"
	[ $fails = 0 ] && ok "$1: $(cat "$W/stop.out")"
}
GPU_CHECK_BUNDLE=$W/none OUT=$W/o1 sh "$here/check" --emulate > "$W/stop.out" 2>&1
rc=$?
onestop "no bundle" "no $W/none: run tests/gpu/bundle"
mkdir -p "$W/fake"
echo 0000000000000000000000000000000000000000000000000000000000000000  tests/gpu/check > "$W/fake/sources.sha256"
(cd "$top_srcdir" && git rev-parse HEAD 2>/dev/null || echo unknown) > "$W/fake/commit"
tar -czf "$W/fake.tar.gz" -C "$W/fake" .
GPU_CHECK_BUNDLE=$W/fake.tar.gz OUT=$W/o1 sh "$here/check" --emulate > "$W/stop.out" 2>&1
rc=$?
onestop "bundle of other sources" "built from other sources.*first tests/gpu/check"
{ cat "$here/check.list"; echo 'test gpu_ref.py 1'; } > "$W/over.list"   # one second over
GPU_CHECK_LIST=$W/over.list OUT=$W/o1 sh "$here/check" --emulate > "$W/stop.out" 2>&1
rc=$?
onestop "caps over the plan" "add up to 271s, over the 270s plan of the 300s budget"

# the bundle refuses host code built for this CPU only
mkdir -p "$W/march"
printf '#define LLMT_HAVE_CUDA 1\n#define LLMT_MARCH "native"\n' > "$W/march/config.h"
if GPU_BUNDLE_OUT=$W/b0 GPU_BUNDLE_MAKE=0 sh "$here/bundle" "$W/march" > "$W/march.out" 2>&1 ||
	! grep -q 'configured --with-march=native' "$W/march.out"; then
	fail "bundle of a --with-march=native build: $(cat "$W/march.out")"
else
	ok "no bundle of a --with-march build: $(cat "$W/march.out")"
fi

# ---- the whole run ---------------------------------------------------------------
GPU_BUNDLE_OUT=$W/b GPU_BUNDLE_MAKE=0 sh "$here/bundle" "$top_builddir" > "$W/bundle.out" 2>&1 ||
	{ cat "$W/bundle.out"; fail "tests/gpu/bundle failed"; exit 1; }
# caps x20: no timing threshold on a loaded machine (the caps themselves
# are checked by the plan above, their cut by the run with none left below)
GPU_CHECK_EMU_SCALE=20 GPU_CHECK_BUNDLE=$W/b/bundle.tar.gz OUT=$W/out sh "$here/check" --emulate \
	> "$W/check.out" 2>&1
rc=$?
[ $rc = 0 ] || { tail -n 30 "$W/check.out"; fail "check --emulate exited $rc"; }
files=$(cd "$W/out" && ls | tr '\n' ' ')
[ "$files" = "logs.tar.gz results.json results.md " ] || fail "files in \$OUT: $files"
md=$W/out/results.md js=$W/out/results.json
# pairs first: three of ours then PyTorch's two attentions, then the fused
# attention against the chunked one
awk '/^## Benchmark pairs/ {p = NR} /^## Tests/ {t = NR} END {exit !(p && t && p < t)}' "$md" ||
	fail "the benchmark pairs do not come before the tests"
[ "$(grep -c '^### emu.yaml B=2 T=32, 2 steps: ours | torch' "$md")" = 3 ] || fail "not three pairs"
[ "$(grep -c '^bench .*tokens/s' "$md")" = 3 ] || fail "not three lines of ours"
[ "$(grep -c '^### emu.yaml B=2 T=32, 2 steps: fused | chunked' "$md")" = 1 ] || fail "no attention pair"
for a in fused chunked; do
	[ "$(grep -c "^bench-$a .*tokens/s" "$md")" = 1 ] || fail "no line of the $a attention"
done
if grep -q '^PyTorch: not run' "$md"; then
	ok "PyTorch not here, said so: $(grep -m1 '^PyTorch: not run' "$md")"
else
	[ "$(grep -c '^torch .*naive attention.*tokens/s' "$md")" = 3 ] || fail "not three naive-attention lines"
	[ "$(grep -c '^torch .*SDPA is_causal.*: \(not measured\|out of memory\|[0-9]* tokens/s\)' "$md")" = 3 ] ||
		fail "not three SDPA lines"
fi
grep -Eq 'test_gplan|test_gpu_emu' "$md" && fail "a CPU-only test ran"
for t in gpu_compare gpu_ref gpu_nccl; do
	grep -q "^- $t: PASS" "$md" || fail "$t: $(grep "^- $t" "$md")"
done
grep -q '^- gpu_train: not run in --emulate: ' "$md" || fail "gpu_train's skip is not said"
grep -q '^bench-loop emu.yaml B=2 T=32: [0-9]* tokens/s.* of gpu_test bench' "$md" || fail "no loop line"
# results.json: the budget, the plan, every part once
grep -q '"budget_s": 300, "plan_s": 270, "scale": 20,' "$js" || fail "results.json: no budget"
[ "$(grep -c '"kind": "pair"' "$js")" = 8 ] || fail "results.json: not 8 pair sides"
[ "$(grep -c '"kind": "test"' "$js")" = 4 ] || fail "results.json: not 4 tests"
[ "$(grep -c '"kind": "loop"' "$js")" = 1 ] || fail "results.json: no loop"
grep -q '"failures": 0, "stopped": "",' "$js" || fail "results.json: failures or a stop"
# every part's log in the archive
tar -tzf "$W/out/logs.tar.gz" > "$W/logs.list" || fail "logs.tar.gz does not unpack"
for l in ours-emu-gpu-124m.yaml torch-emu-gpu-1.5b.yaml fused-emu-gpu-124m.yaml \
	chunked-emu-gpu-124m.yaml gpu_compare gpu_ref gpu_nccl \
	loop-emu-gpu-124m.yaml probe; do
	grep -qx "logs/$l.log" "$W/logs.list" || fail "logs.tar.gz has no logs/$l.log"
done
[ $fails = 0 ] || { echo "--- results.md:"; cat "$md"; exit 1; }

# ---- a budget already spent: every part is cut, said so, the files written ------
GPU_CHECK_EMU_SCALE=0 GPU_CHECK_BUNDLE=$W/b/bundle.tar.gz OUT=$W/out0 sh "$here/check" --emulate \
	> "$W/check0.out" 2>&1
rc=$?
[ $rc = 0 ] || fail "check with no budget left exited $rc"
[ "$(cd "$W/out0" && ls | tr '\n' ' ')" = "logs.tar.gz results.json results.md " ] ||
	fail "no budget: files $(ls "$W/out0")"
grep -Eq '"verdict": "(PASS|FAIL)' "$W/out0/results.json" && fail "no budget: a part ran"
n0=$(grep -c '"verdict": "not run (budget spent)"' "$W/out0/results.json")
[ "$n0" -ge 7 ] || fail "no budget: only $n0 parts said the budget was spent"
[ $fails = 0 ] || { cat "$W/check0.out"; exit 1; }
ok "no budget left: $n0 parts not run, said so"

echo "PASS: check --emulate: $(grep '^Total' "$md")"
