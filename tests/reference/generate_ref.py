# generate_ref.py: `llm-train generate` against PyTorch. For tiny.yaml and
# ref-gqa.yaml (GQA, QK-norm, untied head), with init_std 0.2 (so greedy
# text is varied, not one repeated byte, and top-1/top-2 logit gaps are
# wide) and max_seq 128, a model trained here for 2 steps on real text
# (GPL-3) is exported; then
# - greedy: 64 new tokens from --hf EXPORT equal, token for token, a
#   PyTorch greedy decode of the same export (llama_ref.forward over the
#   whole sequence each step, fp32); the smallest top-1/top-2 logit gap on
#   the way is printed (how close a tie came);
# - --ckpt (the checkpoint itself) gives the same tokens as --hf;
# - the KV-cache path equals a no-cache recompute through the training
#   model (--no-cache) token for token;
# - sampling: the same seed gives the same tokens, another seed others;
#   top-p 1e-9 is greedy; --eos ID stops before the first ID;
# - bad input: --max-new past max_position_embeddings, an empty prompt,
#   neither --ckpt nor --hf, both: exit 64.
import os, sys, tempfile
import torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_ref
from refcli import expect, failures, finish, lt, top_srcdir

CONFIGS = [os.path.join(top_srcdir, 'configs', 'tiny.yaml'),
           os.path.join(top_srcdir, 'tests', 'reference', 'ref-gqa.yaml')]
PROMPT = 'This License applies to any'
N = 64
torch.set_num_threads(2)


def gen_ids(*args):
    rc, out, err = lt('generate', '--ids', '--prompt', PROMPT, *args)
    if rc != 0:
        failures.append('generate %s: exit %d: %s' % (' '.join(args), rc, err.strip()))
        return []
    return [int(x) for x in out.split()]


def torch_greedy(hf, n):
    cfg = llama_ref.config_from_hf(os.path.join(hf, 'config.json'))
    P = llama_ref.load_safetensors(os.path.join(hf, 'model.safetensors'))
    ids = list(PROMPT.encode())
    gap = float('inf')
    with torch.no_grad():
        for _ in range(n):
            tok = torch.tensor([ids])
            lg, _ = llama_ref.forward(cfg, P, tok, tok)
            top = torch.topk(lg[0, -1], 2).values
            gap = min(gap, (top[0] - top[1]).item())
            ids.append(int(lg[0, -1].argmax()))
    return ids[len(PROMPT.encode()):], gap


with tempfile.TemporaryDirectory() as W:
    open(os.path.join(W, 't.txt'), 'w').write(open('/usr/share/common-licenses/GPL-3').read())
    rc, _, err = lt('tokenize', os.path.join(W, 't.txt'), os.path.join(W, 'data'))
    if rc:
        print('FAIL: tokenize: %s' % err)
        sys.exit(1)
    for cfgpath in CONFIGS:
        tag = os.path.basename(cfgpath)
        ck, hf = os.path.join(W, tag + '.ck'), os.path.join(W, tag + '.hf')
        yml = os.path.join(W, tag)
        with open(yml, 'w') as f:
            for line in open(cfgpath):
                k = line.split(':')[0]
                f.write({'init_std': 'init_std: 0.2\n', 'max_seq': 'max_seq: 128\n'}.get(k, line))
        rc, _, err = lt('--model', yml, '--data', os.path.join(W, 'data'), '--steps', '2', '--seq', '64',
                        '--micro-batch', '2', '--lr', '1e-3', '--precision', 'fp32', '--ckpt-dir', ck, '--quiet')
        if rc == 0:
            rc, _, err = lt('export', '--dtype', 'fp32', ck, hf)
        if rc:
            print('FAIL: %s: train/export: %s' % (tag, err))
            sys.exit(1)
        ours = gen_ids('--hf', hf, '--max-new', str(N))
        ref, gap = torch_greedy(hf, N)
        same = sum(1 for a, b in zip(ours, ref) if a == b) if len(ours) == N else 0
        expect('%s greedy == PyTorch greedy (%d tokens)' % (tag, N), ours == ref,
               '(%d/%d equal, smallest top-2 gap %.3g)' % (same, N, gap))
        print('   ours: %r' % bytes(ours).decode('latin-1'))
        expect('%s greedy text is varied' % tag, len(set(ours)) >= 8, '(%d distinct tokens)' % len(set(ours)))
        expect('%s --ckpt == --hf' % tag, gen_ids('--ckpt', ck, '--max-new', str(N)) == ours)
        expect('%s KV cache == no-cache recompute' % tag, gen_ids('--hf', hf, '--max-new', str(N), '--no-cache') == ours)
        s1 = gen_ids('--hf', hf, '--temperature', '1.0', '--top-p', '0.95', '--seed', '7')
        s2 = gen_ids('--hf', hf, '--temperature', '1.0', '--top-p', '0.95', '--seed', '7')
        s3 = gen_ids('--hf', hf, '--temperature', '1.0', '--top-p', '0.95', '--seed', '8')
        expect('%s sampling: same seed, same tokens' % tag, s1 == s2 and len(s1) == N)
        expect('%s sampling: other seed, other tokens' % tag, s1 != s3)
        expect('%s top-p 1e-9 is greedy' % tag,
               gen_ids('--hf', hf, '--temperature', '1.0', '--top-p', '1e-9', '--max-new', str(N)) == ours)
        stop = ours[4] if len(ours) > 4 else 0
        first = ours.index(stop) if stop in ours else len(ours)
        expect('%s --eos %d stops before it' % (tag, stop),
               gen_ids('--hf', hf, '--max-new', str(N), '--eos', str(stop)) == ours[:first])
        rc, out, err = lt('generate', '--hf', hf, '--prompt', PROMPT)
        expect('%s text output is the greedy bytes' % tag, rc == 0 and out.encode('latin-1') == bytes(ours) + b'\n')
    for tag, args in (('--max-new past max_seq', ['--hf', hf, '--prompt', 'x', '--max-new', '128']),
                      ('empty prompt', ['--hf', hf, '--prompt', '']),
                      ('neither --ckpt nor --hf', ['--prompt', 'x']),
                      ('both --ckpt and --hf', ['--hf', hf, '--ckpt', ck, '--prompt', 'x'])):
        rc, out, err = lt('generate', *args)
        expect('refused: %s' % tag, rc == 64 and len(err.strip().splitlines()) >= 1, '(exit %d: %s)' % (rc, err.strip().splitlines()[0] if err.strip() else ''))

finish()
