"""Write PyTorch references for the logit lens and the direct logit contributions (core/model/lens.h,
tests/test_lens.cpp), for an encoder-decoder (PyTorch's translation tutorial on nn.Transformer, pre-norm
and post-norm), decoder-only models (nanoGPT with its tied lm_head; llama2.c: RMSNorm, rotary, grouped-query attention,
SwiGLU; the wq-tutorial GPTModel, post-norm)
and an encoder-only masked LM (the wq-tutorial BertModel and its MLM head).

For every case this writes the model (CASE.safetensors, or nanoGPT's CASE/out/ckpt.pt as train.py saves
it) and CASE.lens.safetensors:
  lens.logits [B, L+1, n, V]  row 0: the stack's embeddings (its first layer's input), row l: the
                              stream leaving layer l (pre-norm: x + attention + feed-forward; post-norm:
                              the block's output), each through the stack's final norm (when the model
                              has one) and the token head -- computed here by hooks on the model's own
                              modules, the last row checked equal to the model's logits
  cI.self, cI.cross [L, H]    direct contribution of every head (its context slice through its slice of
                              W_O), cI.ffn [L] of every feed-forward block without its bias,
                              cI.token_embedding, cI.positions (none with rotary positions), cI.logit
                              (the model's own) [1] -- for the pre-norm cases, with the final
                              LayerNorm's (RMSNorm's) 1/sigma frozen at the input
__metadata__: "inputs" (the batch), "model" (the file), "contributions" [{sentence, position, token,
versus}] (token: the argmax at that position; versus: the runner-up or -1).

The contributions are computed from the definitions in float64 (u = W_U[token] - W_U[versus];
g = P(u * gamma) / sigma, P the centering; part = g . piece), and the script checks that the parts plus
the biases sum to the model's logit.

usage: /usr/bin/python3 tools/make_lens_references.py --out DIR
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_references as mr  # noqa: E402
import reference_models as rm  # noqa: E402
import stio  # noqa: E402
import tutorial_models as tm  # noqa: E402

torch.set_num_threads(1)


def _heads_out(ctx, w_o, H):
    """ctx [..., H*dv] -> each head's output through its slice of W_O [d, H*dv]: [..., H, d]."""
    dv = ctx.shape[-1] // H
    return torch.stack([ctx[..., h * dv:(h + 1) * dv] @ w_o[:, h * dv:(h + 1) * dv].T for h in range(H)], -2)


def _contribution(spec, pieces, final_stream, gamma, beta, eps, w_u, b_u, logits, rms=False):
    """The parts of logit[token] (- logit[versus]) at (sentence, position), float64; returns the tensors
    of case entry cI and checks that they and the biases add up to the model's logit. rms: the final
    norm is an RMSNorm (no centering, sigma the root mean square)."""
    b, i, t, v = spec["sentence"], spec["position"], spec["token"], spec["versus"]
    u = w_u[t].double() - (w_u[v].double() if v >= 0 else 0)
    x = final_stream[b, i].double()
    sigma = torch.sqrt((x.pow(2).mean() if rms else x.var(unbiased=False)) + eps)
    g = u * gamma.double() / sigma
    if not rms:
        g = g - g.mean()

    def part(vec):
        return float(g @ vec[b, i].double())

    out = {"self": torch.tensor([[part(h) for h in layer] for layer in pieces["self"]]),
           "ffn": torch.tensor([part(f) for f in pieces["ffn"]]),
           "token_embedding": torch.tensor([part(pieces["token_embedding"])])}
    if pieces.get("positions") is not None:
        out["positions"] = torch.tensor([part(pieces["positions"])])
    if pieces.get("cross"):
        out["cross"] = torch.tensor([[part(h) for h in layer] for layer in pieces["cross"]])
    biases = float(u @ beta.double()) if beta is not None else 0.0
    if b_u is not None:
        biases += float(b_u[t]) - (float(b_u[v]) if v >= 0 else 0.0)
    biases += sum(float(g @ bias.double()) for bias in pieces["biases"])
    logit = float(logits[b, i, t]) - (float(logits[b, i, v]) if v >= 0 else 0.0)
    total = sum(float(x.sum()) for x in out.values()) + biases
    assert abs(total - logit) <= 1e-4 * max(1.0, abs(logit)), (total, logit)
    out["logit"] = torch.tensor([logit])
    return {k: x.float() for k, x in out.items()}


def _specs(logits, ids, pad):
    """Two explanations: sentence 0 at its last real position (the argmax), sentence 1 at its last real
    position (argmax versus the runner-up)."""
    specs = []
    for b, versus in ((0, False), (1, True)):
        row = list(ids[b])
        i = len(row) - 1
        while i > 0 and row[i] == pad:
            i -= 1
        top2 = torch.topk(logits[b, i], 2).indices
        specs.append({"sentence": b, "position": i, "token": int(top2[0]),
                      "versus": int(top2[1]) if versus else -1})
    return specs


def _write(out, case, rows, logits, meta, contributions=None):
    """rows: [L+1] tensors [B, n, V] of the lens; checks the last against the model's logits."""
    lens = torch.stack(rows, 1).float()
    diff = (lens[:, -1] - logits).abs().max().item()
    assert diff <= 1e-5, "%s: the lens's last row differs from the logits by %g" % (case, diff)
    tensors = {"lens.logits": lens}
    for n, parts in enumerate(contributions or []):
        for k, x in parts.items():
            tensors["c%d.%s" % (n, k)] = x
    stio.write(os.path.join(out, case + ".lens.safetensors"), tensors,
               {k: json.dumps(x) for k, x in meta.items()})
    print("%-10s lens %s, %d contributions" % (case, list(lens.shape), len(contributions or [])))


# ---- PyTorch's translation tutorial (nn.Transformer, sequence-first) ----
def _mha(mha, xq, xkv, mask):
    """nn.MultiheadAttention from its weights: output [T, B, E] and the context [T, B, E] before W_O."""
    Tq, B, E = xq.shape
    H = mha.num_heads
    hd = E // H
    w, bias = mha.in_proj_weight, mha.in_proj_bias
    q = F.linear(xq, w[:E], bias[:E])
    k = F.linear(xkv, w[E:2 * E], bias[E:2 * E])
    v = F.linear(xkv, w[2 * E:], bias[2 * E:])

    def split(x):
        return x.reshape(x.shape[0], B * H, hd).transpose(0, 1)  # [B*H, T, hd]
    scores = split(q) @ split(k).transpose(1, 2) / math.sqrt(hd)
    m = mask.unsqueeze(1).expand(B, H, Tq, xkv.shape[0]).reshape(B * H, Tq, -1)
    probs = torch.softmax(scores.masked_fill(m, float("-inf")), -1)
    ctx = (probs @ split(v)).transpose(0, 1).reshape(Tq, B, E)
    return F.linear(ctx, mha.out_proj.weight, mha.out_proj.bias), ctx


def torch_seq2seq(out, case):
    model, dtype, inputs, _ = mr._build(case)
    rm.save_model(model, os.path.join(out, case + ".safetensors"), dtype)
    src = torch.tensor(inputs["src_ids"]).T  # [S, B]
    tgt = torch.tensor(inputs["tgt_ids"]).T  # [T, B]
    S, B = src.shape
    T = tgt.shape[0]
    src_pad = (src == model.pad_id).T
    tgt_pad = (tgt == model.pad_id).T
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    tr = model.transformer
    with torch.no_grad():
        logits = model.trace(inputs["src_ids"], inputs["tgt_ids"])["logits"]
        logits = torch.tensor(logits)  # [B, T, V], the real nn.Transformer's
        memory = model._pos(model.src_tok_emb(src), "src")  # the encoder, from its weights
        enc_mask = src_pad.unsqueeze(1).expand(B, S, S)
        for layer in tr.encoder.layers:
            if layer.norm_first:
                h = layer.norm1(memory)
                memory = memory + _mha(layer.self_attn, h, h, enc_mask)[0]
                memory = memory + layer.linear2(layer.activation(layer.linear1(layer.norm2(memory))))
            else:
                memory = layer.norm1(memory + _mha(layer.self_attn, memory, memory, enc_mask)[0])
                memory = layer.norm2(memory + layer.linear2(layer.activation(layer.linear1(memory))))
        memory = tr.encoder.norm(memory)
        tok = model.tgt_tok_emb(tgt)
        x = model._pos(tok, "tgt")
        streams = [x]
        pieces = {"self": [], "cross": [], "ffn": [], "biases": [], "token_embedding": tok.transpose(0, 1),
                  "positions": (x - tok).transpose(0, 1)}
        self_mask = causal.unsqueeze(0) | tgt_pad.unsqueeze(1)
        cross_mask = src_pad.unsqueeze(1).expand(B, T, S)
        for layer in tr.decoder.layers:
            H = layer.self_attn.num_heads
            blocks = [(layer.self_attn, layer.norm1, None, self_mask, "self"),
                      (layer.multihead_attn, layer.norm2, memory, cross_mask, "cross")]
            for mha, norm, kv, mask, key in blocks:
                if layer.norm_first:
                    h = norm(x)
                    a, ctx = _mha(mha, h, h if kv is None else kv, mask)
                    x = x + a
                else:
                    a, ctx = _mha(mha, x, x if kv is None else kv, mask)
                    x = norm(x + a)
                heads = _heads_out(ctx, mha.out_proj.weight, H).transpose(0, 1)  # [B, T, H, E]
                pieces[key].append([heads[:, :, h] for h in range(H)])
                pieces["biases"].append(mha.out_proj.bias)
            ff_in = layer.norm3(x) if layer.norm_first else x
            f = layer.linear2(layer.activation(layer.linear1(ff_in)))
            x = x + f if layer.norm_first else layer.norm3(x + f)
            pieces["ffn"].append((f - layer.linear2.bias).transpose(0, 1))
            pieces["biases"].append(layer.linear2.bias)
            streams.append(x)
        norm = tr.decoder.norm
        rows = [model.generator(norm(s)).transpose(0, 1) for s in streams]
        meta = {"inputs": inputs, "model": case + ".safetensors"}
        contributions = []
        if model.norm_first:
            meta["contributions"] = _specs(logits, inputs["tgt_ids"], model.pad_id)
            final = streams[-1].transpose(0, 1)
            for spec in meta["contributions"]:
                contributions.append(_contribution(
                    spec, pieces, final, norm.weight, norm.bias, norm.eps, model.generator.weight,
                    model.generator.bias, logits))
        _write(out, case, rows, logits, meta, contributions)


# ---- nanoGPT (karpathy/nanoGPT model.py; tutorial_models.NanoGPT): pre-norm, ln_f, tied lm_head ----
def build_nanogpt(out, case):
    """The nanoGPT case's model, saved as train.py saves it (CASE/out/ckpt.pt); its args and batch."""
    args = dict(n_layer=3, n_head=4, n_embd=32, block_size=16, bias=True, vocab_size=37, dropout=0.0)
    model = tm.init_peaked_(tm.NanoGPT(args["block_size"], args["vocab_size"], args["n_layer"],
                                       args["n_head"], args["n_embd"], bias=True), 25)
    model.eval()
    os.makedirs(os.path.join(out, case, "out"), exist_ok=True)
    torch.save({"model": model.state_dict(), "model_args": args, "iter_num": 0},
               os.path.join(out, case, "out", "ckpt.pt"))
    return model, args, [[5, 9, 1, 30, 22, 7, 3, 18], [36, 2, 11, 4, 27, 14, 8, 20]]


def nanogpt(out, case):
    model, args, ids = build_nanogpt(out, case)
    idx = torch.tensor(ids)
    B, T = idx.shape
    captured = {}
    hooks = []
    for n, block in enumerate(model.transformer.h):
        hooks.append(block.register_forward_hook(lambda m, i, o, n=n: captured.__setitem__(("x", n), o)))
        hooks.append(block.attn.c_proj.register_forward_pre_hook(
            lambda m, i, n=n: captured.__setitem__(("ctx", n), i[0])))
        hooks.append(block.mlp.c_proj.register_forward_hook(
            lambda m, i, o, n=n: captured.__setitem__(("ffn", n), o)))
    with torch.no_grad():
        logits, _ = model(idx)
        for h in hooks:
            h.remove()
        tok = model.transformer.wte(idx)
        pos = model.transformer.wpe(torch.arange(T)).expand(B, T, -1)
        streams = [tok + pos] + [captured[("x", n)] for n in range(args["n_layer"])]
        ln_f = model.transformer.ln_f
        rows = [model.lm_head(ln_f(s)) for s in streams]
        pieces = {"self": [], "ffn": [], "biases": [], "token_embedding": tok, "positions": pos}
        for n, block in enumerate(model.transformer.h):
            heads = _heads_out(captured[("ctx", n)], block.attn.c_proj.weight, args["n_head"])
            pieces["self"].append([heads[:, :, h] for h in range(args["n_head"])])
            pieces["biases"].append(block.attn.c_proj.bias)
            pieces["ffn"].append(captured[("ffn", n)] - block.mlp.c_proj.bias)
            pieces["biases"].append(block.mlp.c_proj.bias)
        meta = {"inputs": {"tgt_ids": ids}, "model": case + "/out/ckpt.pt",
                "contributions": _specs(logits, ids, -1)}
        contributions = [_contribution(s, pieces, streams[-1], ln_f.weight, ln_f.bias, 1e-5,
                                       model.lm_head.weight, None, logits)
                         for s in meta["contributions"]]
        _write(out, case, rows, logits, meta, contributions)


# ---- llama2.c (tutorial_models.Llama2c): RMSNorm, rotary positions, grouped-query attention, SwiGLU,
# no biases, output tied to the token table ----
def build_llama2c(out, case):
    """The llama2.c case's model, saved as train.py saves it (CASE/out/ckpt.pt); its args and batch."""
    args = dict(dim=32, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=48, multiple_of=16,
                max_seq_len=32, dropout=0.0)
    model = tm.init_peaked_(tm.Llama2c(args), 26)
    model.eval()
    os.makedirs(os.path.join(out, case, "out"), exist_ok=True)
    torch.save({"model": model.state_dict(), "model_args": args, "iter_num": 0},
               os.path.join(out, case, "out", "ckpt.pt"))
    return model, args, [[1, 40, 7, 22, 13, 30, 5, 9, 44], [1, 3, 18, 18, 27, 2, 35, 11, 6]]


def llama2c(out, case):
    model, args, ids = build_llama2c(out, case)
    idx = torch.tensor(ids)
    captured = {}
    hooks = []
    for n, layer in enumerate(model.layers):
        hooks.append(layer.register_forward_hook(lambda m, i, o, n=n: captured.__setitem__(("x", n), o)))
        hooks.append(layer.attention.wo.register_forward_pre_hook(
            lambda m, i, n=n: captured.__setitem__(("ctx", n), i[0])))
        hooks.append(layer.feed_forward.w2.register_forward_hook(
            lambda m, i, o, n=n: captured.__setitem__(("ffn", n), o)))
    with torch.no_grad():
        logits, _ = model(idx)
        for h in hooks:
            h.remove()
        tok = model.tok_embeddings(idx)
        streams = [tok] + [captured[("x", n)] for n in range(args["n_layers"])]
        rows = [model.output(model.norm(s)) for s in streams]
        pieces = {"self": [], "ffn": [], "biases": [], "token_embedding": tok, "positions": None}
        for n, layer in enumerate(model.layers):
            heads = _heads_out(captured[("ctx", n)], layer.attention.wo.weight, args["n_heads"])
            pieces["self"].append([heads[:, :, h] for h in range(args["n_heads"])])
            pieces["ffn"].append(captured[("ffn", n)])
        meta = {"inputs": {"tgt_ids": ids}, "model": case + "/out/ckpt.pt",
                "contributions": _specs(logits, ids, -1)}
        contributions = [_contribution(s, pieces, streams[-1], model.norm.weight, None, model.norm.eps,
                                       model.output.weight, None, logits, rms=True)
                         for s in meta["contributions"]]
        _write(out, case, rows, logits, meta, contributions)


# ---- the wq-tutorial models (post-norm: LayerNorm inside each sublayer) ----
def _stream_hooks(layers):
    captured = []
    hooks = [layer.register_forward_hook(lambda m, i, o: captured.append(o[0])) for layer in layers]
    return captured, hooks


def gpt003(out, case):
    model, dtype, inputs, _ = mr._build(case)
    rm.save_model(model, os.path.join(out, case + ".safetensors"), dtype)
    ids = torch.tensor(inputs["tgt_ids"])
    dec = model.decoder
    captured, hooks = _stream_hooks(dec.layers)
    with torch.no_grad():
        logits, _ = model(ids)
        for h in hooks:
            h.remove()
        streams = [dec.pos_emb(dec.tgt_emb(ids))] + captured
        rows = [model.projection(s) for s in streams]  # no final norm
        _write(out, case, rows, logits, {"inputs": inputs, "model": case + ".safetensors"})


def bert003(out, case):
    model, dtype, inputs, _ = mr._build(case)
    rm.save_model(model, os.path.join(out, case + ".safetensors"), dtype)
    ids, seg = torch.tensor(inputs["src_ids"]), torch.tensor(inputs["segment_ids"])
    captured, hooks = _stream_hooks(model.layers)
    with torch.no_grad():
        logits, _, _ = model(ids, seg)
        for h in hooks:
            h.remove()
        streams = [model.pos_embed(model.tok_embed(ids) + model.seg_embed(seg))] + captured
        # the masked-LM head: decoder(norm(gelu(linear(h)))) + decoder_bias
        rows = [model.decoder(model.norm(model.active2(model.linear(s)))) + model.decoder_bias
                for s in streams]
        _write(out, case, rows, logits, {"inputs": inputs, "model": case + ".safetensors"})


CASES = {"torch_pre": torch_seq2seq, "torch_post": torch_seq2seq, "nanogpt": nanogpt, "llama2c": llama2c,
         "gpt003": gpt003, "bert003": bert003}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output directory")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for case, make in CASES.items():
        make(args.out, case)


if __name__ == "__main__":
    main()
