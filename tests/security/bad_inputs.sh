#!/bin/bash
# Hostile and malformed inputs through the real commands (llm-train-plan
# shares the plugin's parsers: sbatch/srun print the same line prefixed
# "llm_train:" and exit 1; llm-train and its ckpt-verify/import): each must
# give its exit code and one line naming the bad value. Prints one
# markdown table row per case (tests/security/README.md holds the table).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
plan=$top_builddir/spank/llm-train-plan
lt=$top_builddir/runtime/llm-train
# Under scripts/sanitize-check: llm-train leaves MPI and oneDNN state behind
# when it exits on a usage error; memory errors are still caught.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
d=$(mktemp -d /tmp/llmt-bad.XXXXXX) || exit 1
trap 'rm -rf "$d"' EXIT
fail=0 n=0
row() {  # row INPUT-DESCRIPTION WANT-RC PATTERN CMD...
	desc=$1 want=$2 pat=$3; shift 3
	out=$(timeout 60 "$@" 2>&1); rc=$?
	line=$(grep -m1 -E -- "$pat" <<<"$out")
	nl=$(grep -v -E '^(-+|MPI_ABORT.*|with errorcode.*|NOTE: invoking MPI_ABORT.*|You may or may not.*|exactly when Open MPI.*|)$' <<<"$out" | grep -c .)
	n=$((n + 1))
	if [ "$rc" = "$want" ] && [ -n "$line" ]; then
		line=${line//$d\//}
		echo "| $desc | $rc | \`${line:0:150}\` |"
	else
		echo "FAIL: $desc: exit $rc (want $want), /$pat/ not in: $out"; fail=1
	fi
	[ "$nl" -le 3 ] || { echo "FAIL: $desc: $nl lines of output (want one line): $out"; fail=1; }
}
P=("$plan" --no-policy --nodes 'n[1-2]' --tasks-per-node 2 --layout)
echo "| input | exit | message |"
echo "|---|---|---|"
# ---- --llm-train options (same core as the plugin) ----
row "option tp=0" 64 "tp" "${P[@]}" tp=0
row "option tp=2^64 (overflow)" 64 "18446744073709551616" "${P[@]}" tp=18446744073709551616
row "option pp=two" 64 "two" "${P[@]}" pp=two
row "option unknown key bogus=1" 64 "bogus" "${P[@]}" tp=1,bogus=1
row "option ckpt-dir relative" 64 "relative" "${P[@]}" ckpt-dir=relative/run
row "option ckpt-dir with .." 64 '\.\.' "${P[@]}" ckpt-dir=/scratch/../etc
row "option ckpt-dir with a control character" 64 "control|ckpt" "${P[@]}" $'ckpt-dir=/scratch/a\tb'
row "option restarts=-1" 64 "restarts" "${P[@]}" restarts=-1
row "option ckpt-interval=5x" 64 "5x" "${P[@]}" ckpt-interval=5x
row "option SPEC of 5000 bytes" 64 "4096|long" "${P[@]}" "tp=1,ckpt-dir=/$(printf 'a%.0s' $(seq 5000))"
row "option layout tp=3 on 4 tasks" 64 "tp" "${P[@]}" tp=3,pp=1,dp=1
row "option nccl profile unknown to the policy" 64 "nope" "${P[@]}" nccl=nope
row "node list n[1- (malformed)" 64 "n\[1-" "$plan" --no-policy --nodes 'n[1-' --layout tp=1
row "node list of 10^7 hosts" 64 "bad hostlist" "$plan" --no-policy --nodes 'n[1-10000000]' --layout tp=1
# ---- llm-train-plan --auto (its figures: exit 64 like every other bad value) ----
A=("$plan" --auto --model "$top_srcdir/configs/tiny.yaml" --nodes 1 --tasks-per-node 1 --mem-per-rank 4)
row "planner --gflops 1e308 (above its 1e9)" 64 "gflops 1e308: want a positive number up to 1000000000" "${A[@]}" --gflops 1e308
row "planner --intra-gbps 0.0001" 64 "intra-gbps 0.0001: below 0.001" "${A[@]}" --intra-gbps 0.0001
# ---- admin policy ----
pol() { printf '%b' "$2" >"$d/$1"; chmod 644 "$d/$1"; }
pol unknown.yaml 'defaults:\n  tp: 1\n  colour: red\n'
row "policy: unknown key" 64 "colour" "$plan" --policy "$d/unknown.yaml" --nodes n1 --layout tp=1
pol dup.yaml 'defaults:\n  tp: 1\n  tp: 2\n'
row "policy: duplicate key" 64 "tp" "$plan" --policy "$d/dup.yaml" --nodes n1 --layout tp=1
pol alias.yaml 'limits:\n  ckpt_roots: &a [/a, /a, /a, /a, /a, /a, /a, /a]\nnode_types:\n  - name: x\n    nodes: *a\n'
row "policy: YAML alias expansion (billion laughs)" 64 "alias|a:|unknown|key" "$plan" --policy "$d/alias.yaml" --nodes n1 --layout tp=1
pol neg.yaml 'defaults:\n  tp: -1\n'
row "policy: tp: -1" 64 "-1" "$plan" --policy "$d/neg.yaml" --nodes n1 --layout tp=1
pol ld.yaml 'nccl_profiles:\n  ib:\n    LD_PRELOAD: /tmp/evil.so\n'
row "policy: profile variable LD_PRELOAD (not NCCL_*)" 64 "LD_PRELOAD" "$plan" --policy "$d/ld.yaml" --nodes n1 --layout tp=1
pol subst.yaml 'nccl_profiles:\n  ib:\n    NCCL_IB_HCA: "${HOME}"\n'
row "policy: NCCL value with unknown \${HOME}" 64 "HOME" "$plan" --policy "$d/subst.yaml" --nodes n1 --layout tp=1
head -c 2000000 /dev/zero | tr '\0' '#' >"$d/big.yaml"
row "policy: 2 MB file" 64 "1 MiB|large" "$plan" --policy "$d/big.yaml" --nodes n1 --layout tp=1
head -c 3000 /dev/urandom >"$d/bin.yaml"
row "policy: 3000 random bytes" 64 "bin.yaml" "$plan" --policy "$d/bin.yaml" --nodes n1 --layout tp=1
# ---- topology.conf ----
printf 'SwitchName=a Switches=b\nSwitchName=b Switches=a\n' >"$d/cycle.conf"
row "topology: switch cycle" 64 "cycle" "$plan" --no-policy --topology "$d/cycle.conf" --nodes n1 --layout tp=1
printf 'SwitchName=a Nodes=n1\nSwitchName=b Nodes=n1\n' >"$d/twice.conf"
row "topology: node under two leaves" 64 "n1" "$plan" --no-policy --topology "$d/twice.conf" --nodes n1 --layout tp=1
printf 'SwitchName=a Nodes=n[1-999999999]\n' >"$d/huge.conf"
row "topology: Nodes=n[1-999999999]" 64 "n\[1-999999999\]|too many" "$plan" --no-policy --topology "$d/huge.conf" --nodes n1 --layout tp=1
# ---- model config (llm-train --model) ----
mkdir -p "$d/data"
/usr/bin/python3 - "$d/data/good.bin" <<'PY'
import struct, sys
h = [0] * 256; h[0] = 20240520; h[1] = 1; h[2] = 4096
open(sys.argv[1], 'wb').write(struct.pack('<256i', *h) + struct.pack('<4096H', *([65] * 4096)))
PY
cfg() { printf '%b' "$2" >"$d/$1"; }
base='vocab_size: 256\nd_model: 64\nn_layers: 1\nn_heads: 2\nd_ff: 128\nmax_seq: 32\n'
cfg c_unknown.yaml "${base}colour: red\n"
row "model config: unknown key" 64 "colour" "$lt" --model "$d/c_unknown.yaml" --data "$d/data" --steps 1
cfg c_huge.yaml "${base/d_model: 64/d_model: 1e99}"
row "model config: d_model: 1e99" 64 "d_model" "$lt" --model "$d/c_huge.yaml" --data "$d/data" --steps 1
cfg c_heads.yaml "${base/n_heads: 2/n_heads: 3}"
row "model config: n_heads does not divide d_model" 64 "n_heads|head" "$lt" --model "$d/c_heads.yaml" --data "$d/data" --steps 1
cfg c_list.yaml '- 1\n- 2\n'
row "model config: a list, not a mapping" 64 "c_list.yaml" "$lt" --model "$d/c_list.yaml" --data "$d/data" --steps 1
row "model config: missing file" 66 "c_missing.yaml: cannot open" "$lt" --model "$d/c_missing.yaml" --data "$d/data" --steps 1
# ---- token shards (llm-train --data) ----
cfg ok.yaml "$base"
shard() {  # shard NAME MAGIC VERSION COUNT NTOK TOKEN
	mkdir -p "$d/$1" && /usr/bin/python3 - "$d/$1/s.bin" "$2" "$3" "$4" "$5" "$6" <<'PY'
import struct, sys
p, magic, ver, cnt, ntok, tok = sys.argv[1], *map(int, sys.argv[2:])
h = [0] * 256; h[0] = magic; h[1] = ver; h[2] = cnt
open(p, 'wb').write(struct.pack('<256i', *h) + struct.pack('<%dH' % ntok, *([tok] * ntok)))
PY
}
shard magic 12345 1 4096 4096 65
row "token shard: bad magic" 65 "magic" "$lt" --model "$d/ok.yaml" --data "$d/magic" --steps 1 --seq 16
shard trunc 20240520 1 100000 4096 65
row "token shard: header count > file" 65 "truncated" "$lt" --model "$d/ok.yaml" --data "$d/trunc" --steps 1 --seq 16
shard negc 20240520 1 -5 4096 65
row "token shard: negative count" 65 "negative" "$lt" --model "$d/ok.yaml" --data "$d/negc" --steps 1 --seq 16
shard vocab 20240520 1 4096 4096 60000
row "token shard: token >= vocab" 65 "60000|vocab" "$lt" --model "$d/ok.yaml" --data "$d/vocab" --steps 1 --micro-batch 1 --seq 16 --quiet
# ---- checkpoints (llm-train ckpt-verify) ----
mkck() {  # mkck NAME SRC EDIT
	mkdir -p "$d/$1" && /usr/bin/python3 - "$2" "$d/$1" "$3" <<'PY'
import ctypes, json, sys
src, out, edit = sys.argv[1:4]
s = open(src, 'rb').read()
man, b = s.split(b'\n%%\n', 1)
try:
    m = json.loads(man)
except Exception:
    m = None
if m is not None:
    exec(edit)
    man = json.dumps(m).encode()
if b'@' * 16 in man:   # the real checksum, so only the edit is wrong
    x = ctypes.CDLL('libxxhash.so.0')
    x.XXH3_64bits.restype = ctypes.c_uint64
    h = '%016x' % x.XXH3_64bits(b, ctypes.c_size_t(len(b)))
    man = man.replace(b'@' * 16, h.encode())
open(out + '/manifest.json', 'wb').write(man)
open(out + '/rank_00000.bin', 'wb').write(b)
PY
}
C=$top_srcdir/tests/security/corpus/ckpt/valid
R=$top_srcdir/tests/security/regress/ckpt
mkck ck_good "$C" "pass"
row "checkpoint: valid (reference)" 0 "valid checkpoint" "$lt" ckpt-verify "$d/ck_good"
mkdir -p "$d/ck_none"
row "checkpoint: no manifest" 65 "missing manifest" "$lt" ckpt-verify "$d/ck_none"
mkck ck_layout "$R/layout-int-overflow" "pass"
row "checkpoint: tp=pp=65536 (int overflow)" 65 "layout" "$lt" ckpt-verify "$d/ck_layout"
mkck ck_r0 "$R/piece-r0-overflow" "pass"
row "checkpoint: piece r0+nr past 2^63" 65 "outside" "$lt" ckpt-verify "$d/ck_r0"
mkck ck_wrap "$R/piece-bytes-wrap" "pass"
row "checkpoint: 2^31 x 2^31 tensor (byte count wraps)" 65 "shape" "$lt" ckpt-verify "$d/ck_wrap"
mkck ck_off "$R/piece-offset-past-file" "pass"
row "checkpoint: piece offset 2^63-1" 65 "beyond the end" "$lt" ckpt-verify "$d/ck_off"
mkck ck_trav "$C" "m['files'][0]['name'] = '../../etc/shadow'"
row "checkpoint: shard name ../../etc/shadow" 65 "files\[0\]" "$lt" ckpt-verify "$d/ck_trav"
mkck ck_size "$C" "m['files'][0]['size'] += 4"
row "checkpoint: shard size differs" 65 "wrong size|beyond|size" "$lt" ckpt-verify "$d/ck_size"
mkck ck_sum "$C" "m['files'][0]['xxh3'] = '0123456789abcdef'"
row "checkpoint: checksum mismatch" 65 "checksum|xxh3" "$lt" ckpt-verify "$d/ck_sum"
mkck ck_dup "$C" "m['tensors'][1]['name'] = 'a.weight'"
row "checkpoint: tensor listed twice" 65 "twice" "$lt" ckpt-verify "$d/ck_dup"
mkck ck_json "$C" "pass"; printf '{"format": "llmt-ckpt", "version": 1, "step": 1, "step": 2}' >"$d/ck_json/manifest.json"
row "checkpoint: duplicate JSON key" 65 "duplicate|bad manifest" "$lt" ckpt-verify "$d/ck_json"
# ---- safetensors (llm-train import HFDIR CKPT_DIR) ----
st() {  # st NAME REGRESS-FILE
	mkdir -p "$d/$1" && cp "$2" "$d/$1/model.safetensors"
	printf '{"model_type": "llama", "vocab_size": 8, "hidden_size": 4, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 8, "max_position_embeddings": 16}' >"$d/$1/config.json"
}
st st_shape "$top_srcdir/tests/security/regress/safetensors/shape-area-overflow"
row "safetensors: 2^40 x 2^40 tensor" 65 "shape|data_offsets" "$lt" import "$d/st_shape" "$d/st_out1"
st st_off "$top_srcdir/tests/security/regress/safetensors/negative-end-offset"
row "safetensors: end offset -2^63" 65 "shape|data_offsets" "$lt" import "$d/st_off" "$d/st_out2"
st st_hlen /dev/null; printf '\xff\xff\xff\xff\xff\xff\xff\x7f{}' >"$d/st_hlen/model.safetensors"
row "safetensors: header length 2^63" 65 "header" "$lt" import "$d/st_hlen" "$d/st_out3"
echo "($n cases)"
exit $fail
