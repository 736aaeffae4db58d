"""Times the nlp-tutorial model at the tutorial's full size (6+6 layers, d_model 512, 8 heads,
d_ff 2048) in Debian's PyTorch, for comparison with `attnviz-cli bench` (same sizes, same count of
matrix-product flops, so the GFLOP/s compare directly).
usage: /usr/bin/python3 tools/bench_torch.py [--lengths 32,128,512] [--threads 1,2] [--repeat 5]
                                             [--json]"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_models as rm  # noqa: E402

D, FF, H, DK, LAYERS, VOCAB = 512, 2048, 8, 64, 6, 1000


def pass_flops(s, t):
    """Matrix-product flops of one forward pass over s source and t target tokens (batch 1),
    counted as attnviz-cli bench counts them."""
    a = H * DK
    attn = lambda q, k: 2.0 * H * q * k * 2 * DK  # noqa: E731  scores + context
    enc = 2.0 * s * D * 3 * a + attn(s, s) + 2.0 * s * a * D + 4.0 * s * D * FF
    dec = (2.0 * t * D * 3 * a + attn(t, t) + 2.0 * t * a * D + 2.0 * t * D * a
           + 2.0 * s * D * 2 * a + attn(t, s) + 2.0 * t * a * D + 4.0 * t * D * FF)
    return LAYERS * (enc + dec) + 2.0 * t * D * VOCAB


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lengths", default="32,128,512")
    p.add_argument("--threads", default="1")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", action="store_true", help="one JSON object a line")
    a = p.parse_args()
    torch.manual_seed(0)
    vocab = ["P", "S", "E"] + ["w%d" % i for i in range(VOCAB - 3)]
    m = rm.NlpTutorialTransformer(vocab, vocab, d_model=D, d_ff=FF, d_k=DK, d_v=DK, n_heads=H,
                                  n_encoder_layers=LAYERS, n_decoder_layers=LAYERS, bos_id=1,
                                  eos_id=2).eval()
    for threads in [int(x) for x in a.threads.split(",")]:
        torch.set_num_threads(threads)
        if not a.json:
            print("torch", torch.__version__, "threads", torch.get_num_threads(), flush=True)
        for n in [int(x) for x in a.lengths.split(",")]:
            src = torch.randint(3, VOCAB, (1, n))
            tgt = torch.randint(3, VOCAB, (1, n))
            with torch.no_grad():
                m(src, tgt)
                ts, cpu = [], []
                for _ in range(a.repeat):
                    t0, c0 = time.perf_counter(), time.process_time()
                    m(src, tgt)
                    ts.append((time.perf_counter() - t0) * 1000)
                    cpu.append((time.process_time() - c0) * 1000)
            ts.sort()
            cpu.sort()
            median, flops = ts[len(ts) // 2], pass_flops(n, n)
            if a.json:
                print(json.dumps({"tokens": n, "threads": torch.get_num_threads(),
                                  "torch": torch.__version__, "median_ms": median, "min_ms": ts[0],
                                  "cpu_median_ms": cpu[len(cpu) // 2],
                                  "gflop": flops * 1e-9, "gflops": flops / median * 1e-6}),
                      flush=True)
            else:
                print("n = %d: forward %.1f ms (median of %d, min %.1f)  %.1f GFLOP/s"
                      % (n, median, a.repeat, ts[0], flops / median * 1e-6), flush=True)


if __name__ == "__main__":
    main()
