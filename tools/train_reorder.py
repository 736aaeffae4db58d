"""Train attnviz's bundled reorder model (the one the app opens on): the wq-tutorial's Translation model on a
synthetic translation whose word order differs between the two languages.

Source: an English-like SVO language,
    [det adj* noun] [adv] verb [det adj* noun] [prep det adj* noun]
    "the big red dog often sees a small cat near the old house"
Target: a made-up verb-final (SOV) language with case markers and postpositions, whose noun phrases
are the mirror image of the source's (noun, adjectives in reverse order, determiner last):
    [noun adj* det] ka [noun adj* det postp] [noun adj* det] ro [adv] verb
    "dog red big the ka house old the near cat small a ro often sees"   (in the made-up words)
Every source word has exactly one target word (a fixed word-for-word lexicon, no ambiguity); "ka"
marks the subject and "ro" the object and have no source word. So the cross-attention shows the
alignment, with crossings wherever the order changes.

Writes NAME.safetensors (config inside), NAME.heldout.json (sentences never seen in training) and
NAME.md into --out.

usage: /usr/bin/python3 tools/train_reorder.py [--out DIR] [--smoke] [--steps N] [--seed S] [--set K=V]
"""
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_common as tc  # noqa: E402  (first: it configures the BLAS threads before torch loads)
import reference_models as rm  # noqa: E402

NAME = "reorder"

# ---- the source language's words ----
DETS = "the a this that every my your our".split()
NOUNS = """dog cat bird horse cow sheep goat pig fox wolf bear lion tiger mouse rabbit frog fish duck owl snake
monkey deer camel whale shark eagle crow bee spider turtle farmer teacher doctor baker child girl boy woman man king
queen soldier sailor painter singer student driver cook nurse judge poet thief guard friend neighbour hunter pilot
book apple letter house car boat tree flower stone river song cake ball hat door window box key cup lamp chair table
bread ship coin map rope bell drum knife ring shoe garden bridge tower wagon basket candle mirror clock""".split()
ADJS = """big small red blue green old young happy sad tall short fast slow quiet loud brave lazy clever angry hungry
tired little black white yellow brown dark bright heavy light warm cold rich poor strong weak gentle wild kind proud
shy strange famous noisy busy clean dirty sweet calm grey""".split()
VERBS = """sees finds likes loves hates follows helps watches chases carries holds takes brings buys sells paints draws
calls meets knows fears feeds visits catches pushes pulls opens builds breaks cleans hides wants needs greets teaches
keeps throws drops wakes guards leaves counts washes fixes steals tells kicks bites""".split()
ADVS = "often never always quickly slowly quietly suddenly gladly rarely soon again secretly".split()
PREPS = "with near behind under beside for".split()
CLASSES = [("det", DETS), ("noun", NOUNS), ("adj", ADJS), ("verb", VERBS), ("adv", ADVS), ("prep", PREPS)]
SUBJ, OBJ = "ka", "ro"  # target case markers
LEXICON_SEED = 1234  # the made-up words (fixed: they are the model's target vocabulary)

SRC_SPECIALS = ["<pad>", "<unk>"]
TGT_SPECIALS = ["<pad>", "<unk>", "<bos>", "<eos>"]

N_HELDOUT = 300
# model and training settings (each can be changed with --set KEY=VALUE for experiments)
SETTINGS = dict(d_model=128, d_ff=256, d_k=32, d_v=32, n_heads=4, n_encoder_layers=2, n_decoder_layers=2,
                max_len=128, lr=7e-4, batch=64, warmup=200)
MODEL_KEYS = ("d_model", "d_ff", "d_k", "d_v", "n_heads", "n_encoder_layers", "n_decoder_layers", "max_len")
DEFAULT_STEPS = 3000


def make_lexicon(seed):
    """source word -> a made-up target word of consonant-vowel syllables, distinct, deterministic:
    determiners one syllable, postpositions one syllable + "k", adverbs two, nouns two or three,
    adjectives two or three + "l", verbs two or three + "n" -- enough to tell the classes apart when
    reading the output."""
    rng = random.Random(seed)
    cons = "bdfgklmnprstvz"
    vowels = "aeiou"
    used = {SUBJ, OBJ}
    lex = {}

    def syl():
        return rng.choice(cons) + rng.choice(vowels)

    shapes = {"det": (1, ""), "adv": (2, ""), "prep": (1, "k"), "noun": (2, ""), "adj": (2, "l"), "verb": (2, "n")}
    for cls, words in CLASSES:
        n_syl, tail = shapes[cls]
        for w in words:
            while True:
                n = n_syl + (rng.random() < 0.3 and cls in ("noun", "verb", "adj"))
                t = "".join(syl() for _ in range(n)) + tail
                if t not in used:
                    break
            used.add(t)
            lex[w] = t
    return lex


def random_np(rng):
    """det adj* noun, with 0, 1 or 2 distinct adjectives."""
    n_adj = rng.choices([0, 1, 2], weights=[0.35, 0.4, 0.25])[0]
    adjs = rng.sample(ADJS, n_adj)
    return [rng.choice(DETS)] + adjs + [rng.choice(NOUNS)]


def random_sentence(rng):
    """-> dict of the parts: subj, obj, pp (or None) noun phrases as word lists, adv (or None), verb, prep."""
    return {
        "subj": random_np(rng),
        "adv": rng.choice(ADVS) if rng.random() < 0.35 else None,
        "verb": rng.choice(VERBS),
        "obj": random_np(rng),
        "prep": rng.choice(PREPS) if rng.random() < 0.4 else None,
        "pp": random_np(rng),
    }


def source_words(p):
    w = list(p["subj"]) + ([p["adv"]] if p["adv"] else []) + [p["verb"]] + list(p["obj"])
    if p["prep"]:
        w += [p["prep"]] + list(p["pp"])
    return w


def aligned_target(p, lex):
    """-> [(target word, index of its source word or None for the case markers)]."""
    pos = {}  # part -> index of its first source word
    i = 0
    for part in ("subj", "adv", "verb", "obj", "prep", "pp"):
        if part in ("adv", "prep") and not p[part]:
            continue
        if part == "pp" and not p["prep"]:
            continue
        pos[part] = i
        i += len(p[part]) if part in ("subj", "obj", "pp") else 1

    def np_(part):  # det adj1 adj2 noun -> noun adj2 adj1 det
        words = p[part]
        return [(lex[words[k]], pos[part] + k) for k in reversed(range(len(words)))]

    t = np_("subj") + [(SUBJ, None)]
    if p["prep"]:
        t += np_("pp") + [(lex[p["prep"]], pos["prep"])]
    t += np_("obj") + [(OBJ, None)]
    if p["adv"]:
        t.append((lex[p["adv"]], pos["adv"]))
    t.append((lex[p["verb"]], pos["verb"]))
    return t


def target_words(p, lex):
    return [w for w, _ in aligned_target(p, lex)]


def make_heldout(seed, lex):
    """N_HELDOUT distinct sentences; the first few cover every construction (for the GUI's examples)."""
    rng = random.Random(seed)
    items, alignments, seen = [], [], set()

    def add(p):
        s = " ".join(source_words(p))
        if s in seen:
            return False
        seen.add(s)
        items.append({"src": s, "tgt": " ".join(target_words(p, lex))})
        alignments.append([j for _, j in aligned_target(p, lex)])
        return True

    # constructions for the examples: (adjectives per NP, adverb?, prepositional phrase?)
    shapes = [((2, 1, 0), True, True), ((1, 1, 0), False, False), ((2, 0, 1), False, True), ((0, 2, 0), True, False),
              ((1, 0, 2), True, True), ((1, 2, 0), False, False), ((0, 0, 0), False, False), ((2, 2, 1), False, True)]
    for (a_s, a_o, a_p), adv, pp in shapes:
        while True:
            p = random_sentence(rng)
            p["subj"] = [rng.choice(DETS)] + rng.sample(ADJS, a_s) + [rng.choice(NOUNS)]
            p["obj"] = [rng.choice(DETS)] + rng.sample(ADJS, a_o) + [rng.choice(NOUNS)]
            p["pp"] = [rng.choice(DETS)] + rng.sample(ADJS, a_p) + [rng.choice(NOUNS)]
            p["adv"] = rng.choice(ADVS) if adv else None
            p["prep"] = rng.choice(PREPS) if pp else None
            if add(p):
                break
    while len(items) < N_HELDOUT:
        add(random_sentence(rng))
    return items, alignments


def alignment_fraction(model, items, alignments, src_index, tgt_index, bos):
    """Teacher-forced on the expected targets: for each target word that translates a source word, is
    the argmax of the head-averaged cross-attention of the query that predicts it (decoder input
    position j for output word j) that source word? -> (fraction for the last decoder layer,
    [fraction per decoder layer])."""
    hits, total = None, 0
    for it, al in zip(items, alignments):
        src = tc.encode(src_index, it["src"].split())
        tgt = [bos] + tc.encode(tgt_index, it["tgt"].split())
        cross = model.trace([src], [tgt])["cross.probs"][0]  # [L, H, T, S]
        arg = cross.mean(axis=1).argmax(axis=-1)  # [L, T]
        if hits is None:
            hits = [0] * arg.shape[0]
        for j, a in enumerate(al):
            if a is None:
                continue
            total += 1
            for layer in range(arg.shape[0]):
                hits[layer] += int(arg[layer, j] == a)
    per_layer = [h / max(1, total) for h in hits]
    return per_layer[-1], per_layer


def main():
    args = tc.parse_args(__doc__.splitlines()[0], DEFAULT_STEPS)
    st = tc.apply_overrides(dict(SETTINGS), args.overrides)
    tc.seed_everything(args.seed)
    lex = make_lexicon(LEXICON_SEED)
    src_vocab = SRC_SPECIALS + [w for _, words in CLASSES for w in words]
    tgt_vocab = TGT_SPECIALS + [SUBJ, OBJ] + [lex[w] for _, words in CLASSES for w in words]
    assert len(set(src_vocab)) == len(src_vocab) and len(set(tgt_vocab)) == len(tgt_vocab)
    src_index = {w: i for i, w in enumerate(src_vocab)}
    tgt_index = {w: i for i, w in enumerate(tgt_vocab)}
    pad, unk, bos, eos = (tgt_index[t] for t in ("<pad>", "<unk>", "<bos>", "<eos>"))
    assert src_index["<pad>"] == pad and src_index["<unk>"] == unk

    heldout, alignments = make_heldout(args.seed + 1, lex)
    held = set(it["src"] for it in heldout)
    rng = random.Random(args.seed)

    def next_batch(step):
        pairs = []
        while len(pairs) < st["batch"]:
            p = random_sentence(rng)
            s = source_words(p)
            if " ".join(s) in held:
                continue
            pairs.append((tc.encode(src_index, s), tc.encode(tgt_index, target_words(p, lex))))
        return tc.make_batch(pairs, pad, pad, bos, eos)

    model = rm.Seed003Translation(
        src_vocab, tgt_vocab, src_pad_id=pad, bos_id=bos, eos_id=eos, unk_id=unk,
        name="Word reordering (wq-tutorial Translation)",
        description="A toy translation from English-like SVO sentences into a made-up verb-final language "
                    "with mirrored noun phrases: the cross-attention shows crossing word alignments.",
        **{k: st[k] for k in MODEL_KEYS})
    stats = tc.train(model, next_batch, args.steps, st["lr"], tgt_pad_id=pad, warmup=st["warmup"], log_every=250)

    n_eval = 20 if args.smoke else len(heldout)
    eval_items, eval_al = heldout[:n_eval], alignments[:n_eval]
    show = 0 if args.smoke else 3
    eval_pairs = [(tc.encode(src_index, it["src"].split()), tc.encode(tgt_index, it["tgt"].split()))
                  for it in eval_items]
    loss = tc.final_loss(model, eval_pairs, pad, pad, bos, eos)
    acc = tc.exact_match(model, eval_items, src_index, tgt_vocab, eos, show=show)
    align, align_layers = alignment_fraction(model, eval_items, eval_al, src_index, tgt_index, bos)

    path = os.path.join(args.out, NAME + ".safetensors")
    examples = [{"src": it["src"], "tgt": ""} for it in heldout[:8]]
    tc.save(model, path, {"examples": examples, "heldout_accuracy": acc}, "F32")
    tc.write_json(os.path.join(args.out, NAME + ".heldout.json"), heldout)
    _, cfg, acc_file = tc.verify_file(path, eval_items, show=show)

    print("final loss %.3g (held-out, eval mode); last 100 training steps %.3g" % (loss, stats["final_loss"]))
    print("held-out exact match (%d sentences): %.1f%% (reloaded file: %.1f%%)" % (len(eval_items), 100 * acc,
                                                                              100 * acc_file))
    print("alignment: argmax of the head-averaged cross-attention on the aligned source word, per decoder "
          "layer: %s" % ", ".join("%.1f%%" % (100 * a) for a in align_layers))
    print("parameters %d, training %.0f s, file %s (%d bytes)" % (tc.param_count(model), stats["seconds"], path,
                                                                  os.path.getsize(path)))
    ex = heldout[0]
    card = f"""# {NAME}

{cfg['description']} This is the model attnviz opens on.

- **Family:** `wq-tutorial` (old name `seed003`), model class `Translation`: the `Translation` model of
  the Chinese blog article on the Transformer's principle and source code, named after its `WQ`/`WK`/`WV`
  projections (docs/tutorials.md): biases everywhere, tanh-GELU, post-norm LayerNorm modules with the
  residual taken from the attention's query input, sinusoidal positions, `masked_fill(-1e9)`; no
  projection bias.
- **Task:** a synthetic translation between two word-level languages. The source is English-like SVO,
  `det adj* noun [adv] verb det adj* noun [prep det adj* noun]` (0-2 adjectives per noun phrase, an
  adverb in 35% and a prepositional phrase in 40% of the sentences). The target is a made-up verb-final
  language with postpositions and case markers: `NP(subject) ka [NP postposition] NP(object) ro [adv] verb`,
  every noun phrase mirrored (`noun adj2 adj1 det`). Each of the {len(src_vocab) - len(SRC_SPECIALS)} source words
  ({len(DETS)} determiners, {len(NOUNS)} nouns, {len(ADJS)} adjectives, {len(VERBS)} verbs, {len(ADVS)} adverbs,
  {len(PREPS)} prepositions) has exactly one made-up target word (generated from seed {LEXICON_SEED}); `ka` and `ro` have
  none. Example (held out):
  - `{ex['src']}`
  - `{ex['tgt']}`
- **Vocabularies:** source `<pad>` 0, `<unk>` 1, then the words; target `<pad>` 0, `<unk>` 1, `<bos>` 2,
  `<eos>` 3, `ka`, `ro`, then the words.
- **Data:** a fresh batch of {st['batch']} random sentences each step (seed {args.seed}), padded with `<pad>`;
  {len(heldout)} held-out sentences (`{NAME}.heldout.json`; the first 8 cover every construction and are
  the GUI's examples) are never used in training.
- **Training:** Adam (lr {st['lr']}, betas 0.9/0.98, warm-up {st['warmup']} steps, cosine decay to lr/20),
  gradient clipping 1.0, {stats['steps']} steps, {stats['seconds']:.0f} s on {args.threads} CPU thread(s).

## Config

{tc.describe_config(cfg)}

{tc.param_count(model)} parameters, F32.

## Results

- final loss (mean token cross-entropy on the held-out set, eval mode): {loss:.3g}
  (mean training loss of the last 100 steps: {stats['final_loss']:.3g})
- held-out exact-sequence accuracy, the model's greedy decoding: {100 * acc:.1f}% of {len(eval_items)}
  (the written file reloaded: {100 * acc_file:.1f}%)
- alignment: for {100 * align:.1f}% of the held-out target words that translate a source word, the argmax of
  the last decoder layer's cross-attention (mean over heads) is that source word
  (per decoder layer: {", ".join("%.1f%%" % (100 * a) for a in align_layers)}).

{tc.reproduce_section()}"""
    with open(os.path.join(args.out, NAME + ".md"), "w", encoding="utf-8") as f:
        f.write(card)
    if not args.smoke and acc < 0.95:
        sys.exit("reorder: below target (95% exact)")


if __name__ == "__main__":
    t0 = time.time()
    main()
    print("done in %.0f s" % (time.time() - t0))
