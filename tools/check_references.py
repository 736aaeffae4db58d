"""Check the reference cases written by make_references.py (default tests/data).

For each CASE.safetensors + CASE.ref.safetensors pair, re-read both with stio and check:
- the config and tensor shapes agree ([B, L, H, Tq, Tk], logits [B, T, V]); all values finite;
- the masks are exactly what the family's rules give for the stored inputs (key padding, causal,
  seed003's cross mask from the target pad id);
- probabilities: masked cells are 0, rows sum to 1 (a fully masked row is uniform with a finite fill,
  all zero with "-inf"), and probs == softmax(masked scores) recomputed here;
- the model file reloads (tools/reference_models.load_model) and reproduces the tensors and the greedy
  decode, i.e. the file holds exactly the weights the references were computed with.

usage: /usr/bin/python3 tools/check_references.py [DIR] [CASE ...]
"""
import glob
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_models as rm  # noqa: E402
import stio  # noqa: E402


def expected_masks(cfg, src, tgt):
    """The masks [B, Tq, Tk] (True = masked) the family applies to this padded batch."""
    src, tgt = np.asarray(src), np.asarray(tgt)
    pad = cfg.get("pad_id", 0)
    src_pad, tgt_pad = cfg.get("src_pad_id", pad), cfg.get("tgt_pad_id", pad)
    B, S = src.shape
    T = tgt.shape[1]
    causal = np.triu(np.ones((T, T), dtype=bool), k=1)
    enc = np.broadcast_to((src == src_pad)[:, None, :], (B, S, S))
    dec = causal[None] | (tgt == tgt_pad)[:, None, :]
    # seed003 builds the cross mask with the TARGET pad id applied to the source ids (a quirk)
    cross_pad = tgt_pad if cfg["family"] == "seed003" else src_pad
    cross = np.broadcast_to((src == cross_pad)[:, None, :], (B, T, S))
    return {"enc_self": enc, "dec_self": dec, "cross": cross}


def check_case(model_path, ref_path):
    problems = []

    def expect(cond, what):
        if not cond:
            problems.append(what)

    weights, meta = stio.read(model_path)
    cfg = json.loads(meta["attnviz_config"])
    ref, rmeta = stio.read(ref_path)
    inputs = json.loads(rmeta["inputs"])
    src, tgt = inputs["src_ids"], inputs["tgt_ids"]
    B, S, T = len(src), len(src[0]), len(tgt[0])
    H, V = cfg["n_heads"], len(cfg["tgt_vocab"])
    fill = cfg.get("mask_fill", -1e9)
    masks = expected_masks(cfg, src, tgt)
    for kind, L, Tq, Tk in (("enc_self", cfg["n_encoder_layers"], S, S),
                            ("dec_self", cfg["n_decoder_layers"], T, T),
                            ("cross", cfg["n_decoder_layers"], T, S)):
        scores, mask, probs = (ref["%s.%s" % (kind, k)] for k in ("scores", "mask", "probs"))
        shape = (B, L, H, Tq, Tk)
        expect(scores.shape == shape and mask.shape == shape and probs.shape == shape,
               "%s shapes %s %s %s, expected %s" % (kind, scores.shape, mask.shape, probs.shape, shape))
        if problems:
            continue
        expect(mask.dtype == np.uint8 and scores.dtype == np.float32 and probs.dtype == np.float32,
               kind + " dtypes")
        expect(np.isfinite(scores).all() and np.isfinite(probs).all(), kind + " has non-finite values")
        m = mask.astype(bool)
        want = np.broadcast_to(masks[kind][:, None, None], shape)
        expect((m == want).all(), kind + " mask differs from the family's rules")
        expect((probs[m] == 0).all(), kind + " masked cells are not 0")
        full = m.all(axis=-1)  # fully masked rows
        sums = probs.sum(axis=-1)
        expect(np.allclose(sums[~full], 1, atol=1e-5), kind + " rows do not sum to 1")
        if full.any():
            expect(fill != "-inf" or (probs[full] == 0).all(), kind + " fully masked -inf rows not zero")
        # softmax of the masked scores
        x = np.where(m, -np.inf, scores.astype(np.float64))
        x = x - np.where(full, 0, x.max(axis=-1))[..., None]
        e = np.exp(x)
        soft = e / np.where(full, 1, e.sum(axis=-1))[..., None]
        ok = np.abs(soft - probs)[~full].max() < 1e-5
        expect(ok, kind + " probs != softmax(masked scores)")
    expect(ref["logits"].shape == (B, T, V), "logits shape %s" % (ref["logits"].shape,))
    expect(np.isfinite(ref["logits"]).all(), "logits non-finite")
    g = inputs["greedy"]
    expect(len(g["out_ids"]) <= g["max_len"], "greedy output longer than max_len")
    src_pad = cfg.get("src_pad_id", cfg.get("pad_id", 0))
    unpadded = list(src[0])
    while unpadded and unpadded[-1] == src_pad:
        unpadded.pop()
    expect(g["src_ids"] == unpadded, "greedy src_ids are not the first sentence unpadded")

    # reload and recompute
    model = rm.load_model(model_path)
    expect(model.attnviz_config() == cfg, "reloaded config differs")
    again = model.trace(src, tgt)
    for k in ref:
        if k.endswith(".mask"):
            expect((again[k] == ref[k]).all(), "recomputed %s differs" % k)
        else:
            d = float(np.abs(again[k] - ref[k]).max())
            expect(d <= 1e-5 * max(1.0, float(np.abs(ref[k]).max())), "recomputed %s differs by %g" % (k, d))
    expect(model.greedy_decode(g["src_ids"], g["max_len"]) == g["out_ids"], "recomputed greedy differs")

    # parameters only F32/F16/BF16; every documented name family present
    expect(all(v.dtype in (np.float32, np.float16) for v in weights.values()), "unexpected weight dtype")
    return problems, (B, S, T, cfg)


def entropy_summary(ref):
    """Mean normalised entropy of the unmasked attention rows (0 = one-hot, 1 = uniform)."""
    out = []
    for kind in ("enc_self", "dec_self", "cross"):
        p, m = ref[kind + ".probs"].astype(np.float64), ref[kind + ".mask"].astype(bool)
        n = (~m).sum(-1)
        ok = n > 1
        h = -(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0)).sum(-1)
        out.append("%s %.2f" % (kind, float((h[ok] / np.log(n[ok])).mean())))
    return ", ".join(out)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args = sys.argv[1:]
    d = args.pop(0) if args and os.path.isdir(args[0]) else os.path.join(root, "tests", "data")
    names = args or sorted(os.path.basename(p)[:-len(".ref.safetensors")]
                           for p in glob.glob(os.path.join(d, "*.ref.safetensors")))
    failed = 0
    for name in names:
        problems, (B, S, T, cfg) = check_case(os.path.join(d, name + ".safetensors"),
                                              os.path.join(d, name + ".ref.safetensors"))
        ref, _ = stio.read(os.path.join(d, name + ".ref.safetensors"))
        status = "ok" if not problems else "FAIL: " + "; ".join(problems)
        print("%-13s %s  (entropy %s)" % (name, status, entropy_summary(ref)))
        failed += bool(problems)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
