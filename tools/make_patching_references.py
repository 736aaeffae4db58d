"""Write PyTorch references for activation patching (core/model/patching.h, tests/test_patching.cpp), for an
encoder-decoder (PyTorch's translation tutorial on nn.Transformer, post-norm), a decoder-only model (nanoGPT) and
an encoder-only masked LM (the wq-tutorial BertModel).

A clean and a corrupted input differ in one token. The metric m = logit[answer] - logit[foil] at the explained
position (answer: the clean run's argmax there; foil: the corrupted run's argmax, or its runner-up when that is
the answer). For every cell a patched run of the corrupted input, with one activation replaced by the clean
run's, gives m(patched):
  residual_enc [Le+1, S], residual_dec [Ld+1, T]   the stream leaving layer l (row 0: the embeddings, the first
                                                   layer's input) replaced at one position
  heads_enc_self, heads_dec_self, heads_cross [L, H]  one head's output (its slice of the context before W_O)
                                                   replaced at every position
The patches are made by hooks on the models' own modules (nanoGPT: a forward pre-hook on the first block, forward
hooks on the blocks, pre-hooks on attn.c_proj; BERT: the same on its layers and enc_self_attn.linear). For
nn.Transformer, whose heads' context is not a module's input, the layers run from their weights as in
make_lens_references.py, checked equal to the real nn.Transformer's logits without a patch.

For every case this writes the model (CASE.safetensors, or nanoGPT's CASE/out/ckpt.pt) and CASE.patch.safetensors
with NAME.metric [rows, cols] for each heatmap; __metadata__: "model", "clean" and "corrupted" (inputs as
src_ids / tgt_ids / segment_ids of one sentence), "position", "answer", "foil", "clean_metric",
"corrupted_metric".

usage: /usr/bin/python3 tools/make_patching_references.py --out DIR
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_lens_references as ml  # noqa: E402
import make_references as mr  # noqa: E402
import reference_models as rm  # noqa: E402
import stio  # noqa: E402
import tutorial_models as tm  # noqa: E402

torch.set_num_threads(1)


def _identity(key, x):
    return x


def _top_except(row, except_id):
    """The argmax of a logits row other than except_id, checked clear of the next by 1e-3 (so float rounding
    cannot change which token attnviz picks)."""
    order = torch.argsort(row, descending=True).tolist()
    order = [i for i in order if i != except_id]
    assert float(row[order[0]] - row[order[1]]) > 1e-3, "a near tie: pick other inputs"
    return order[0]


def sweep(run, clean, corrupted, position, maps, n_heads):
    """run(inputs, cb) -> logits [n, V] of the stack that reads them; cb(key, x [len, width]) -> x is called for
    every patchable activation: ("stream", side, row) and ("heads", block, layer). maps: [(name, side or block,
    rows, cols, heads?)]. Returns the metadata and the tensors."""
    store = {}

    def capture(key, x):
        store[key] = x.detach().clone()
        return x
    clean_logits = run(clean, capture)
    corrupted_logits = run(corrupted, _identity)
    answer = _top_except(clean_logits[position], -1)
    foil = _top_except(corrupted_logits[position], answer)

    def metric(logits):
        return float(logits[position, answer] - logits[position, foil])
    m_clean, m_corrupted = metric(clean_logits), metric(corrupted_logits)
    assert abs(m_clean - m_corrupted) > 0.2, ("the corruption changes too little: pick other inputs", m_clean, m_corrupted)
    tensors = {}
    for name, what, rows, cols, heads in maps:
        out = torch.zeros(rows, cols, dtype=torch.float64)
        for r in range(rows):
            for j in range(cols):
                key = ("heads", what, r) if heads else ("stream", what, r)
                source = store[key]

                def patch(k, x, key=key, source=source, j=j):
                    if k != key:
                        return x
                    y = x.clone()
                    if heads:
                        dv = x.shape[-1] // n_heads
                        y[:, j * dv:(j + 1) * dv] = source[:, j * dv:(j + 1) * dv]
                    else:
                        y[j] = source[j]
                    return y
                out[r, j] = metric(run(corrupted, patch))
        tensors[name + ".metric"] = out.float()
    meta = {"clean": clean, "corrupted": corrupted, "position": position, "answer": answer, "foil": foil,
            "clean_metric": m_clean, "corrupted_metric": m_corrupted}
    return meta, tensors


def _write(out, case, model_file, meta, tensors):
    meta = dict(meta, model=model_file)
    stio.write(os.path.join(out, case + ".patch.safetensors"), tensors, {k: json.dumps(v) for k, v in meta.items()})
    print("%-10s m(clean) %.4f, m(corrupted) %.4f, %s" % (
        case, meta["clean_metric"], meta["corrupted_metric"],
        ", ".join("%s %s" % (k, list(v.shape)) for k, v in tensors.items())))


def _as_rows(x):
    """A batch-of-one activation ([1, n, w] or [n, 1, w]) as [n, w], and the way back."""
    shape = x.shape
    return x.reshape(-1, shape[-1]), lambda y: y.reshape(shape)


# ---- PyTorch's translation tutorial (nn.Transformer, sequence-first), its layers from their weights ----
def torch_seq2seq(out, case):
    model, dtype, _, _ = mr._build(case)
    rm.save_model(model, os.path.join(out, case + ".safetensors"), dtype)
    tr = model.transformer

    def run(inputs, cb):
        src = torch.tensor([inputs["src_ids"]]).T  # [S, 1]
        tgt = torch.tensor([inputs["tgt_ids"]]).T  # [T, 1]
        S, T = src.shape[0], tgt.shape[0]
        enc_mask = torch.zeros(1, S, S, dtype=torch.bool)
        self_mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1).unsqueeze(0)
        cross_mask = torch.zeros(1, T, S, dtype=torch.bool)

        def hook(key, x):
            rows, back = _as_rows(x)
            return back(cb(key, rows))

        def attend(key, mha, xq, xkv, mask):
            ctx = hook(key, ml._mha(mha, xq, xkv, mask)[1])
            return torch.nn.functional.linear(ctx, mha.out_proj.weight, mha.out_proj.bias)

        def layer_run(layer, x, blocks):
            for key, mha, norm, memory, mask in blocks:
                if layer.norm_first:
                    h = norm(x)
                    x = x + attend(key, mha, h, h if memory is None else memory, mask)
                else:
                    x = norm(x + attend(key, mha, x, x if memory is None else memory, mask))
            ff = layer.norm3 if hasattr(layer, "multihead_attn") else layer.norm2
            f_in = ff(x) if layer.norm_first else x
            f = layer.linear2(layer.activation(layer.linear1(f_in)))
            return x + f if layer.norm_first else ff(x + f)

        memory = hook(("stream", "enc", 0), model._pos(model.src_tok_emb(src), "src"))
        for n, layer in enumerate(tr.encoder.layers):
            memory = layer_run(layer, memory, [(("heads", "enc_self", n), layer.self_attn, layer.norm1, None,
                                                enc_mask)])
            memory = hook(("stream", "enc", n + 1), memory)
        memory = tr.encoder.norm(memory)
        x = hook(("stream", "dec", 0), model._pos(model.tgt_tok_emb(tgt), "tgt"))
        for n, layer in enumerate(tr.decoder.layers):
            x = layer_run(layer, x, [(("heads", "dec_self", n), layer.self_attn, layer.norm1, None, self_mask),
                                     (("heads", "cross", n), layer.multihead_attn, layer.norm2, memory,
                                      cross_mask)])
            x = hook(("stream", "dec", n + 1), x)
        return model.generator(tr.decoder.norm(x))[:, 0]  # [T, V]

    clean = {"src_ids": [2, 4, 5, 7, 9, 6, 10, 3], "tgt_ids": [2, 4, 5, 7, 4, 6, 9]}
    corrupted = {"src_ids": [2, 4, 6, 7, 9, 5, 10, 3], "tgt_ids": clean["tgt_ids"]}  # mann <-> hund
    with torch.no_grad():
        real = torch.tensor(model.trace([clean["src_ids"]], [clean["tgt_ids"]])["logits"])[0]
        assert (run(clean, _identity) - real).abs().max() <= 1e-5, "the layers from their weights differ"
        H = tr.encoder.layers[0].self_attn.num_heads
        Le, Ld = len(tr.encoder.layers), len(tr.decoder.layers)
        S, T = len(clean["src_ids"]), len(clean["tgt_ids"])
        maps = [("residual_enc", "enc", Le + 1, S, False), ("residual_dec", "dec", Ld + 1, T, False),
                ("heads_enc_self", "enc_self", Le, H, True), ("heads_dec_self", "dec_self", Ld, H, True),
                ("heads_cross", "cross", Ld, H, True)]
        meta, tensors = sweep(run, clean, corrupted, T - 1, maps, H)
    _write(out, case, case + ".safetensors", meta, tensors)


# ---- nanoGPT (tutorial_models.NanoGPT): hooks on its blocks and attention output projections ----
def nanogpt(out, case):
    args = dict(n_layer=3, n_head=4, n_embd=32, block_size=16, bias=True, vocab_size=37, dropout=0.0)
    model = tm.init_peaked_(tm.NanoGPT(args["block_size"], args["vocab_size"], args["n_layer"],
                                       args["n_head"], args["n_embd"], bias=True), 27)
    model.eval()
    os.makedirs(os.path.join(out, case, "out"), exist_ok=True)
    torch.save({"model": model.state_dict(), "model_args": args, "iter_num": 0},
               os.path.join(out, case, "out", "ckpt.pt"))
    blocks = model.transformer.h

    def run(inputs, cb):
        def patched(key, x):
            rows, back = _as_rows(x)
            return back(cb(key, rows))
        hooks = [blocks[0].register_forward_pre_hook(lambda m, a: (patched(("stream", "dec", 0), a[0]),))]
        for n, block in enumerate(blocks):
            hooks.append(block.register_forward_hook(
                lambda m, a, o, n=n: patched(("stream", "dec", n + 1), o)))
            hooks.append(block.attn.c_proj.register_forward_pre_hook(
                lambda m, a, n=n: (patched(("heads", "dec_self", n), a[0]),)))
        try:
            return model(torch.tensor([inputs["tgt_ids"]]))[0][0]
        finally:
            for h in hooks:
                h.remove()

    clean = {"tgt_ids": [5, 9, 1, 30, 22, 7, 3, 18, 11, 4]}
    corrupted = {"tgt_ids": [5, 9, 1, 12, 22, 7, 3, 18, 11, 4]}
    L, H, T = args["n_layer"], args["n_head"], len(clean["tgt_ids"])
    with torch.no_grad():
        maps = [("residual_dec", "dec", L + 1, T, False), ("heads_dec_self", "dec_self", L, H, True)]
        meta, tensors = sweep(run, clean, corrupted, T - 1, maps, H)
    _write(out, case, case + "/out/ckpt.pt", meta, tensors)


# ---- the wq-tutorial BertModel: hooks on its layers and its attention output projections ----
def bert003(out, case):
    model, dtype, _, _ = mr._build(case)
    rm.save_model(model, os.path.join(out, case + ".safetensors"), dtype)
    layers = model.layers

    def run(inputs, cb):
        def patched(key, x):
            rows, back = _as_rows(x)
            return back(cb(key, rows))
        hooks = [layers[0].register_forward_pre_hook(
            lambda m, a: (patched(("stream", "enc", 0), a[0]),) + tuple(a[1:]))]
        for n, layer in enumerate(layers):
            hooks.append(layer.register_forward_hook(
                lambda m, a, o, n=n: (patched(("stream", "enc", n + 1), o[0]),) + tuple(o[1:])))
            hooks.append(layer.enc_self_attn.linear.register_forward_pre_hook(
                lambda m, a, n=n: (patched(("heads", "enc_self", n), a[0]),)))
        try:
            ids = torch.tensor([inputs["src_ids"]])
            return model(ids, torch.tensor([inputs["segment_ids"]]))[0][0]
        finally:
            for h in hooks:
                h.remove()

    # [CLS] hello [MASK] are you [SEP] i am fine [SEP]; corrupted: "thanks" for "i"; explained: the [MASK]
    seg = [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    clean = {"src_ids": [1, 4, 3, 6, 7, 2, 8, 9, 10, 2], "segment_ids": seg}
    corrupted = {"src_ids": [1, 4, 3, 6, 7, 2, 11, 9, 10, 2], "segment_ids": seg}
    L, H, S = len(layers), layers[0].enc_self_attn.n_heads, len(seg)
    with torch.no_grad():
        maps = [("residual_enc", "enc", L + 1, S, False), ("heads_enc_self", "enc_self", L, H, True)]
        meta, tensors = sweep(run, clean, corrupted, 2, maps, H)
    _write(out, case, case + ".safetensors", meta, tensors)


CASES = {"torch_post": torch_seq2seq, "nanogpt": nanogpt, "bert003": bert003}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output directory")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for case, make in CASES.items():
        make(args.out, case)


if __name__ == "__main__":
    main()
