"""Train attnviz's bundled reverse model: PyTorch's Seq2SeqTransformer (pre-norm) reversing a sequence.

Task: the source is 3-12 tokens drawn from the digits and lower-case letters ("7 k 2 q"); the target
is the same tokens in reverse order ("q 2 k 7"), fed to the decoder as "<bos> q 2 k 7" and trained
towards "q 2 k 7 <eos>". Batches mix lengths and are padded with <pad>. A trained model's
cross-attention is an anti-diagonal: output token i attends to source position S-1-i; the script
measures how often the argmax of the last decoder layer's head-averaged cross-attention lands there.

Writes NAME.safetensors (config inside), NAME.heldout.json (sequences never seen in training) and
NAME.md into --out.

usage: /usr/bin/python3 tools/train_reverse.py [--out DIR] [--smoke] [--steps N] [--seed S] [--set K=V]
"""
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_common as tc  # noqa: E402  (first: it configures the BLAS threads before torch loads)
import reference_models as rm  # noqa: E402
import numpy as np  # noqa: E402

NAME = "reverse"
SPECIALS = ["<unk>", "<pad>", "<bos>", "<eos>"]  # the tutorial's ids 0, 1, 2, 3
SYMBOLS = list("0123456789abcdefghijklmnopqrstuvwxyz")
VOCAB = SPECIALS + SYMBOLS  # shared by source and target
MIN_LEN, MAX_LEN = 3, 12
N_HELDOUT = 300
HANDPICKED = ["1 2 3 4 5 6 7 8 9", "a t t e n t i o n"]  # held out too: the GUI's first examples

# model and training settings (each can be changed with --set KEY=VALUE for experiments).
# One decoder layer: its cross-attention has to fetch the token, so the only cross-attention the model
# has is the clean anti-diagonal (with two decoder layers the first one's is diffuse). Token
# embeddings start at N(0, 1/d_model): the family multiplies them by sqrt(d_model), and with
# nn.Embedding's N(0, 1) they drown the positions (a 2+2 model then stalled at 80% accuracy and a
# blurred diagonal).
SETTINGS = dict(d_model=64, n_heads=4, d_ff=256, n_encoder_layers=3, n_decoder_layers=1, max_len=64,
                dropout=0.0, emb_std=64 ** -0.5, lr=1e-3, batch=64, warmup=200)
MODEL_KEYS = ("d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers", "max_len", "dropout")
DEFAULT_STEPS = 5000


def random_sequence(rng):
    n = rng.randint(MIN_LEN, MAX_LEN)
    return [rng.choice(SYMBOLS) for _ in range(n)]


def make_heldout(seed):
    """HANDPICKED, then random distinct sequences with lengths spread evenly over MIN_LEN..MAX_LEN,
    N_HELDOUT in all."""
    rng = random.Random(seed)
    items = [{"src": s, "tgt": " ".join(reversed(s.split()))} for s in HANDPICKED]
    seen = set(HANDPICKED)
    lengths = [MIN_LEN + i % (MAX_LEN - MIN_LEN + 1) for i in range(N_HELDOUT - len(items))]
    for n in lengths:
        while True:
            s = " ".join(rng.choice(SYMBOLS) for _ in range(n))
            if s not in seen:
                break
        seen.add(s)
        items.append({"src": s, "tgt": " ".join(reversed(s.split()))})
    return items


def antidiagonal_fraction(model, items):
    """Fraction of target positions i (0..S-1) where the argmax over source positions of the last
    decoder layer's cross-attention, averaged over heads, is S-1-i. Teacher-forced on the expected
    target (<bos> + reversed source), which is what greedy decoding produces when it is right."""
    index = {w: i for i, w in enumerate(VOCAB)}
    bos = index["<bos>"]
    hit = total = 0
    for it in items:
        src = tc.encode(index, it["src"].split())
        tgt = [bos] + tc.encode(index, it["tgt"].split())
        cross = model.trace([src], [tgt])["cross.probs"]  # [1, L, H, T, S]
        mean = cross[0, -1].mean(axis=0)  # [T, S]
        S = len(src)
        arg = mean[:S].argmax(axis=-1)
        hit += int((arg == np.arange(S - 1, -1, -1)).sum())
        total += S
    return hit / total


def main():
    args = tc.parse_args(__doc__.splitlines()[0], DEFAULT_STEPS)
    st = tc.apply_overrides(dict(SETTINGS), args.overrides)
    tc.seed_everything(args.seed)
    index = {w: i for i, w in enumerate(VOCAB)}
    unk, pad, bos, eos = (index[t] for t in SPECIALS)

    heldout = make_heldout(args.seed + 1)
    held = set(it["src"] for it in heldout)
    rng = random.Random(args.seed)

    def next_batch(step):
        pairs = []
        while len(pairs) < st["batch"]:
            s = random_sequence(rng)
            if " ".join(s) in held:
                continue
            ids = tc.encode(index, s)
            pairs.append((ids, ids[::-1]))
        return tc.make_batch(pairs, pad, pad, bos, eos)

    model = rm.TorchSeq2Seq(
        VOCAB, VOCAB, norm_first=True, pad_id=pad, bos_id=bos, eos_id=eos, unk_id=unk,
        name="Reverse a sequence (pytorch-nn-transformer Seq2SeqTransformer, pre-norm)",
        description="PyTorch's Seq2SeqTransformer (pre-norm) trained to reverse %d-%d digits and letters: "
                    "its cross-attention is an anti-diagonal." % (MIN_LEN, MAX_LEN),
        **{k: st[k] for k in MODEL_KEYS})
    tc.init_embeddings_(model, st["emb_std"])
    stats = tc.train(model, next_batch, args.steps, st["lr"], tgt_pad_id=pad, warmup=st["warmup"], log_every=250)

    eval_items = heldout[:20] if args.smoke else heldout
    show = 0 if args.smoke else 3
    eval_pairs = [(tc.encode(index, it["src"].split()), tc.encode(index, it["tgt"].split())) for it in eval_items]
    loss = tc.final_loss(model, eval_pairs, pad, pad, bos, eos)
    acc = tc.exact_match(model, eval_items, index, VOCAB, eos, show=show)
    diag = antidiagonal_fraction(model, eval_items)

    examples = [{"src": it["src"], "tgt": ""} for it in heldout[:len(HANDPICKED)]]
    for n in (5, 7, 10, 12, 4, 11):  # and a few random held-out sequences of other lengths
        examples.append({"src": next(it["src"] for it in heldout if len(it["src"].split()) == n), "tgt": ""})
    path = os.path.join(args.out, NAME + ".safetensors")
    tc.save(model, path, {"examples": examples, "heldout_accuracy": acc}, "F32")
    tc.write_json(os.path.join(args.out, NAME + ".heldout.json"), heldout)
    _, cfg, acc_file = tc.verify_file(path, eval_items, show=show)

    print("final loss %.3g (held-out, eval mode); last 100 training steps %.3g" % (loss, stats["final_loss"]))
    print("held-out exact match (%d sequences): %.1f%% (reloaded file: %.1f%%)" % (len(eval_items), 100 * acc,
                                                                              100 * acc_file))
    print("anti-diagonal fraction (last decoder layer, mean over heads): %.1f%%" % (100 * diag))
    print("parameters %d, training %.0f s, file %s (%d bytes)" % (tc.param_count(model), stats["seconds"], path,
                                                                  os.path.getsize(path)))
    card = f"""# {NAME}

{cfg['description']}

- **Family:** `pytorch-nn-transformer` (old name `torch-seq2seq`), model class `Seq2SeqTransformer`:
  the model of PyTorch's tutorial "Language Translation with nn.Transformer and torchtext" on
  `nn.Transformer` (docs/tutorials.md), here with `norm_first=True` (pre-norm); `nn.Transformer` adds a final LayerNorm after each stack.
  Token embeddings are scaled by sqrt(d_model); sinusoidal positions; `-inf` masking.
- **Task:** reverse a sequence of {MIN_LEN}-{MAX_LEN} tokens drawn uniformly from the digits and lower-case
  letters (`7 k 2 q` -> `q 2 k 7`). The vocabulary (shared by both sides) is the tutorial's specials
  `<unk>` 0, `<pad>` 1, `<bos>` 2, `<eos>` 3, then `0`-`9`, `a`-`z`.
- **Data:** a fresh random batch of {st['batch']} pairs each step (seed {args.seed}), lengths uniform in
  {MIN_LEN}..{MAX_LEN}, padded with `<pad>`; the decoder reads `<bos>` + reversed source and is trained towards
  reversed source + `<eos>`. {len(heldout)} held-out sequences (`{NAME}.heldout.json`, lengths spread
  evenly, starting with `{HANDPICKED[0]}` and `{HANDPICKED[1]}`) are never used in training.
- **Training:** Adam (lr {st['lr']}, betas 0.9/0.98, warm-up {st['warmup']} steps, cosine decay to lr/20),
  gradient clipping 1.0, dropout {st['dropout']}, token embeddings initialised N(0, {st['emb_std']:.3f}^2),
  {stats['steps']} steps, {stats['seconds']:.0f} s on {args.threads} CPU thread(s).

## Config

{tc.describe_config(cfg)}

{tc.param_count(model)} parameters, F32.

## Results

- final loss (mean token cross-entropy on the held-out set, eval mode): {loss:.3g}
  (mean training loss of the last 100 steps: {stats['final_loss']:.3g})
- held-out exact-sequence accuracy, the model's greedy decoding: {100 * acc:.1f}% of {len(eval_items)}
  (the written file reloaded: {100 * acc_file:.1f}%)
- anti-diagonal: for {100 * diag:.1f}% of the target positions i (0..S-1) of the held-out set, the argmax of
  the last decoder layer's cross-attention (mean over heads) is the mirrored source position S-1-i.

{tc.reproduce_section()}"""
    with open(os.path.join(args.out, NAME + ".md"), "w", encoding="utf-8") as f:
        f.write(card)
    if not args.smoke and (acc < 0.95 or diag < 0.9):
        sys.exit("reverse: below target (95% exact, 90% anti-diagonal)")


if __name__ == "__main__":
    t0 = time.time()
    main()
    print("done in %.0f s" % (time.time() - t0))
