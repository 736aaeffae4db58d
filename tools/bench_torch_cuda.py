"""Times the model of tools/bench_torch.py (the nlp-tutorial Transformer at the tutorial's full size:
6+6 layers, d_model 512, 8 heads, d_ff 2048, 1000 words, random weights) in PyTorch on a CUDA GPU,
eager, for comparison with `attnviz-cli bench --backend cuda`. Like attnviz, each pass keeps every
layer's attention and copies it to the host:
  full trace          logits + every layer's raw scores and probabilities of all three kinds
  probabilities only  logits + every layer's probabilities
  forward only        logits (nothing else leaves the GPU)
float32 throughout with TF32 off (attnviz's cuBLAS products are full FP32). Each figure is the
median of --repeat passes after one warm-up, timed on the host around a synchronised pass.
--model gpt2-small or smollm-135m: the decoder of that shape (tools/make_tutorial_checkpoints.py's
BENCH_SIZES, written after Hugging Face's classes in tools/hf_decoder_models.py; random weights),
the full trace being its logits and every layer's raw scores, mask and probabilities.

usage: python3 tools/bench_torch_cuda.py [--model tutorial] [--lengths 32,128,512,1024,2048]
                                         [--repeat 5] [--device cuda]
exit 77 when PyTorch sees no CUDA device (--device cpu runs the same on the CPU, as a smoke test).
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tutorial_checkpoints as mtc  # noqa: E402
import reference_models as rm  # noqa: E402
import tutorial_models as tm  # noqa: E402


def subsequence_mask_on_device(seq):
    """The tutorial's look-ahead mask ([B, T, T] uint8, 1 above the diagonal), made on the device of
    `seq`: reference_models builds it with NumPy on the CPU, which a CUDA model cannot add to its
    own masks. Same values; this is what a GPU port of the tutorial does."""
    b, t = seq.size(0), seq.size(1)
    return torch.triu(torch.ones(b, t, t, dtype=torch.uint8, device=seq.device), diagonal=1)


def tutorial_model(max_len):
    """The same model as tools/bench_torch.py builds (vocabulary of 1000, bos 1, eos 2)."""
    vocab = ["P", "S", "E"] + ["w%d" % i for i in range(997)]
    return rm.NlpTutorialTransformer(vocab, vocab, d_model=512, d_ff=2048, d_k=64, d_v=64, n_heads=8,
                                     n_encoder_layers=6, n_decoder_layers=6, bos_id=1, eos_id=2,
                                     max_len=max_len)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="tutorial", choices=["tutorial"] + sorted(mtc.BENCH_SIZES))
    p.add_argument("--lengths", default="32,128,512,1024,2048")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--device", default="cuda")
    a = p.parse_args()
    on_gpu = a.device == "cuda"
    if on_gpu and not torch.cuda.is_available():
        print("SKIP: PyTorch sees no CUDA device")
        return 77
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(a.device)
    rm.nlp_get_attn_subsequence_mask = subsequence_mask_on_device
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    lengths = [int(x) for x in a.lengths.split(",")]
    torch.manual_seed(0)
    if a.model == "tutorial":
        m = tutorial_model(max(5000, max(lengths))).to(dev).eval()
        vocab_size = 1000
    else:
        m = mtc.bench_model(a.model).to(dev).eval()
        vocab_size = mtc.BENCH_SIZES[a.model][1]["vocab_size"]
    print("torch %s, %s, model %s, TF32 %s, repeat %d"
          % (torch.__version__, torch.cuda.get_device_name(0) if on_gpu else "CPU", a.model,
             torch.backends.cuda.matmul.allow_tf32, a.repeat))

    def one_pass(src, tgt, keep):
        if a.model == "tutorial":
            logits = m(src, tgt)[0].cpu()
            if keep:
                for recs in m._attn_records().values():
                    for r in recs:
                        r["probs"].cpu()
                        if keep == "full":
                            r["scores"].cpu()
        elif keep == "full":  # every layer's scores, mask and probabilities recorded and copied
            logits = m._run(tgt)[1].cpu()
            for layer in m.attention_layers():
                for t in layer.last.values():
                    t.cpu()
        else:
            with tm.probs_only():
                logits = m._run(tgt)[1].cpu()
                if keep:
                    for layer in m.attention_layers():
                        layer.last["probs"].cpu()
        sync()
        return logits

    def timed(src, tgt, keep):
        with torch.no_grad():
            one_pass(src, tgt, keep)  # warm-up
            ts = []
            for _ in range(a.repeat):
                sync()
                t0 = time.perf_counter()
                one_pass(src, tgt, keep)
                ts.append((time.perf_counter() - t0) * 1000)
        ts.sort()
        return ts[len(ts) // 2], ts[0]

    for n in lengths:
        src = torch.randint(3, vocab_size, (1, n), device=dev)
        tgt = torch.randint(3, vocab_size, (1, n), device=dev)
        tgt[0, 0] = 1
        full, full_min = timed(src, tgt, "full")
        probs, probs_min = timed(src, tgt, "probs")
        fwd, fwd_min = timed(src, tgt, None)
        print("n = %d: full trace %.2f ms (min %.2f), probabilities only %.2f ms (min %.2f), "
              "forward only %.2f ms (min %.2f), peak GPU memory %.0f MiB"
              % (n, full, full_min, probs, probs_min, fwd, fwd_min,
                 torch.cuda.max_memory_allocated() / 2**20 if on_gpu else 0))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
