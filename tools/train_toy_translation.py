"""Train attnviz's bundled toy-translation model: nlp-tutorial's "5-1.Transformer" on its own toy task.

The tutorial (graykode's nlp-tutorial on GitHub, 5-1.Transformer; docs/tutorials.md) translates
"ich mochte ein bier P" -> "i want a beer ." with the decoder fed "S i want a beer ." and trained towards "i want a beer . E"; "P" is padding (id 0),
"S"/"E" are start and end. Here the same pattern is extended to a few more subjects and drinks/foods.
The model is the tutorial's exactly: no biases, ReLU, post-norm with nn.LayerNorm built inside
forward() (identity affine, no tensors), sinusoidal positions, masked_fill -1e9.

Writes NAME.safetensors (config inside), NAME.heldout.json (here: the training pairs, src without the
trailing P) and NAME.md into --out.

usage: /usr/bin/python3 tools/train_toy_translation.py [--out DIR] [--smoke] [--steps N] [--seed S] [--set K=V]
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_common as tc  # noqa: E402  (first: it configures the BLAS threads before torch loads)
import reference_models as rm  # noqa: E402

NAME = "toy-translation"

# The tutorial's vocabularies keep their ids; the extension appends words.
SRC_VOCAB = ["P", "ich", "mochte", "ein", "bier", "cola",
             "du", "mochtest", "wir", "mochten", "er", "sie", "einen", "eine", "kaffee", "tee", "wasser",
             "apfel", "pizza"]
TGT_VOCAB = ["P", "i", "want", "a", "beer", "coke", "S", "E", ".",
             "you", "we", "he", "she", "wants", "an", "coffee", "tea", "water", "apple", "pizza"]

# (source without P, target without S/E). The first two are the tutorial's own.
PAIRS = [
    ("ich mochte ein bier", "i want a beer ."),
    ("ich mochte ein cola", "i want a coke ."),
    ("ich mochte einen kaffee", "i want a coffee ."),
    ("ich mochte einen tee", "i want a tea ."),
    ("ich mochte einen apfel", "i want an apple ."),
    ("ich mochte eine pizza", "i want a pizza ."),
    ("ich mochte ein wasser", "i want a water ."),
    ("du mochtest ein bier", "you want a beer ."),
    ("du mochtest einen kaffee", "you want a coffee ."),
    ("du mochtest eine pizza", "you want a pizza ."),
    ("wir mochten ein cola", "we want a coke ."),
    ("wir mochten einen tee", "we want a tea ."),
    ("wir mochten einen apfel", "we want an apple ."),
    ("er mochte ein bier", "he wants a beer ."),
    ("er mochte ein wasser", "he wants a water ."),
    ("er mochte eine pizza", "he wants a pizza ."),
    ("sie mochte einen kaffee", "she wants a coffee ."),
    ("sie mochte ein cola", "she wants a coke ."),
]
SRC_LEN = 5  # every source is padded with "P" to the tutorial's length 5

# model and training settings (each can be changed with --set KEY=VALUE for experiments)
SETTINGS = dict(d_model=64, d_ff=128, d_k=16, d_v=16, n_heads=4, n_encoder_layers=2, n_decoder_layers=2,
                max_len=64, dropout=0.1, lr=1e-3, warmup=20)
MODEL_KEYS = ("d_model", "d_ff", "d_k", "d_v", "n_heads", "n_encoder_layers", "n_decoder_layers", "max_len",
              "dropout")
DEFAULT_STEPS = 400


def main():
    args = tc.parse_args(__doc__.splitlines()[0], DEFAULT_STEPS)
    st = tc.apply_overrides(dict(SETTINGS), args.overrides)
    tc.seed_everything(args.seed)
    src_index = {w: i for i, w in enumerate(SRC_VOCAB)}
    tgt_index = {w: i for i, w in enumerate(TGT_VOCAB)}
    pad, bos, eos = 0, tgt_index["S"], tgt_index["E"]

    model = rm.NlpTutorialTransformer(
        SRC_VOCAB, TGT_VOCAB, pad_id=pad, bos_id=bos, eos_id=eos, name="Toy translation (nlp-tutorial Transformer)",
        description="nlp-tutorial's 5-1.Transformer on its toy German-to-English task "
                    "(\"ich mochte ein bier\" -> \"i want a beer .\"), extended to %d sentences." % len(PAIRS),
        **{k: st[k] for k in MODEL_KEYS})

    # the whole data set is one batch, as in the tutorial; sources carry the trailing "P"
    pairs = []
    for s, t in PAIRS:
        words = s.split() + ["P"] * (SRC_LEN - len(s.split()))
        pairs.append((tc.encode(src_index, words), tc.encode(tgt_index, t.split())))
    batch = tc.make_batch(pairs, pad, pad, bos, eos)
    stats = tc.train(model, lambda step: batch, args.steps, st["lr"], tgt_pad_id=pad, warmup=st["warmup"],
                     log_every=50)
    loss = tc.final_loss(model, pairs, pad, pad, bos, eos)

    items = [{"src": s, "tgt": t} for s, t in PAIRS]
    show = 0 if args.smoke else 3
    acc = tc.exact_match(model, items, src_index, TGT_VOCAB, eos, show=show)
    # the trailing P is padding and masked: decoding with it must give the same
    with_p = [{"src": it["src"] + " P", "tgt": it["tgt"]} for it in items]
    acc_p = tc.exact_match(model, with_p, src_index, TGT_VOCAB, eos, show=show)

    path = os.path.join(args.out, NAME + ".safetensors")
    examples = [{"src": s, "tgt": ""} for s, _ in PAIRS[:2] + [PAIRS[4], PAIRS[7], PAIRS[10], PAIRS[13],
                                                                PAIRS[16]]]
    tc.save(model, path, {"examples": examples, "heldout_accuracy": acc}, "F32")
    tc.write_json(os.path.join(args.out, NAME + ".heldout.json"), items)
    _, cfg, acc_file = tc.verify_file(path, items, show=show)

    print("final loss %.3g (training pairs, eval mode); last 100 training steps %.3g" % (loss, stats["final_loss"]))
    print("exact match on the %d training pairs: %.1f%% (with trailing P: %.1f%%; reloaded file: %.1f%%)"
          % (len(items), 100 * acc, 100 * acc_p, 100 * acc_file))
    print("parameters %d, training %.0f s, file %s (%d bytes)" % (tc.param_count(model), stats["seconds"], path,
                                                                  os.path.getsize(path)))
    card = f"""# {NAME}

{cfg['description']}

- **Family:** `nlp-tutorial`, model class `Transformer`: the "5-1.Transformer" model of graykode's
  *nlp-tutorial* repository on GitHub (docs/tutorials.md): no biases, ReLU, post-norm with the
  LayerNorm built inside `forward()` (identity affine, so no LayerNorm tensors), sinusoidal positions,
  `masked_fill(-1e9)`. `P` (id 0) is padding, `S` starts and `E` ends the target.
- **Task:** German-like toy sentences to English, the tutorial's two pairs plus {len(PAIRS) - 2} more of the same
  pattern (subjects ich/du/wir/er/sie, a few drinks and foods). Sources are padded with `P` to length
  {SRC_LEN} in training, as in the tutorial; `P` is masked, so the source may be typed with or without it.
- **Data:** all {len(PAIRS)} pairs in one batch (listed in `{NAME}.heldout.json`, which for this model
  holds the training pairs themselves: there is nothing to hold out).
- **Training:** Adam (lr {st['lr']}, betas 0.9/0.98, warm-up {st['warmup']} steps, cosine decay to lr/20),
  gradient clipping 1.0, dropout {st['dropout']}, {stats['steps']} steps,
  {stats['seconds']:.0f} s on {args.threads} CPU thread(s), seed {args.seed}.

## Config

{tc.describe_config(cfg)}

{tc.param_count(model)} parameters, F32.

## Results

- final loss (mean token cross-entropy on the pairs, eval mode): {loss:.3g}
  (mean training loss, dropout on, of the last 100 steps: {stats['final_loss']:.3g})
- exact-sequence greedy decoding of the pairs: {100 * acc:.1f}% (with the trailing `P`: {100 * acc_p:.1f}%;
  the written file reloaded: {100 * acc_file:.1f}%)

{tc.reproduce_section()}"""
    with open(os.path.join(args.out, NAME + ".md"), "w", encoding="utf-8") as f:
        f.write(card)
    if not args.smoke and acc < 1.0:
        sys.exit("toy translation: not every pair is reproduced")


if __name__ == "__main__":
    t0 = time.time()
    main()
    print("done in %.0f s" % (time.time() - t0))
