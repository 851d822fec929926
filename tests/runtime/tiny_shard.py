# tiny_shard.py OUT: one token shard of 32768 byte-vocabulary tokens in a
# fixed pattern (header magic 20240520, version 1): data for start-up and
# restart tests that need a few steps of anything, not real text.
import struct, sys
n = 32768
h = [0] * 256; h[0] = 20240520; h[1] = 1; h[2] = n
toks = [(i * 7 + i // 256) % 256 for i in range(n)]
open(sys.argv[1], 'wb').write(struct.pack('<256i', *h) + struct.pack('<%dH' % n, *toks))
