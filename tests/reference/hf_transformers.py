# hf_transformers.py: our Hugging Face files against Hugging Face's own
# code (transformers 4.46.3 from the venv of scripts/install-deps, on
# Debian's torch 1.13), both ways:
# - ours -> transformers: a model trained here for 2 steps on real text
#   (GPL-3) and exported (fp32 and bf16) loads with AutoModelForCausalLM
#   from config.json alone, with no missing, unexpected or mismatched
#   tensor; its logits on the training text equal ours (ckpt_export_drv's
#   logits.bin: fp32 rel <= 1e-5, bf16 weights <= 1e-2, the limits of
#   ckpt_export.py); greedy 48 tokens of `llm-train generate --hf` equal
#   transformers' greedy decode (its forward, argmax);
# - transformers -> ours: a LlamaForCausalLM written by save_pretrained
#   (safetensors, fp32 and bf16) imports with `llm-train import`; the
#   export gives back its tensors bit for bit; generate --ckpt on the
#   import and --hf on the directory equal transformers' greedy tokens.
# For configs/tiny.yaml (tied, MHA) and a GQA model with an untied head
# and rope_theta 5e5 (ref-gqa.yaml without QK-norm: Qwen3 needs a
# transformers that needs torch 2).
# Fails on the old code: nothing; it guards the export's names, the
# config.json fields and the RoPE/GQA layout against the library users load
# our files with (a broken rotate-half order reads as greedy tokens off
# after a few steps and logits rel ~1).
import json, os, struct, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refcli
refcli.need_venv('transformers')
import transformers
import torch
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
from refcli import expect, failures, finish, lt, top_builddir, top_srcdir
transformers.logging.set_verbosity_error()

DRV = os.path.join(top_builddir, 'tests', 'reference', 'ckpt_export_drv')
TEXT = '/usr/share/common-licenses/GPL-3'
PROMPT = 'This License applies to any'
N = 48
torch.set_num_threads(2)


def must(tag, rc, err):
    if rc:
        print('FAIL: %s: exit %d: %s' % (tag, rc, err.strip()))
        sys.exit(1)


def gen_ids(*args):
    rc, out, err = lt('generate', '--ids', '--prompt', PROMPT, '--max-new', str(N), *args)
    if rc:
        failures.append('generate %s: exit %d: %s' % (' '.join(args), rc, err.strip()))
        return []
    return [int(x) for x in out.split()]


def hf_load(path, tag):
    m, info = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    expect('%s loads with AutoModelForCausalLM (%s)' % (tag, type(m).__name__),
           not bad and type(m).__name__ == 'LlamaForCausalLM', str(bad) if bad else '')
    return m.eval()


def hf_greedy(m):
    """greedy tokens of transformers' forward (its generate() imports
    torch.distributed.fsdp, which Debian's torch 1.13 cannot on Python 3.11)"""
    ids, gap = list(PROMPT.encode()), float('inf')
    with torch.no_grad():
        for _ in range(N):
            lg = m(torch.tensor([ids])).logits[0, -1]
            top = torch.topk(lg, 2).values
            gap = min(gap, (top[0] - top[1]).item())
            ids.append(int(lg.argmax()))
    return ids[len(PROMPT.encode()):], gap


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def check_greedy(tag, m, ours):
    ref, gap = hf_greedy(m)
    same = sum(1 for a, b in zip(ours, ref) if a == b)
    expect('%s greedy == transformers greedy (%d tokens)' % (tag, N), ours == ref,
           '(%d/%d equal, smallest top-2 gap %.3g)' % (same, N, gap))
    expect('%s greedy text is varied' % tag, len(set(ours)) >= 8, '(%d distinct tokens)' % len(set(ours)))


def safetensors_raw(d):
    """name -> (dtype, shape, bytes) over every safetensors file in d"""
    out = {}
    for fn in sorted(os.listdir(d)):
        if fn.endswith('.safetensors'):
            data = open(os.path.join(d, fn), 'rb').read()
            (n,) = struct.unpack('<Q', data[:8])
            for k, e in json.loads(data[8:8 + n]).items():
                if k != '__metadata__':
                    b, f = e['data_offsets']
                    out[k] = (e['dtype'], e['shape'], data[8 + n + b:8 + n + f])
    return out


def config_yaml(src, dst, drop=(), wide=True):
    """src without the keys in drop; wide: init_std 0.2 (greedy text
    varied, top-2 gaps wide) and max_seq 128"""
    with open(dst, 'w') as f:
        for line in open(src):
            k = line.split(':')[0]
            if k not in drop:
                f.write({'init_std': 'init_std: 0.2\n', 'max_seq': 'max_seq: 128\n'}.get(k, line) if wide else line)


def ours_to_hf(W, tag, yml):
    """our export, fp32 and bf16, loaded by transformers (the logits
    at the config's own init_std, as ckpt_export.py)"""
    out = os.path.join(W, tag + '.drv')
    os.mkdir(out)
    r = subprocess.run([DRV, yml.replace('.yaml', '0.yaml'), TEXT, out], capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS='2'))
    must('%s: ckpt_export_drv' % tag, r.returncode, r.stderr)
    tok = torch.frombuffer(bytearray(open(os.path.join(out, 'tokens.bin'), 'rb').read()), dtype=torch.int32)
    ours = torch.frombuffer(bytearray(open(os.path.join(out, 'logits.bin'), 'rb').read()), dtype=torch.float32)
    for sub, lim in (('hf32', 1e-5), ('hf16', 1e-2)):
        m = hf_load(os.path.join(out, sub), '%s %s export' % (tag, sub))
        with torch.no_grad():
            lg = m(tok.long().view(1, -1)).logits[0]
        v = rel(lg, ours.view_as(lg))
        expect('%s %s export: logits rel %.3g (limit %.0e)' % (tag, sub, v, lim), v <= lim)
    # a trained model's greedy text (init_std 0.2: wide top-2 gaps)
    ck, hf = os.path.join(W, tag + '.ck'), os.path.join(W, tag + '.hf')
    must('%s: train' % tag, *lt('--model', yml, '--data', os.path.join(W, 'data'), '--steps', '2', '--seq', '64',
                                '--micro-batch', '2', '--lr', '1e-3', '--precision', 'fp32', '--ckpt-dir', ck,
                                '--quiet')[::2])
    must('%s: export' % tag, *lt('export', '--dtype', 'fp32', ck, hf)[::2])
    check_greedy('%s ours->HF' % tag, hf_load(hf, '%s trained export' % tag), gen_ids('--hf', hf))


def hf_to_ours(W, tag, cfg):
    """a transformers model written by save_pretrained, imported by us"""
    torch.manual_seed(5)
    m = LlamaForCausalLM(LlamaConfig(**cfg)).eval()
    for dt, name in ((torch.float32, 'fp32'), (torch.bfloat16, 'bf16')):
        hf, ck, back = (os.path.join(W, '%s.%s.%s' % (tag, name, s)) for s in ('hf', 'ck', 'back'))
        m.to(dt).save_pretrained(hf, safe_serialization=True)
        m.to(torch.float32)
        must('%s %s: import' % (tag, name), *lt('import', hf, ck)[::2])
        must('%s %s: export' % (tag, name), *lt('export', '--dtype', name, ck, back)[::2])
        a, b = safetensors_raw(hf), safetensors_raw(back)
        diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        expect('%s %s: import + export gives its tensors back bit for bit' % (tag, name), not diff,
               '(%d tensors differ: %s)' % (len(diff), ', '.join(diff[:3])) if diff else '(%d tensors)' % len(a))
        ref = hf_load(hf, '%s %s save_pretrained' % (tag, name))
        ours = gen_ids('--ckpt', ck)
        check_greedy('%s HF->ours %s' % (tag, name), ref, ours)
        expect('%s %s: generate --hf == --ckpt on the import' % (tag, name), gen_ids('--hf', hf) == ours)


with tempfile.TemporaryDirectory() as W:
    open(os.path.join(W, 't.txt'), 'w').write(open(TEXT).read())
    must('tokenize', *lt('tokenize', os.path.join(W, 't.txt'), os.path.join(W, 'data'))[::2])
    for wide in (True, False):
        sfx = '' if wide else '0'
        config_yaml(os.path.join(top_srcdir, 'configs', 'tiny.yaml'), os.path.join(W, 'tiny%s.yaml' % sfx),
                    wide=wide)
        config_yaml(os.path.join(top_srcdir, 'tests', 'reference', 'ref-gqa.yaml'),
                    os.path.join(W, 'gqa%s.yaml' % sfx), drop=('qk_norm',), wide=wide)
    base = dict(vocab_size=256, max_position_embeddings=128, rms_norm_eps=1e-5, initializer_range=0.2,
                hidden_act='silu', attention_bias=False, mlp_bias=False)
    hf_to_ours(W, 'llama-tied', dict(base, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=4, tie_word_embeddings=True))
    hf_to_ours(W, 'llama-gqa', dict(base, hidden_size=96, intermediate_size=176, num_hidden_layers=2,
                                    num_attention_heads=6, num_key_value_heads=2, tie_word_embeddings=False,
                                    rope_theta=500000.0))
    for tag in ('tiny', 'gqa'):
        ours_to_hf(W, tag, os.path.join(W, tag + '.yaml'))

finish()
