"""Times the nlp-tutorial model at the tutorial's full size (6+6 layers, d_model 512, 8 heads,
d_ff 2048) in Debian's PyTorch, for comparison with `attnviz-cli bench` (same sizes, same count of
matrix-product flops, so the GFLOP/s compare directly).
--model gpt2-small or smollm-135m times instead a decoder of that shape
(tools/make_tutorial_checkpoints.py's BENCH_SIZES; the same random weights as the folder
`make_tutorial_checkpoints.py --bench NAME` writes for `attnviz-cli bench FOLDER`): transformers'
GPT-2 / Llama after tools/hf_decoder_models.py, a pass that returns the logits and every layer's
and head's attention probabilities, as output_attentions=True does.
usage: /usr/bin/python3 tools/bench_torch.py [--model tutorial] [--lengths 32,128,512]
                                             [--threads 1,2] [--repeat 5] [--json]"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tutorial_checkpoints as mtc  # noqa: E402
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


def decoder_flops(name, t):
    """Matrix-product flops of one pass of BENCH_SIZES[name] over t tokens (batch 1), counted as
    attnviz-cli bench counts them: q, k, v and the output projection, scores and context, the
    feed-forward (two products, three when gated), the vocabulary head."""
    kind, c = mtc.BENCH_SIZES[name]
    if kind == "hf_gpt2":
        d, heads, kv, layers, ff, gates = c["n_embd"], c["n_head"], c["n_head"], c["n_layer"], \
            4 * c["n_embd"], 2
    else:
        d, heads, kv, layers = c["hidden_size"], c["num_attention_heads"], \
            c["num_key_value_heads"], c["num_hidden_layers"]
        ff, gates = c["intermediate_size"], 3
    hd = d // heads
    layer = (2.0 * t * d * (heads + 2 * kv) * hd + 2.0 * heads * t * t * 2 * hd
             + 2.0 * t * heads * hd * d + gates * 2.0 * t * d * ff)
    return layers * layer + 2.0 * t * d * c["vocab_size"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="tutorial", choices=["tutorial"] + sorted(mtc.BENCH_SIZES))
    p.add_argument("--lengths", default="32,128,512")
    p.add_argument("--threads", default="1")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", action="store_true", help="one JSON object a line")
    a = p.parse_args()
    torch.manual_seed(0)
    if a.model == "tutorial":
        vocab = ["P", "S", "E"] + ["w%d" % i for i in range(VOCAB - 3)]
        m = rm.NlpTutorialTransformer(vocab, vocab, d_model=D, d_ff=FF, d_k=DK, d_v=DK, n_heads=H,
                                      n_encoder_layers=LAYERS, n_decoder_layers=LAYERS, bos_id=1,
                                      eos_id=2).eval()
        vocab_size = VOCAB
        run = m  # run(src, tgt): the logits; each block's attention recorded
        flops_of = lambda n: pass_flops(n, n)  # noqa: E731
    else:
        m = mtc.bench_model(a.model).eval()
        vocab_size = mtc.BENCH_SIZES[a.model][1]["vocab_size"]
        run = lambda src, tgt: m.attentions(tgt)  # noqa: E731  the logits and every layer's probs
        flops_of = lambda n: decoder_flops(a.model, n)  # noqa: E731
    for threads in [int(x) for x in a.threads.split(",")]:
        torch.set_num_threads(threads)
        if not a.json:
            print("torch", torch.__version__, "threads", torch.get_num_threads(), flush=True)
        for n in [int(x) for x in a.lengths.split(",")]:
            src = torch.randint(3, vocab_size, (1, n))
            tgt = torch.randint(3, vocab_size, (1, n))
            with torch.no_grad():
                run(src, tgt)
                ts, cpu = [], []
                for _ in range(a.repeat):
                    t0, c0 = time.perf_counter(), time.process_time()
                    run(src, tgt)
                    ts.append((time.perf_counter() - t0) * 1000)
                    cpu.append((time.process_time() - c0) * 1000)
            ts.sort()
            cpu.sort()
            median, flops = ts[len(ts) // 2], flops_of(n)
            if a.json:
                print(json.dumps({"model": a.model, "tokens": n, "threads": torch.get_num_threads(),
                                  "torch": torch.__version__, "median_ms": median, "min_ms": ts[0],
                                  "cpu_median_ms": cpu[len(cpu) // 2],
                                  "gflop": flops * 1e-9, "gflops": flops / median * 1e-6}),
                      flush=True)
            else:
                print("n = %d: forward %.1f ms (median of %d, min %.1f)  %.1f GFLOP/s"
                      % (n, median, a.repeat, ts[0], flops / median * 1e-6), flush=True)


if __name__ == "__main__":
    main()
