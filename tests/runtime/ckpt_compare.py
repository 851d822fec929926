# ckpt_compare.py A B [TOL]: compare two checkpoints tensor by tensor,
# read by a second, independent reader of the format (manifest.json +
# pieces), whatever layouts they were saved under. Every kind (master,
# adam_m, adam_v, ...) and every logical tensor must be present in both;
# TOL 0 (default) means bit-identical, else max |a-b| / max |b| <= TOL;
# TOL may be per kind: master=2e-3,adam_m=2e-4 (a kind not named: 0).
# Exit 0 same, 1 different.
import json, os, sys
import numpy as np

DT = {'f32': np.float32, 'bf16': np.uint16}


def load(d):
    m = json.load(open(os.path.join(d, 'manifest.json')))
    files = [open(os.path.join(d, f['name']), 'rb').read() for f in m['files']]
    out = {}
    for t, k, f, off, r0, nr, c0, nc in m['pieces']:
        tn, kind = m['tensors'][t], m['kinds'][k]
        shape = tn['shape'] + ([1] if len(tn['shape']) == 1 else [])
        key = (kind['name'], tn['name'])
        if key not in out:
            out[key] = np.full(shape, np.nan, dtype=np.float32)
        dt = DT[kind['dtype']]
        a = np.frombuffer(files[f], dtype=dt, count=nr * nc, offset=off).reshape(nr, nc)
        if dt == np.uint16:
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[key][r0:r0 + nr, c0:c0 + nc] = a
    return m, out


ma, a = load(sys.argv[1])
mb, b = load(sys.argv[2])
arg = sys.argv[3] if len(sys.argv) > 3 else '0'
if '=' in arg:
    tols = {k: float(v) for k, v in (kv.split('=') for kv in arg.split(','))}
    tolof = lambda kind: tols.get(kind, 0.0)
else:
    tolof = lambda kind, t=float(arg): t
bad = []
if set(a) != set(b):
    bad.append('different tensors: %s' % sorted(set(a) ^ set(b)))
worst = {}
for key in sorted(set(a) & set(b)):
    x, y = a[key], b[key]
    if np.isnan(x).any() or np.isnan(y).any():
        bad.append('%s %s: not fully covered' % key)
        continue
    tol = tolof(key[0])
    if tol == 0:
        if x.tobytes() != y.tobytes():
            bad.append('%s %s: not bit-identical (max diff %.3g)' % (key + (np.abs(x - y).max(),)))
    else:
        r = float(np.abs(x - y).max() / max(np.abs(y).max(), 1e-30))
        worst[key[0]] = max(worst.get(key[0], 0), r)
        if r > tol:
            bad.append('%s %s: relative difference %.3g > %g' % (key + (r, tol)))
lay = lambda m: '%(tp)d/%(pp)d/%(dp)d' % m['layout']
print('%s (tp/pp/dp %s, step %d) vs %s (%s, step %d): %d tensors%s' % (
    sys.argv[1], lay(ma), ma['step'], sys.argv[2], lay(mb), mb['step'], len(a),
    ''.join(', %s worst %.2e' % kv for kv in sorted(worst.items()))))
if bad:
    print('DIFFERENT:\n  ' + '\n  '.join(bad[:10]))
    sys.exit(1)
print('same' if arg in ('0', '0.0') else 'within %s' % arg)
