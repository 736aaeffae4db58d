"""Times the nlp-tutorial model at the tutorial's full size (6+6 layers, d_model 512, 8 heads,
d_ff 2048) in Debian's PyTorch, for comparison with `attnviz-cli bench`.
usage: /usr/bin/python3 tools/bench_torch.py [--lengths 32,128] [--threads 1]"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_models as rm  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--lengths", default="32,128")
p.add_argument("--threads", type=int, default=1)
p.add_argument("--repeat", type=int, default=5)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
vocab = ["P", "S", "E"] + ["w%d" % i for i in range(997)]
m = rm.NlpTutorialTransformer(vocab, vocab, d_model=512, d_ff=2048, d_k=64, d_v=64, n_heads=8,
                              n_encoder_layers=6, n_decoder_layers=6, bos_id=1, eos_id=2).eval()
print("torch", torch.__version__, "threads", torch.get_num_threads())
for n in [int(x) for x in a.lengths.split(",")]:
    src = torch.randint(3, 1000, (1, n))
    tgt = torch.randint(3, 1000, (1, n))
    with torch.no_grad():
        m(src, tgt)
        ts = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            m(src, tgt)
            ts.append((time.perf_counter() - t0) * 1000)
    ts.sort()
    print("n = %d: forward %.1f ms (median of %d, min %.1f)" % (n, ts[len(ts) // 2], a.repeat, ts[0]))
