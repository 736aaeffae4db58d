"""Check the reference cases written by make_references.py (default tests/data).

For each CASE.safetensors + CASE.ref.safetensors pair, re-read both with stio and check:
- the ref file holds exactly the kinds the architecture has (encoder-decoder: enc_self, dec_self, cross;
  encoder-only: enc_self; decoder-only: dec_self), the heads the model has (logits, class_logits) and
  hidden; the shapes agree with the config ([B, L, H, Tq, Tk], logits [B, T, V], class_logits
  [B, n_classes], hidden [B, T_out, d_model]); all values finite;
- the heads recomputed here in numpy from ``hidden`` and the file's weights give logits/class_logits;
- the masks are exactly what the family's rules give for the stored inputs (key padding, causal,
  seed003's cross mask from the target pad id);
- probabilities: masked cells are 0, rows sum to 1 (a fully masked row is uniform with a finite fill,
  all zero with "-inf" -- and with "-inf" the references must not contain one, PyTorch gives NaN there),
  and probs == softmax(masked scores) recomputed here;
- the model file reloads (tools/reference_models.load_model) and reproduces the tensors and the greedy
  decode, i.e. the file holds exactly the weights the references were computed with; tied weights
  (BertModel's decoder.weight) are stored with equal values.

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

KINDS = {"encoder-decoder": ("enc_self", "dec_self", "cross"), "encoder-only": ("enc_self",),
         "decoder-only": ("dec_self",)}


def architecture(cfg):
    fam, model = rm.family_and_model(cfg)
    if model in ("BertModel", "Classifier", "TransformerEncoder"):
        return "encoder-only"
    if model == "GPTModel":
        return "decoder-only"
    return "encoder-decoder"


def expected_masks(cfg, src, tgt):
    """The masks [B, Tq, Tk] (True = masked) the family applies to this padded batch (src or tgt may be
    None for encoder-only / decoder-only models)."""
    pad = cfg.get("pad_id", 0)
    src_pad, tgt_pad = cfg.get("src_pad_id", pad), cfg.get("tgt_pad_id", pad)
    out = {}
    if src is not None:
        src = np.asarray(src)
        B, S = src.shape
        out["enc_self"] = np.broadcast_to((src == src_pad)[:, None, :], (B, S, S))
    if tgt is not None:
        tgt = np.asarray(tgt)
        B, T = tgt.shape
        causal = np.triu(np.ones((T, T), dtype=bool), k=1)
        out["dec_self"] = causal[None] | (tgt == tgt_pad)[:, None, :]
    if src is not None and tgt is not None:
        # seed003 builds the cross mask with the TARGET pad id applied to the source ids (a quirk)
        cross_pad = tgt_pad if rm.family_and_model(cfg)[0] == "wq-tutorial" else src_pad
        out["cross"] = np.broadcast_to((src == cross_pad)[:, None, :], (B, T, S))
    return out


def _layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _linear(x, weights, name):
    y = x @ weights[name + ".weight"].astype(np.float64).T
    return y + weights[name + ".bias"] if name + ".bias" in weights else y


def heads_from_hidden(cfg, weights, hidden):
    """The output heads recomputed in numpy (float64) from ``hidden`` and the file's weights: an
    independent statement of each model's head and of what ``hidden`` is."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    h = hidden.astype(np.float64)
    fam, model = rm.family_and_model(cfg)
    linear = {("nlp-tutorial", "Transformer"): "projection", ("wq-tutorial", "Translation"): "projection",
              ("wq-tutorial", "GPTModel"): "projection",
              ("pytorch-nn-transformer", "Seq2SeqTransformer"): "generator",
              ("my-transformer", "TranslationModel"): "classification"}
    if (fam, model) in linear:
        return {"logits": _linear(h, w, linear[fam, model])}
    if model == "Classifier":  # mean over all positions, padding included
        return {"class_logits": _linear(h.mean(axis=1), w, "projection")}
    if model == "BertModel":
        x = _linear(h, w, "linear")
        x = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))  # tanh GELU
        x = _layer_norm(x, w["norm.weight"], w["norm.bias"], cfg.get("layer_norm_eps", 1e-5))
        pooled = np.tanh(_linear(h[:, 0], w, "fc"))
        return {"logits": x @ w["decoder.weight"].T + w["decoder_bias"],
                "class_logits": _linear(pooled, w, "classifier")}
    return {}  # the step-by-step encoder has no head


def check_case(model_path, ref_path):
    problems = []

    def expect(cond, what):
        if not cond:
            problems.append(what)

    weights, meta = stio.read(model_path)
    cfg = json.loads(meta["attnviz_config"])
    ref, rmeta = stio.read(ref_path)
    inputs = json.loads(rmeta["inputs"])
    arch = architecture(cfg)
    src, tgt, seg = inputs.get("src_ids"), inputs.get("tgt_ids"), inputs.get("segment_ids")
    expect((src is not None) == (arch != "decoder-only") and (tgt is not None) == (arch != "encoder-only"),
           "inputs %s do not fit a %s model" % (sorted(inputs), arch))
    if problems:
        return problems, (0, 0, 0, cfg)
    B = len(src if src is not None else tgt)
    S = len(src[0]) if src is not None else 0
    T = len(tgt[0]) if tgt is not None else 0
    if seg is not None:
        expect(np.asarray(seg).shape == (B, S), "segment_ids shape")
        expect(0 <= min(map(min, seg)) and max(map(max, seg)) < cfg.get("n_segments", 0), "segment ids range")
    H = cfg["n_heads"]
    V = len(cfg["vocab"] if "vocab" in cfg else cfg["tgt_vocab"])
    fill = cfg.get("mask_fill", -1e9)
    masks = expected_masks(cfg, src, tgt)
    kinds = KINDS[arch]
    extra = set(k.split(".")[0] for k in ref if "." in k) - set(kinds)
    expect(not extra, "unexpected kinds %s for a %s model" % (sorted(extra), arch))
    layers = {"enc_self": cfg.get("n_encoder_layers"), "dec_self": cfg.get("n_decoder_layers"),
              "cross": cfg.get("n_decoder_layers")}
    sizes = {"enc_self": (S, S), "dec_self": (T, T), "cross": (T, S)}
    for kind in kinds:
        if any("%s.%s" % (kind, k) not in ref for k in ("scores", "mask", "probs")):
            problems.append(kind + " tensors missing")
            continue
        scores, mask, probs = (ref["%s.%s" % (kind, k)] for k in ("scores", "mask", "probs"))
        shape = (B, layers[kind], H) + sizes[kind]
        if not (scores.shape == shape and mask.shape == shape and probs.shape == shape):
            problems.append("%s shapes %s %s %s, expected %s"
                            % (kind, scores.shape, mask.shape, probs.shape, shape))
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
        if fill == "-inf":
            expect(not full.any(), kind + " has fully masked rows with the -inf fill (NaN in PyTorch)")
        # softmax of the masked scores
        x = np.where(m, -np.inf, scores.astype(np.float64))
        x = x - np.where(full, 0, x.max(axis=-1))[..., None]
        e = np.exp(x)
        soft = e / np.where(full, 1, e.sum(axis=-1))[..., None]
        ok = np.abs(soft - probs)[~full].max() < 1e-5
        expect(ok, kind + " probs != softmax(masked scores)")

    # output heads and hidden
    model_name = rm.family_and_model(cfg)[1]
    T_out = S if arch == "encoder-only" else T
    heads = {"hidden": (B, T_out, cfg["d_model"])}
    if model_name not in ("TransformerEncoder", "Classifier"):
        heads["logits"] = (B, T_out, V)
    if "n_classes" in cfg:
        heads["class_logits"] = (B, cfg["n_classes"])
        expect(len(cfg.get("class_labels", [])) in (0, cfg["n_classes"]), "class_labels length")
    for k, shape in heads.items():
        expect(k in ref and ref[k].shape == shape, "%s shape %s, expected %s"
               % (k, ref[k].shape if k in ref else None, shape))
        expect(k not in ref or np.isfinite(ref[k]).all(), k + " non-finite")
    expect(set(k for k in ref if "." not in k) == set(heads),
           "output tensors %s, expected %s" % (sorted(k for k in ref if "." not in k), sorted(heads)))

    if "hidden" in ref:
        for k, v in heads_from_hidden(cfg, weights, ref["hidden"]).items():
            if k in ref and v.shape == ref[k].shape:
                d = float(np.abs(v - ref[k]).max())
                expect(d <= 1e-4 * max(1.0, float(np.abs(ref[k]).max())),
                       "%s recomputed from hidden differs by %g" % (k, d))

    g = inputs.get("greedy")
    expect((g is not None) == (arch != "encoder-only"), "greedy record present iff the model decodes")
    if g is not None:
        expect(len(g["out_ids"]) <= g["max_len"], "greedy output longer than max_len")
        if arch == "encoder-decoder":
            src_pad = cfg.get("src_pad_id", cfg.get("pad_id", 0))
            unpadded = list(src[0])
            while unpadded and unpadded[-1] == src_pad:
                unpadded.pop()
            expect(g["src_ids"] == unpadded, "greedy src_ids are not the first sentence unpadded")
        else:
            expect(cfg.get("bos_id", -1) < 0 or g["tgt_ids"][0] == cfg["bos_id"],
                   "greedy prompt does not start with bos_id")
        eos = cfg.get("eos_id", -1)
        expect(eos not in g["out_ids"][:-1], "greedy output continues after eos")

    # reload and recompute
    model = rm.load_model(model_path)
    expect(model.attnviz_config() == cfg, "reloaded config differs")
    again = model.trace(src, tgt, seg)
    expect(set(again) == set(ref), "recomputed tensors %s differ from the file's %s" % (sorted(again), sorted(ref)))
    for k in ref:
        if k not in again:
            continue
        if k.endswith(".mask"):
            expect((again[k] == ref[k]).all(), "recomputed %s differs" % k)
        else:
            d = float(np.abs(again[k] - ref[k]).max())
            expect(d <= 1e-5 * max(1.0, float(np.abs(ref[k]).max())), "recomputed %s differs by %g" % (k, d))
    if g is not None:
        ids = g["src_ids"] if arch == "encoder-decoder" else g["tgt_ids"]
        expect(model.greedy_decode(ids, g["max_len"]) == g["out_ids"], "recomputed greedy differs")

    # parameters only F32/F16/BF16; every tensor of the model's state_dict stored; tied weights equal
    expect(all(v.dtype in (np.float32, np.float16) for v in weights.values()), "unexpected weight dtype")
    expect(set(weights) == set(model.state_dict()), "tensor names differ from the model's state_dict: %s"
           % sorted(set(weights) ^ set(model.state_dict())))
    if model_name == "BertModel":
        tied = "decoder.weight" in weights and \
            np.array_equal(weights["decoder.weight"], weights["tok_embed.weight"])
        expect(tied, "decoder.weight is not tok_embed.weight")
    return problems, (B, S, T, cfg)


def entropy_summary(ref):
    """Mean normalised entropy of the unmasked attention rows (0 = one-hot, 1 = uniform)."""
    out = []
    for kind in ("enc_self", "dec_self", "cross"):
        if kind + ".probs" not in ref:
            continue
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
        print("%-23s %s  (entropy %s)" % (name, status, entropy_summary(ref)))
        failed += bool(problems)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
