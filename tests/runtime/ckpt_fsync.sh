#!/bin/sh
# tests/runtime/ckpt_fsync.sh: a checkpoint is durable before it is named.
# One llm-train step with a checkpoint under strace: every file renamed
# into place (manifest.json, rank done records, latest) was fsynced before
# its rename; every file of the step directory was fsynced, and the
# directory itself, before the directory is renamed to step_N; each
# rename is followed by an fsync of the directory that holds the new name.
# Fails on the old code with the fsync before the manifest's rename
# removed (tests/mutants/run: ckpt-no-fsync).
set -u
LT=${top_builddir:?}/runtime/llm-train
[ -x "$LT" ] || { echo "FAIL: $LT not built"; exit 1; }
command -v strace >/dev/null || { echo "SKIP: strace not installed"; exit 77; }
w=$(mktemp -d /tmp/llmt-fsync.XXXXXX) || exit 1
trap 'rm -rf "$w"' EXIT
mkdir "$w/data" && /usr/bin/python3 - "$w/data/a.bin" <<'PY' || exit 1
import struct, sys
h = [0] * 256; h[0] = 20240520; h[1] = 1; h[2] = 4096
open(sys.argv[1], 'wb').write(struct.pack('<256i', *h) + struct.pack('<4096H', *([65] * 4096)))
PY
printf 'vocab_size: 256\nd_model: 64\nn_layers: 1\nn_heads: 2\nd_ff: 128\nmax_seq: 32\n' >"$w/m.yaml"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 \
	strace -f -y -qq -e trace=fsync,fdatasync,rename,renameat,renameat2 -o "$w/trace" \
	"$LT" --model "$w/m.yaml" --data "$w/data" --steps 1 --seq 16 --micro-batch 1 \
	--ckpt-dir "$w/ck" --quiet >"$w/out" 2>&1 || { cat "$w/out"; echo "FAIL: llm-train exited $?"; exit 1; }
/usr/bin/python3 - "$w/trace" "$w/ck" <<'PY'
import os, re, sys
trace, ck = sys.argv[1], sys.argv[2]
synced, renamed, bad, names = set(), {}, [], 0
ev = []
for line in open(trace):
    m = re.search(r'\b(fsync|fdatasync)\(\d+<([^>]*)>\) = 0', line)
    if m:
        ev.append(('sync', m.group(2)))
        continue
    m = re.search(r'\brename(?:at2?)?\((?:[^,]*, )?"([^"]*)", (?:[^,]*, )?"([^"]*)"', line)
    if m and m.group(1).startswith(ck) and '/heartbeat/' not in m.group(1):
        ev.append(('rename', m.group(1), m.group(2)))
pending = []   # directories whose fsync must follow a rename
for e in ev:
    if e[0] == 'sync':
        synced.add(e[1])
        pending = [d for d in pending if d != e[1]]
        continue
    _, src, dst = e
    for d in pending:
        bad.append('no fsync of %s after a rename into it' % d)
    pending = []
    names += 1
    if src in synced and not os.path.isdir(dst):
        pass
    elif os.path.isdir(dst):
        if src not in synced:
            bad.append('%s renamed to %s before the directory was fsynced' % (src, dst))
        for f in sorted(os.listdir(dst)):
            p = os.path.join(src, f)
            if p not in synced and not (p in renamed and renamed[p] in synced):
                bad.append('%s not fsynced before %s was renamed to %s' % (f, src, dst))
    else:
        bad.append('%s renamed to %s before it was fsynced' % (src, dst))
    renamed[dst] = src
    pending.append(os.path.dirname(dst))
for d in pending:
    bad.append('no fsync of %s after a rename into it' % d)
if not names or not any(os.path.isdir(d) and os.path.basename(d).startswith('step_') for d in renamed):
    bad.append('no checkpoint rename seen in the trace')
if bad:
    print('FAIL: ' + '\n  '.join(bad))
    sys.exit(1)
print('ok: %d renames in the checkpoint dir, each after the fsyncs it needs and followed by its directory\'s' % names)
PY
