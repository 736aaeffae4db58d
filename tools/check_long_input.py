"""Attention at any length, checked against PyTorch: chosen rows of chosen heads of a long input.

Writes a random-weight Llama of SmolLM2-135M's shape (d 576, 9 heads, 3 key/value heads, SwiGLU
1536, RMSNorm, rotary base 100000, tied; tools/make_tutorial_checkpoints.py's "smollm-135m" with
fewer layers and, for the test command's time, a smaller vocabulary) as save_pretrained would, and
runs it on T token ids twice:
- attnviz: `attnviz-cli run MODEL --tgt-ids … --dump DIR --heads … --rows …`, which computes the
  asked rows tile by tile from the queries, keys and row statistics its trace keeps;
- PyTorch: tools/hf_decoder_models.py's Llama (written after transformers' modeling_llama.py) with
  each layer's attention taken in chunks of query rows (the same arithmetic; no [T, T] matrix of
  every head is held), hooks keeping the chosen layers' queries and keys as attention used them
  (after the rotation); the chosen rows' scores and probabilities are computed from those.
The first, middle and last rows of the first, a middle and the last head of an early and a late
layer must agree: probabilities at 1e-5, scores at 1e-4 (relative above 1), the causal mask exact.

usage: /usr/bin/python3 tools/check_long_input.py --cli build/app/attnviz-cli --work DIR
       [--tokens 8192] [--layers 3] [--vocab 4096] [--keep]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_decoder_models as hf  # noqa: E402
import make_tutorial_checkpoints as mtc  # noqa: E402

ROWS_EACH = 16  # rows in each of the three ranges


def chunked_attention(att, keep, chunk=512):
    """Replaces one _LlamaAttention's forward with the same arithmetic over chunks of query rows;
    keep=True stores q [B, H, T, d] and k [B, H_kv, T, d] after the rotation on att.kept."""
    def forward(x, cos, sin):
        B, T, _ = x.shape
        q = att.q_proj(x).view(B, T, att.n, att.hd).transpose(1, 2)
        k = att.k_proj(x).view(B, T, att.nkv, att.hd).transpose(1, 2)
        v = att.v_proj(x).view(B, T, att.nkv, att.hd).transpose(1, 2)
        q = q * cos + hf._rotate_half(q) * sin
        k = k * cos + hf._rotate_half(k) * sin
        if keep:
            att.kept = (q.clone(), k.clone())
        rep = att.n // att.nkv
        kr = k[:, :, None].expand(B, att.nkv, rep, T, att.hd).reshape(B, att.n, T, att.hd)
        vr = v[:, :, None].expand(B, att.nkv, rep, T, att.hd).reshape(B, att.n, T, att.hd)
        out = torch.empty(B, att.n, T, att.hd)
        for i0 in range(0, T, chunk):
            i1 = min(T, i0 + chunk)
            w = torch.matmul(q[:, :, i0:i1], kr.transpose(2, 3)) * att.hd ** -0.5
            masked = torch.arange(T)[None, :] > torch.arange(i0, i1)[:, None]
            probs = F.softmax(w + masked * torch.finfo(w.dtype).min, dim=-1, dtype=torch.float32)
            out[:, :, i0:i1] = torch.matmul(probs, vr)
        return att.o_proj(out.transpose(1, 2).reshape(B, T, -1))
    att.forward = forward


def reference_rows(q, k, head, rows):
    """Scores (scaled, before the mask), mask (True: masked) and probabilities of `rows` of a head
    from the kept q [H, T, d] and k [H_kv, T, d]."""
    H, T, d = q.shape
    kh = k[head // (H // k.shape[0])]
    s = torch.matmul(q[head, rows], kh.transpose(0, 1)) * d ** -0.5
    m = torch.arange(T)[None, :] > torch.as_tensor(rows)[:, None]
    p = F.softmax(s + m * torch.finfo(s.dtype).min, dim=-1, dtype=torch.float32)
    return s.numpy(), m.numpy(), p.numpy()


def load_npy(path):
    return np.load(path, allow_pickle=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--keep", action="store_true", help="keep the model and the dump")
    a = ap.parse_args()
    T, L = a.tokens, a.layers
    torch.set_num_threads(os.cpu_count() or 1)
    _, c = mtc.BENCH_SIZES["smollm-135m"]
    c = dict(c, num_hidden_layers=L, vocab_size=a.vocab, max_position_embeddings=T)
    os.makedirs(a.work, exist_ok=True)
    mtc.hf_llama(a.work, "long-llama", c, reference=False)
    folder = os.path.join(a.work, "long-llama")

    g = torch.Generator().manual_seed(7)
    # From the start token (config bos_token_id 1), which attnviz would otherwise put in front.
    ids = [1] + torch.randint(3, a.vocab, (T - 1,), generator=g).tolist()
    H = c["num_attention_heads"]
    layers = [0, L - 1]
    heads = [0, H // 2, H - 1]
    chosen = [(l, h) for l in layers for h in heads]
    ranges = [(0, ROWS_EACH), (T // 2 - ROWS_EACH // 2, T // 2 + ROWS_EACH // 2),
              (T - ROWS_EACH, T)]
    rows = [i for r0, r1 in ranges for i in range(r0, r1)]
    dump = os.path.join(a.work, "dump")
    shutil.rmtree(dump, ignore_errors=True)
    cmd = [a.cli, "run", folder, "--tgt-ids", ",".join(map(str, ids)), "--dump", dump,
           "--heads", ",".join("dec_self:%d:%d" % (l + 1, h + 1) for l, h in chosen),
           "--rows", ",".join("%d:%d" % r for r in ranges)]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    print("attnviz-cli run: %.1f s, exit %d" % (time.time() - t0, r.returncode))
    if r.returncode != 0:
        print(r.stdout[-2000:], r.stderr[-2000:], sep="\n")
        return 1
    with open(os.path.join(dump, "tokens.json")) as f:
        meta = json.load(f)
    got_ids = meta["tgt_ids"][0] if isinstance(meta["tgt_ids"][0], list) else meta["tgt_ids"]
    if got_ids != ids:
        print("FAIL: attnviz ran other ids than given (%d of %d)" % (len(got_ids), len(ids)))
        return 1

    model = mtc.hf_llama_model(c).eval()
    for n, att in enumerate(model.attention_layers()):
        chunked_attention(att, n in layers)
    t0 = time.time()
    with torch.no_grad():
        model._run(torch.tensor([ids]))
    print("PyTorch: %.1f s" % (time.time() - t0))

    worst_p = worst_s = 0.0
    failed = False
    for l, h in chosen:
        q, k = model.attention_layers()[l].kept
        s_ref, m_ref, p_ref = reference_rows(q[0], k[0], h, rows)
        stem = os.path.join(dump, "dec_self_%d_%d" % (l + 1, h + 1))
        s, m, p = (load_npy(stem + x) for x in ("_scores.npy", "_mask.npy", "_probs.npy"))
        if s.shape != (len(rows), T) or p.shape != s.shape or m.shape != s.shape:
            print("FAIL dec_self:%d:%d: shape %s, want %s" % (l + 1, h + 1, s.shape, (len(rows), T)))
            failed = True
            continue
        dp = float(np.abs(p - p_ref).max())
        ds = float((np.abs(s - s_ref) / np.maximum(1.0, np.abs(s_ref))).max())
        mask_ok = bool((m.astype(bool) == m_ref).all())
        worst_p, worst_s = max(worst_p, dp), max(worst_s, ds)
        ok = dp <= 1e-5 and ds <= 1e-4 and mask_ok
        failed |= not ok
        print("%s dec_self:%d:%d rows %s: probabilities %.2e, scores %.2e, mask %s, median row maximum %.3f"
              % ("ok  " if ok else "FAIL", l + 1, h + 1, ",".join("%d:%d" % r for r in ranges), dp, ds,
                 "equal" if mask_ok else "DIFFERS", float(np.median(p_ref.max(axis=1)))))
    print("%d tokens, %d layers: worst probability difference %.2e, score %.2e"
          % (T, L, worst_p, worst_s))
    if not a.keep:
        shutil.rmtree(a.work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
