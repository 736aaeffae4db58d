"""Times integrated gradients on the tutorial-size model (the nlp-tutorial Transformer, 6+6 layers,
d_model 512, 8 heads, d_ff 2048, vocabulary 1000, random weights) in attnviz and in Debian's PyTorch,
alternated round by round in one run on the same machine.

attnviz: `attnviz-cli bench --attribution STEPS` (core/train/attribution.h: the steps, the input and
the baseline as sentences of batches through the pass with the tape and the backward).
PyTorch: the same work as captum's IntegratedGradients with internal batching does it -- forward hooks
scale the source and target token embeddings by each sentence's alpha (STEPS midpoints, 1 and 0: one
batch), the logit of the last position's argmax token summed over the batch, torch.autograd.grad with
respect to the scaled embeddings only (the parameters do not require grad, so no weight gradient is
computed), then the attributions (e * mean gradient).
Each figure is the median of --repeat runs after a warm-up run; the ratio is PyTorch's median over
attnviz's, per round, and the median of the rounds.

usage: /usr/bin/python3 tools/bench_attribution.py --cli build/app/attnviz-cli [--tokens 64]
                                                   [--steps 32] [--threads 1] [--rounds 3] [--repeat 3]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_torch as bt  # noqa: E402
import reference_models as rm  # noqa: E402


def torch_model():
    torch.manual_seed(0)
    vocab = ["P", "S", "E"] + ["w%d" % i for i in range(bt.VOCAB - 3)]
    m = rm.NlpTutorialTransformer(vocab, vocab, d_model=bt.D, d_ff=bt.FF, d_k=bt.DK, d_v=bt.DK,
                                  n_heads=bt.H, n_encoder_layers=bt.LAYERS,
                                  n_decoder_layers=bt.LAYERS, bos_id=1, eos_id=2).eval()
    for p in m.parameters():
        p.requires_grad_(False)
    return m


def torch_ig(m, src, tgt, steps):
    """Integrated gradients of the last position's chosen token over both sides' token rows."""
    alphas = torch.tensor([(k + 0.5) / steps for k in range(steps)] + [1.0, 0.0])
    B = len(alphas)
    inputs, leaves = [], []

    def hook(module, args, out):
        e = out.detach()
        leaf = (alphas.view(B, 1, 1) * e).requires_grad_()
        inputs.append(e)
        leaves.append(leaf)
        return leaf
    hooks = [m.encoder.src_emb.register_forward_hook(hook), m.decoder.tgt_emb.register_forward_hook(hook)]
    try:
        logits = m._logits(src.expand(B, -1), tgt.expand(B, -1))  # [B, T, V]
        with torch.no_grad():
            token = int(logits[B - 2, -1].argmax())
        grads = torch.autograd.grad(logits[:, -1, token].sum(), leaves)
    finally:
        for h in hooks:
            h.remove()
    return [(e[0] * g[:steps].mean(0)).sum(-1) for e, g in zip(inputs, grads)]


def time_torch(m, n, steps, repeat):
    src = torch.randint(3, bt.VOCAB, (1, n))
    tgt = torch.randint(3, bt.VOCAB, (1, n))
    torch_ig(m, src, tgt, steps)  # warm-up
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        torch_ig(m, src, tgt, steps)
        ts.append((time.perf_counter() - t0) * 1000)
    return sorted(ts)[len(ts) // 2]


def time_attnviz(cli, n, steps, threads, repeat):
    out = subprocess.run([cli, "bench", "--attribution", str(steps), "--lengths", str(n),
                          "--threads", str(threads), "--repeat", str(repeat), "--forward-only",
                          "--json"], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        row = json.loads(line)
        if row.get("what") == "attribution_ig":
            return row["median_ms"]
    raise SystemExit("attnviz-cli bench printed no attribution row:\n" + out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cli", required=True, help="the attnviz-cli binary")
    p.add_argument("--tokens", type=int, default=64, help="source and target tokens")
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    m = torch_model()
    print("integrated gradients, %d steps, %d source and %d target tokens, %d thread(s); torch %s"
          % (a.steps, a.tokens, a.tokens, a.threads, torch.__version__), flush=True)
    ratios = []
    for r in range(a.rounds):
        ours = time_attnviz(a.cli, a.tokens, a.steps, a.threads, a.repeat)
        theirs = time_torch(m, a.tokens, a.steps, a.repeat)
        ratios.append(theirs / ours)
        print("round %d: attnviz %.0f ms, PyTorch %.0f ms, PyTorch / attnviz %.2f"
              % (r + 1, ours, theirs, theirs / ours), flush=True)
    print("median ratio PyTorch / attnviz: %.2f" % sorted(ratios)[len(ratios) // 2])


if __name__ == "__main__":
    main()
