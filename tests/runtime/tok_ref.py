#!/usr/bin/python3
# tok_ref.py: the references for tests/runtime/tok_*.sh, libraries nobody
# here wrote: python3-sentencepiece (Debian) and Hugging Face tokenizers
# (PyPI, in the venv of scripts/install-deps).
#   tok_ref.py spm-check MODEL TEXT DIR...   the ids of each DIR's
#       train_*.bin shards == sp.encode(TEXT) (one encode, whole text)
#   tok_ref.py hf-train llama3|gpt2|qwen2 TEXT VOCAB OUT.json   a byte-level
#       BPE (qwen2: Qwen 2's pattern and NFC normalizer)
#   tok_ref.py nfc IN OUT   OUT = IN in Unicode NFC (what an NFC tokenizer
#       decodes back)
#   tok_ref.py hf-check TOKENIZER.json TEXT DIR...  ids == encode(TEXT)
#   tok_ref.py hf-widen IN.json OUT.json N   256 reserved special tokens
#       at ids N-256..N-1, as Llama 3's, after vocabulary entries no piece
#       can reach (they hold a raw space) (ids past 65,535: shard version 2)
#   tok_ref.py random SEED N OUT   N lines of seeded random text: letters,
#       digits, marks, spaces and emoji of many scripts (a stress text)
# A check prints "ok: N ids equal" and exits 0, or the first difference
# and exits 1.
import glob
import os
import struct
import sys

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
         r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def shard_ids(paths):
    ids = []
    for p in paths:
        with open(p, 'rb') as f:
            data = f.read()
        magic, version, n, vocab = struct.unpack('<4i', data[:16])
        assert magic == 20240520, p
        fmt = {1: 'H', 2: 'I'}[version]
        width = struct.calcsize(fmt)
        assert len(data) == 1024 + width * n, p
        ids.extend(struct.unpack('<%d%s' % (n, fmt), data[1024:]))
    return ids


def compare(ref, got, what):
    if ref == got:
        print('ok: %d ids equal (%s)' % (len(ref), what))
        return 0
    i = next((k for k in range(min(len(ref), len(got))) if ref[k] != got[k]), min(len(ref), len(got)))
    print('FAIL: %s: %d reference ids, %d ours; first difference at %d: reference %s, ours %s'
          % (what, len(ref), len(got), i, ref[max(0, i - 3):i + 5], got[max(0, i - 3):i + 5]))
    return 1


def hf_train(kind, text, vocab, out):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    specials = ['<|begin_of_text|>', '<|end_of_text|>']
    tok = Tokenizer(models.BPE(ignore_merges=(kind == 'llama3')))
    if kind in ('llama3', 'qwen2'):
        if kind == 'qwen2':
            tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3 if kind == 'llama3' else QWEN2), behavior='isolated'),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([text], trainer)
    tok.save(out)
    return 0


# (first, last) code point ranges drawn from: Latin, Greek, Cyrillic,
# Hebrew, Arabic, Devanagari, Thai, CJK, Hangul, combining marks, digits
# of several scripts, spaces, emoji and pictographs, astral letters
RANGES = [(0x20, 0x7e), (0x20, 0x7e), (0xa0, 0x24f), (0x300, 0x36f), (0x370, 0x3ff), (0x400, 0x4ff),
          (0x5d0, 0x5ea), (0x600, 0x6ff), (0x900, 0x97f), (0xe00, 0xe5b), (0x2000, 0x206f),
          (0x20a0, 0x20bf), (0x2100, 0x218b), (0x2460, 0x24ff), (0x3000, 0x303f), (0x3040, 0x30ff),
          (0x4e00, 0x9fff), (0xac00, 0xd7a3), (0xff01, 0xff65), (0x1d400, 0x1d7ff), (0x1f300, 0x1f64f),
          (0x1f900, 0x1f9ff), (0x20000, 0x2a6df), (0x30, 0x39), (0x660, 0x669), (0x966, 0x96f)]


def random_text(seed, n, out):
    import random
    import unicodedata
    rnd = random.Random(seed)
    with open(out, 'w', encoding='utf-8', newline='') as f:
        for _ in range(n):
            words = []
            for _ in range(rnd.randint(1, 12)):
                lo, hi = rnd.choice(RANGES)
                w = ''
                while len(w) < rnd.randint(1, 9):
                    c = chr(rnd.randint(lo, hi))
                    if unicodedata.category(c) not in ('Cn', 'Cs', 'Co'):
                        w += c
                words.append(w)
            f.write(rnd.choice([' ', '  ', '\t', '']).join(words) + rnd.choice(['\n', '\n', '\r\n', '\n\n', ' \n']))
    return 0


def hf_widen(src, out, n):
    import json
    with open(src, encoding='utf-8') as f:
        j = json.load(f)
    first = n - 256
    vocab = j['model']['vocab']
    for i in range(max(max(vocab.values()), max(a['id'] for a in j['added_tokens'])) + 1, first):
        vocab['unused %d' % i] = i
    for i in range(first, n):
        j['added_tokens'].append({'id': i, 'content': '<|reserved_special_token_%d|>' % (i - first),
                                  'single_word': False, 'lstrip': False, 'rstrip': False,
                                  'normalized': False, 'special': True})
    with open(out, 'w', encoding='utf-8') as f:
        json.dump(j, f, ensure_ascii=False)
    return 0


def main(argv):
    mode = argv[1]
    if mode == 'nfc':
        import unicodedata
        with open(argv[2], encoding='utf-8', newline='') as f, open(argv[3], 'w', encoding='utf-8', newline='') as g:
            g.write(unicodedata.normalize('NFC', f.read()))
        return 0
    if mode == 'hf-widen':
        return hf_widen(argv[2], argv[3], int(argv[4]))
    if mode == 'random':
        return random_text(int(argv[2]), int(argv[3]), argv[4])
    if mode == 'hf-train':
        return hf_train(argv[2], argv[3], int(argv[4]), argv[5])
    with open(argv[3], encoding='utf-8', newline='') as f:
        text = f.read()
    if mode == 'spm-check':
        import sentencepiece
        sp = sentencepiece.SentencePieceProcessor(model_file=argv[2])
        ref = sp.encode(text)
        dec = sp.decode(ref)
    else:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(argv[2])
        ref = tok.encode(text, add_special_tokens=False).ids
        dec = tok.decode(ref, skip_special_tokens=False)
        if tok.normalizer is not None:  # NFC: the text comes back normalized
            import unicodedata
            text = unicodedata.normalize('NFC', text)
    rc = 0
    for d in argv[4:]:
        shards = sorted(glob.glob(os.path.join(d, 'train_*.bin')))
        rc |= compare(ref, shard_ids(shards), '%s in %s' % (os.path.basename(argv[3]), d))
    if dec != text:
        print('FAIL: the reference itself does not decode %s back' % argv[3])
        rc = 1
    return rc


if __name__ == '__main__':
    sys.exit(main(sys.argv))
