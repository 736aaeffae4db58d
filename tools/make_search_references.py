"""Write the references of decoding beyond greedy and of head interventions (docs/formats.md "Search"
and "Interventions") into one file, search_references.safetensors (default: tests/data).

Beam search: written here from the definition in docs/formats.md, independently of the C++ core, on
the bundled models (resources/models) and the decoder-only test model gpt003 (tests/data). Every step
runs the PyTorch model (tools/reference_models.py) over the whole hypotheses -- no cache -- and keeps
the best candidates; the script asserts that every keep/prune decision and the final ranking are
separated by at least MARGIN in log-probability, so that float32 differences between PyTorch and the
core cannot flip them and the C++ test may compare the hypotheses exactly.

Switched-off heads: the same models with chosen heads' outputs zeroed -- a forward pre-hook zeroes the
head's slice of the context before the output projection where the tutorial calls that projection as
a module (nlp-tutorial `fc`, wq-tutorial `linear`); nn.MultiheadAttention hands out_proj.weight to a
function instead, so there the head's columns of out_proj.weight are zeroed, which is the same
product (out_proj(ctx) with ctx's slice 0). The logits and every attention block's probabilities of a
teacher-forced pass are written, with the unchanged model's logits beside them.

usage: /usr/bin/python3 tools/make_search_references.py [--out DIR]
"""
import argparse
import contextlib
import json
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import reference_models as rm  # noqa: E402
import stio  # noqa: E402

MARGIN = 1e-3  # smallest log-probability gap a decision may have (float32 drift is ~1e-5)

MODELS = {
    "reorder": os.path.join(ROOT, "resources", "models", "reorder.safetensors"),
    "reverse": os.path.join(ROOT, "resources", "models", "reverse.safetensors"),
    "toy-translation": os.path.join(ROOT, "resources", "models", "toy-translation.safetensors"),
    "gpt003": os.path.join(ROOT, "tests", "data", "gpt003.safetensors"),
}

# (model, source sentence or None, prompt words for a decoder-only model, width, length penalty,
# max_new_tokens or 0 for the default)
BEAM_CASES = [
    ("reorder", "the big dog sees a small cat", None, 1, 0.0, 0),
    ("reorder", "the big dog sees a small cat", None, 3, 0.0, 0),
    ("reorder", "my calm red sailor often visits that shy spider beside your bird", None, 4, 0.0, 0),
    ("reorder", "every rich car carries every brown king", None, 5, 1.0, 0),
    ("reverse", "a 3 b 7", None, 3, 0.0, 0),
    ("reverse", "x 1 y 2 z 3 q", None, 4, 0.6, 0),
    ("toy-translation", "ich mochte ein bier", None, 3, 0.0, 0),
    ("toy-translation", "wir mochten einen tee", None, 4, 1.0, 3),
    ("gpt003", None, "", 3, 0.0, 6),
]

# (model, source, interventions [(kind, layer, head)])
HEAD_OFF_CASES = [
    ("reorder", "the big dog sees a small cat", [("cross", 1, 0)]),
    ("reorder", "every rich car carries every brown king", [("enc_self", 0, 2), ("dec_self", 1, 3)]),
    ("reverse", "a 3 b 7 c", [("enc_self", 1, 1)]),
    ("reverse", "a 3 b 7 c", [("cross", 0, 2), ("dec_self", 0, 0)]),
    ("toy-translation", "ich mochte ein bier", [("cross", 0, 1)]),
    ("gpt003", None, [("dec_self", 0, 3)]),
]


def config_of(path):
    _, meta = stio.read(path)
    return json.loads(meta["attnviz_config"])


def source_ids(cfg, sentence):
    vocab = cfg["src_vocab"]
    ids = [vocab.index(w) for w in sentence.split()]
    if cfg.get("src_bos_eos"):
        ids = [cfg["src_bos_id"]] + ids + [cfg["src_eos_id"]]
    return ids


def target_vocab(cfg):
    return cfg.get("tgt_vocab") or cfg["vocab"]


def start_prefix(cfg, prompt):
    ids = [] if cfg.get("bos_id", -1) < 0 else [cfg["bos_id"]]
    if prompt:
        ids += [target_vocab(cfg).index(w) for w in prompt.split()]
    return ids


def positions(cfg):
    return min(cfg.get("max_len", 5000), 8192) if cfg.get("positional", "sinusoidal") == "sinusoidal" \
        else cfg.get("max_len", 5000)


def limit_of(cfg, prefix_len, src_len, max_new_tokens):
    """docs/formats.md "Decoding": positions a decode from the prefix may feed."""
    wanted = max_new_tokens if max_new_tokens > 0 else (src_len + 5 if src_len > 0 else 50)
    return max(prefix_len, min(prefix_len + wanted - 1, positions(cfg)))


def next_log_probs(model, src, hyps):
    """log softmax (float64) of the last position's logits of every hypothesis (all of one length)."""
    tgt = [list(h) for h in hyps]
    if src is None:
        out = model.trace(tgt_ids=tgt)
    else:
        out = model.trace(src_ids=[list(src)] * len(tgt), tgt_ids=tgt)
    last = torch.from_numpy(out["logits"][:, -1, :]).double()
    return torch.log_softmax(last, dim=-1).numpy()


def beam_search(model, cfg, src, prefix, width, length_penalty, max_new_tokens):
    """docs/formats.md "Search", written out: returns the finished hypotheses best first and the
    smallest margin of any decision."""
    eos = cfg.get("eos_id", -1)
    limit = limit_of(cfg, len(prefix), 0 if src is None else len(src), max_new_tokens)
    live = [(list(prefix), 0.0)]  # (ids from the start, score)
    final = []
    slots = width
    margin = math.inf
    while slots > 0 and live:
        lps = next_log_probs(model, src, [h for h, _ in live])
        cands = []
        for li, (h, score) in enumerate(live):
            for v in range(lps.shape[1]):
                cands.append((score + float(lps[li, v]), li, v))
        cands.sort(key=lambda c: (-c[0], c[1], c[2]))
        keep = min(slots, len(cands))
        if keep < len(cands):
            margin = min(margin, cands[keep - 1][0] - cands[keep][0])
        nxt = []
        for score, li, v in cands[:keep]:
            ids = live[li][0] + [v]
            fed = len(live[li][0])  # positions fed before this choice: every id of the parent
            step = len(ids) - len(prefix)
            if v == eos or fed >= limit:
                final.append({"ids": ids[len(prefix):], "score": score,
                              "ranked": score / (step ** length_penalty),
                              "state": "finished" if v == eos else "cut"})
                slots -= 1
            else:
                nxt.append((ids, score))
        live = nxt
    final.sort(key=lambda f: -f["ranked"])  # stable: ties keep their order of creation
    for a, b in zip(final, final[1:]):
        margin = min(margin, a["ranked"] - b["ranked"])
    return final, margin


# ---- switched-off heads -------------------------------------------------------------------------

def attention_module(model, kind, layer):
    """(module, how): the tutorial's attention module of a block and how to switch a head off."""
    if isinstance(model, rm.TorchSeq2Seq):
        stack = model.transformer.encoder if kind == "enc_self" else model.transformer.decoder
        lay = stack.layers[layer]
        return (lay.multihead_attn if kind == "cross" else lay.self_attn), "out_proj_columns"
    if kind == "enc_self":
        mod = model.encoder.layers[layer].enc_self_attn
    elif kind == "dec_self":
        mod = model.decoder.layers[layer].dec_self_attn
    else:
        mod = model.decoder.layers[layer].dec_enc_attn
    return mod, ("fc" if hasattr(mod, "fc") else "linear")


@contextlib.contextmanager
def heads_off(model, interventions, d_v):
    handles, saved = [], []
    try:
        for kind, layer, head in interventions:
            mod, how = attention_module(model, kind, layer)
            lo, hi = head * d_v, (head + 1) * d_v
            if how == "out_proj_columns":
                w = mod.out_proj.weight
                saved.append((w, w.detach().clone()))
                with torch.no_grad():
                    w[:, lo:hi] = 0.0
            else:
                def pre(_module, inputs, lo=lo, hi=hi):
                    ctx = inputs[0].clone()
                    ctx[..., lo:hi] = 0.0
                    return (ctx,) + tuple(inputs[1:])
                handles.append(getattr(mod, how).register_forward_pre_hook(pre))
        yield
    finally:
        for h in handles:
            h.remove()
        with torch.no_grad():
            for w, orig in saved:
                w.copy_(orig)


def greedy_target(model, cfg, src, prefix, max_new_tokens):
    """The positions a greedy decode feeds: the prefix and every chosen id but the last."""
    final, _ = beam_search(model, cfg, src, prefix, 1, 0.0, max_new_tokens)
    return prefix + final[0]["ids"][:-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    models = {name: rm.load_model(path) for name, path in MODELS.items()}
    configs = {name: config_of(path) for name, path in MODELS.items()}

    beams = []
    for name, sentence, prompt, width, alpha, max_new in BEAM_CASES:
        cfg, model = configs[name], models[name]
        src = None if sentence is None else source_ids(cfg, sentence)
        prefix = start_prefix(cfg, prompt)
        final, margin = beam_search(model, cfg, src, prefix, width, alpha, max_new)
        assert margin >= MARGIN, "%s %r width %d: a decision is only %g apart" % (name, sentence, width, margin)
        beams.append({"model": name, "src_ids": src or [], "prefix": prefix, "width": width,
                      "length_penalty": alpha, "max_new_tokens": max_new, "margin": margin, "final": final})
        vocab = target_vocab(cfg)
        print("beam %-16s w=%d a=%.1f margin %.4f best: %s (%.4f)" % (
            name, width, alpha, margin, " ".join(vocab[i] for i in final[0]["ids"]), final[0]["score"]))

    tensors, offs = {}, []
    for n, (name, sentence, ivs) in enumerate(HEAD_OFF_CASES):
        cfg, model = configs[name], models[name]
        src = None if sentence is None else source_ids(cfg, sentence)
        tgt = greedy_target(model, cfg, src, start_prefix(cfg, ""), 0 if src else 8)
        kw = {"tgt_ids": [tgt]} if src is None else {"src_ids": [src], "tgt_ids": [tgt]}
        base = model.trace(**kw)
        d_v = cfg.get("d_v", cfg["d_model"] // cfg["n_heads"])
        with heads_off(model, ivs, d_v):
            out = model.trace(**kw)
        after = model.trace(**kw)
        assert np.array_equal(after["logits"], base["logits"]), "the model was not restored"
        key = "head_off.%d" % n
        tensors[key + ".logits"] = out["logits"][0]
        tensors[key + ".base_logits"] = base["logits"][0]
        for kind in ("enc_self", "dec_self", "cross"):
            if kind + ".probs" in out:
                tensors[key + "." + kind + ".probs"] = out[kind + ".probs"][0]  # [L, H, Tq, Tk]
        change = float(np.abs(out["logits"] - base["logits"]).max())
        offs.append({"model": name, "src_ids": src or [], "tgt_ids": tgt,
                     "interventions": [{"kind": k, "layer": l, "head": h} for k, l, h in ivs],
                     "tensors": key, "logit_change": change})
        print("head-off %-16s %s: logits change by up to %.4f" % (name, ivs, change))

    meta = {"beam": json.dumps(beams), "head_off": json.dumps(offs),
            "made_by": "tools/make_search_references.py"}
    path = os.path.join(args.out, "search_references.safetensors")
    stio.write(path, {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()}, meta)
    print("wrote", path)


if __name__ == "__main__":
    main()
