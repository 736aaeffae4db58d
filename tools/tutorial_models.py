"""PyTorch reference models of the tutorials people train today, written after each tutorial's public
code (read, not copied) with the same module names, so that their state_dicts are the files those
tutorials' users have, and recording every attention block for attnviz's parity tests
(tests/test_tutorials.cpp, through tools/make_tutorial_checkpoints.py).

Each model records, per attention block, ``last = {"scores", "mask", "probs"}`` ([B, H, Tq, Tk]: the
scaled scores before any mask, the mask attnviz applies (True = masked), the probabilities), and offers
``trace(...)`` -> the reference tensors (``enc_self.*``, ``dec_self.*``, ``cross.*`` stacked to
[B, L, H, Tq, Tk], ``logits``, ``hidden``) and ``greedy(...)``.

- ``NanoGPT(cfg)``: karpathy/nanoGPT model.py (GPTConfig: block_size, vocab_size, n_layer, n_head,
  n_embd, dropout, bias): LayerNorm with an optional bias, c_attn [3C, C], the causal ``attn.bias``
  buffer PyTorch 1.x registers, exact GELU, wte tied to lm_head.
- ``MinGPT(cfg)``: karpathy/minGPT mingpt/model.py: the same names, NewGELU (tanh), biases, lm_head
  not tied.
- ``NgVideoGPT(...)``: karpathy/ng-video-lecture gpt.py's GPTLanguageModel: one Head module per head
  (key/query/value, a tril buffer each), ReLU feed-forward, lm_head with bias.
- ``AnnotatedTransformer(...)``: harvardnlp/annotated-transformer's make_model: LayerNorm a_2/b_2 with
  the unbiased std and eps outside the root, pre-norm SublayerConnection, linears.0-3, embeddings
  x sqrt(d_model), the pe buffer, Generator.
- ``RaschkaGPT(cfg)``: rasbt/LLMs-from-scratch ch04 GPTModel (W_query/W_key/W_value, out_proj,
  LayerNorm scale/shift, tanh GELU, the mask buffer, trf_blocks, final_norm, out_head).
- ``Llama2c(args)``: karpathy/llama2.c model.py's Transformer (RMSNorm, rotary positions on interleaved
  pairs, grouped-query attention, SwiGLU w1/w3/w2, output tied to tok_embeddings).

Always run with Debian's PyTorch: /usr/bin/python3.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


_PROBS_ONLY = [False]


class probs_only:
    """Within it, attention blocks keep their probabilities alone, as they are (what transformers'
    output_attentions=True returns): for tools/bench_torch.py, which times a pass that returns every
    layer's and head's attention, not the copies the parity tests' references make."""

    def __enter__(self):
        _PROBS_ONLY[0] = True

    def __exit__(self, *exc):
        _PROBS_ONLY[0] = False


def _record(module, scores, mask, probs):
    """Keep what one attention block computed: scores [B, H, Tq, Tk] before the mask, the mask
    (True = masked) broadcast to the scores' shape, the probabilities."""
    if _PROBS_ONLY[0]:
        module.last = {"probs": probs}
        return
    module.last = {"scores": scores.detach().clone(),
                   "mask": mask.expand_as(scores).detach().clone(),
                   "probs": probs.detach().clone()}


def _stack(records):
    out = {}
    for kind, recs in records.items():
        for key in ("scores", "mask", "probs"):
            a = torch.stack([r[key] for r in recs], dim=1)  # [B, L, H, Tq, Tk]
            out["%s.%s" % (kind, key)] = (a.to(torch.uint8) if key == "mask" else a.float()).numpy()
    return out


def _causal(T, device=None):
    """True above the diagonal: the future a position may not see."""
    return torch.triu(torch.ones(T, T, dtype=torch.bool, device=device), diagonal=1).view(1, 1, T, T)


def init_peaked_(model, seed):
    """Random weights that make attention peaked and every parameter matter: linears and embeddings
    N(0, 1/fan_in) / N(0, 1), norms' gains around 1 and shifts around 0."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                fan_in = p.shape[1]
                std = 1.0 if "emb" in name or "wte" in name or "wpe" in name or "lut" in name \
                    or "table" in name else 1.5 / math.sqrt(fan_in)
                p.copy_(torch.randn(p.shape, generator=g) * std)
            elif any(k in name for k in ("ln", "norm", "a_2", "scale")) and not any(
                    k in name for k in ("bias", "b_2", "shift")):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
    return model


# ======================================================================================================
# nanoGPT and minGPT: GPT blocks under transformer.h.N
# ======================================================================================================
class _GptLayerNorm(nn.Module):
    """nanoGPT's LayerNorm with an optional bias (F.layer_norm, eps 1e-5)."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class _GptAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size, bias):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.n_head, self.n_embd = n_head, n_embd
        # PyTorch 1.x has no scaled_dot_product_attention: the mask is a (persistent) buffer.
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        masked = self.bias[:, :, :T, :T] == 0
        probs = F.softmax(att.masked_fill(masked, float("-inf")), dim=-1)
        _record(self, att, masked, probs)
        y = (probs @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class _GptBlock(nn.Module):
    def __init__(self, n_embd, n_head, block_size, bias, gelu):
        super().__init__()
        self.ln_1 = _GptLayerNorm(n_embd, bias)
        self.attn = _GptAttention(n_embd, n_head, block_size, bias)
        self.ln_2 = _GptLayerNorm(n_embd, bias)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd, bias=bias),
                                      c_proj=nn.Linear(4 * n_embd, n_embd, bias=bias)))
        self.gelu = gelu

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp.c_proj(self.gelu(self.mlp.c_fc(self.ln_2(x))))


class NanoGPT(nn.Module):
    """nanoGPT's GPT; ``tanh_gelu`` makes it minGPT's (NewGELU), ``tied`` ties wte to lm_head."""

    def __init__(self, block_size, vocab_size, n_layer, n_head, n_embd, bias=True, tanh_gelu=False,
                 tied=True):
        super().__init__()
        gelu = (lambda x: F.gelu(x, approximate="tanh")) if tanh_gelu else F.gelu
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([_GptBlock(n_embd, n_head, block_size, bias, gelu) for _ in range(n_layer)]),
            ln_f=_GptLayerNorm(n_embd, bias)))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.tied = tied
        if tied:
            self.transformer.wte.weight = self.lm_head.weight

    def forward(self, idx):
        T = idx.size(1)
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(T))
        for block in self.transformer.h:
            x = block(x)
        hidden = self.transformer.ln_f(x)
        return self.lm_head(hidden), hidden  # every position (nanoGPT's forward with targets)

    def trace(self, ids):
        self.eval()
        with torch.no_grad():
            logits, hidden = self(torch.tensor(ids))
        out = _stack({"dec_self": [b.attn.last for b in self.transformer.h]})
        out["logits"], out["hidden"] = logits.numpy(), hidden.numpy()
        return out

    def greedy(self, prompt, n):
        """generate() with top_k=1: the argmax, n times, no stop."""
        ids = list(prompt)
        with torch.no_grad():
            for _ in range(n):
                logits, _ = self(torch.tensor([ids]))
                ids.append(int(logits[0, -1].argmax()))
        return ids[len(prompt):]


# ======================================================================================================
# ng-video-lecture's gpt.py: one Head module per head
# ======================================================================================================
class _Head(nn.Module):
    def __init__(self, n_embd, head_size, block_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        T = x.shape[1]
        k, q = self.key(x), self.query(x)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        masked = self.tril[:T, :T] == 0
        probs = F.softmax(wei.masked_fill(masked, float("-inf")), dim=-1)
        self.last = (wei.detach(), masked, probs.detach())
        return probs @ self.value(x)


class _NgMultiHead(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.heads = nn.ModuleList([_Head(n_embd, n_embd // n_head, block_size) for _ in range(n_head)])
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        out = self.proj(torch.cat([h(x) for h in self.heads], dim=-1))
        scores = torch.stack([h.last[0] for h in self.heads], dim=1)
        probs = torch.stack([h.last[2] for h in self.heads], dim=1)
        _record(self, scores, self.heads[0].last[1].view(1, 1, *scores.shape[-2:]), probs)
        return out


class _NgBlock(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.sa = _NgMultiHead(n_embd, n_head, block_size)
        self.ffwd = nn.Module()
        self.ffwd.net = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.ReLU(),
                                      nn.Linear(4 * n_embd, n_embd), nn.Dropout(0.0))
        self.ln1 = nn.LayerNorm(n_embd)
        self.ln2 = nn.LayerNorm(n_embd)

    def forward(self, x):
        x = x + self.sa(self.ln1(x))
        return x + self.ffwd.net(self.ln2(x))


class NgVideoGPT(nn.Module):
    def __init__(self, vocab_size, n_embd, n_head, n_layer, block_size):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, n_embd)
        self.position_embedding_table = nn.Embedding(block_size, n_embd)
        self.blocks = nn.Sequential(*[_NgBlock(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.token_embedding_table(idx) + self.position_embedding_table(torch.arange(T))
        hidden = self.ln_f(self.blocks(x))
        return self.lm_head(hidden), hidden

    def trace(self, ids):
        self.eval()
        with torch.no_grad():
            logits, hidden = self(torch.tensor(ids))
        out = _stack({"dec_self": [b.sa.last for b in self.blocks]})
        out["logits"], out["hidden"] = logits.numpy(), hidden.numpy()
        return out


# ======================================================================================================
# The Annotated Transformer
# ======================================================================================================
class _AnnLayerNorm(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)  # unbiased
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


class _Sublayer(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.norm = _AnnLayerNorm(size)

    def forward(self, x, sublayer):
        return x + sublayer(self.norm(x))


class _AnnAttention(nn.Module):
    def __init__(self, h, d_model):
        super().__init__()
        self.d_k, self.h = d_model // h, h
        self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(4)])

    def forward(self, query, key, value, keep):
        """keep: [B, 1 or Tq, Tk], True where attention may look (the tutorial's mask)."""
        B = query.size(0)
        q, k, v = [lin(x).view(B, -1, self.h, self.d_k).transpose(1, 2)
                   for lin, x in zip(self.linears, (query, key, value))]
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        m = keep.unsqueeze(1)
        probs = scores.masked_fill(m == 0, -1e9).softmax(dim=-1)
        _record(self, scores, m == 0, probs)
        x = torch.matmul(probs, v).transpose(1, 2).contiguous().view(B, -1, self.h * self.d_k)
        return self.linears[-1](x)


class _AnnFeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.w_2(self.w_1(x).relu())


class _AnnEncoderLayer(nn.Module):
    def __init__(self, d, h, d_ff):
        super().__init__()
        self.self_attn = _AnnAttention(h, d)
        self.feed_forward = _AnnFeedForward(d, d_ff)
        self.sublayer = nn.ModuleList([_Sublayer(d) for _ in range(2)])

    def forward(self, x, mask):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class _AnnDecoderLayer(nn.Module):
    def __init__(self, d, h, d_ff):
        super().__init__()
        self.self_attn = _AnnAttention(h, d)
        self.src_attn = _AnnAttention(h, d)
        self.feed_forward = _AnnFeedForward(d, d_ff)
        self.sublayer = nn.ModuleList([_Sublayer(d) for _ in range(3)])

    def forward(self, x, memory, src_mask, tgt_mask):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
        x = self.sublayer[1](x, lambda x: self.src_attn(x, memory, memory, src_mask))
        return self.sublayer[2](x, self.feed_forward)


class _AnnStack(nn.Module):
    def __init__(self, layers, d):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.norm = _AnnLayerNorm(d)


class _AnnEmbeddings(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


class _AnnPositions(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class _AnnGenerator(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab)


class AnnotatedTransformer(nn.Module):
    """make_model(src_vocab, tgt_vocab, N, d_model, d_ff, h); ids: <s> 0, </s> 1, <blank> 2."""

    def __init__(self, src_vocab, tgt_vocab, N=2, d_model=32, d_ff=64, h=4, pad=2):
        super().__init__()
        self.encoder = _AnnStack([_AnnEncoderLayer(d_model, h, d_ff) for _ in range(N)], d_model)
        self.decoder = _AnnStack([_AnnDecoderLayer(d_model, h, d_ff) for _ in range(N)], d_model)
        self.src_embed = nn.Sequential(_AnnEmbeddings(d_model, src_vocab), _AnnPositions(d_model))
        self.tgt_embed = nn.Sequential(_AnnEmbeddings(d_model, tgt_vocab), _AnnPositions(d_model))
        self.generator = _AnnGenerator(d_model, tgt_vocab)
        self.pad = pad

    def encode(self, src, src_mask):
        x = self.src_embed(src)
        for layer in self.encoder.layers:
            x = layer(x, src_mask)
        return self.encoder.norm(x)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        x = self.tgt_embed(tgt)
        for layer in self.decoder.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.decoder.norm(x)

    def _masks(self, src, tgt):
        src_mask = (src != self.pad).unsqueeze(-2)
        T = tgt.size(-1)
        subsequent = torch.triu(torch.ones(1, T, T), diagonal=1) == 0
        return src_mask, (tgt != self.pad).unsqueeze(-2) & subsequent

    def trace(self, src_ids, tgt_ids):
        self.eval()
        src, tgt = torch.tensor(src_ids), torch.tensor(tgt_ids)
        src_mask, tgt_mask = self._masks(src, tgt)
        with torch.no_grad():
            hidden = self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)
            logits = self.generator.proj(hidden)  # before the Generator's log_softmax
        out = _stack({"enc_self": [l.self_attn.last for l in self.encoder.layers],
                      "dec_self": [l.self_attn.last for l in self.decoder.layers],
                      "cross": [l.src_attn.last for l in self.decoder.layers]})
        out["logits"], out["hidden"] = logits.numpy(), hidden.numpy()
        return out

    def greedy(self, src_1d, max_len, start_symbol, end_symbol):
        """The tutorial's greedy_decode (max_len - 1 steps, the whole decoder rerun each step), cut
        after </s> as its check_outputs does; returns the ids after the start symbol."""
        src = torch.tensor([src_1d])
        src_mask = (src != self.pad).unsqueeze(-2)
        with torch.no_grad():
            memory = self.encode(src, src_mask)
            ys = torch.zeros(1, 1).fill_(start_symbol).type_as(src)
            for _ in range(max_len - 1):
                T = ys.size(1)
                out = self.decode(memory, src_mask, ys, torch.triu(torch.ones(1, T, T), diagonal=1) == 0)
                prob = F.log_softmax(self.generator.proj(out[:, -1]), dim=-1)
                ys = torch.cat([ys, prob.argmax(dim=1, keepdim=True)], dim=1)
        out = [int(i) for i in ys[0, 1:]]
        return out[: out.index(end_symbol) + 1] if end_symbol in out else out


# ======================================================================================================
# Raschka's GPTModel (LLMs-from-scratch ch04)
# ======================================================================================================
class _RaschkaLayerNorm(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        return self.scale * ((x - mean) / torch.sqrt(var + self.eps)) + self.shift


class _RaschkaGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(torch.sqrt(torch.tensor(2.0 / torch.pi)) * (x + 0.044715 * torch.pow(x, 3))))


class _RaschkaAttention(nn.Module):
    def __init__(self, d, context_length, num_heads, qkv_bias):
        super().__init__()
        self.num_heads, self.head_dim, self.d_out = num_heads, d // num_heads, d
        self.W_query = nn.Linear(d, d, bias=qkv_bias)
        self.W_key = nn.Linear(d, d, bias=qkv_bias)
        self.W_value = nn.Linear(d, d, bias=qkv_bias)
        self.out_proj = nn.Linear(d, d)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, T, _ = x.shape
        keys = self.W_key(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:T, :T]
        scaled = attn_scores / keys.shape[-1] ** 0.5
        # the tutorial masks before scaling: -inf either way
        weights = torch.softmax(attn_scores.masked_fill(mask_bool, -torch.inf) / keys.shape[-1] ** 0.5, dim=-1)
        _record(self, scaled, mask_bool.view(1, 1, T, T), weights)
        ctx = (weights @ values).transpose(1, 2).contiguous().view(b, T, self.d_out)
        return self.out_proj(ctx)


class _RaschkaBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["emb_dim"]
        self.att = _RaschkaAttention(d, cfg["context_length"], cfg["n_heads"], cfg["qkv_bias"])
        self.ff = nn.Module()
        self.ff.layers = nn.Sequential(nn.Linear(d, 4 * d), _RaschkaGELU(), nn.Linear(4 * d, d))
        self.norm1 = _RaschkaLayerNorm(d)
        self.norm2 = _RaschkaLayerNorm(d)

    def forward(self, x):
        x = x + self.att(self.norm1(x))
        return x + self.ff.layers(self.norm2(x))


class RaschkaGPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.trf_blocks = nn.Sequential(*[_RaschkaBlock(cfg) for _ in range(cfg["n_layers"])])
        self.final_norm = _RaschkaLayerNorm(cfg["emb_dim"])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(T))
        hidden = self.final_norm(self.trf_blocks(x))
        return self.out_head(hidden), hidden

    def trace(self, ids):
        self.eval()
        with torch.no_grad():
            logits, hidden = self(torch.tensor(ids))
        out = _stack({"dec_self": [b.att.last for b in self.trf_blocks]})
        out["logits"], out["hidden"] = logits.numpy(), hidden.numpy()
        return out


# ======================================================================================================
# llama2.c's Transformer
# ======================================================================================================
class _RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def _freqs(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    f = torch.outer(torch.arange(end), freqs).float()
    return torch.cos(f), torch.sin(f)


def _rotate_interleaved(x, cos, sin):
    """x [B, T, H, hd]: pairs (x[2i], x[2i+1]) rotated by the angle of pair i at each position."""
    xr, xi = x.float().reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
    cos, sin = cos.view(1, x.shape[1], 1, -1), sin.view(1, x.shape[1], 1, -1)
    return torch.stack([xr * cos - xi * sin, xr * sin + xi * cos], dim=-1).flatten(3).type_as(x)


class _Llama2cAttention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, max_seq_len):
        super().__init__()
        self.n_heads, self.n_kv, self.hd = n_heads, n_kv_heads, dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.hd, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(n_heads * self.hd, dim, bias=False)
        # PyTorch 1.x: the additive mask is a (persistent) buffer
        mask = torch.triu(torch.full((1, 1, max_seq_len, max_seq_len), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        xq = self.wq(x).view(B, T, self.n_heads, self.hd)
        xk = self.wk(x).view(B, T, self.n_kv, self.hd)
        xv = self.wv(x).view(B, T, self.n_kv, self.hd)
        xq, xk = _rotate_interleaved(xq, cos, sin), _rotate_interleaved(xk, cos, sin)
        rep = self.n_heads // self.n_kv
        xk = xk[:, :, :, None, :].expand(B, T, self.n_kv, rep, self.hd).reshape(B, T, self.n_heads, self.hd)
        xv = xv[:, :, :, None, :].expand(B, T, self.n_kv, rep, self.hd).reshape(B, T, self.n_heads, self.hd)
        q, k, v = xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        probs = F.softmax((scores + self.mask[:, :, :T, :T]).float(), dim=-1).type_as(q)
        _record(self, scores, _causal(T), probs)
        out = torch.matmul(probs, v).transpose(1, 2).contiguous().view(B, T, -1)
        return self.wo(out)


class _Llama2cFeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class _Llama2cBlock(nn.Module):
    def __init__(self, a, hidden_dim):
        super().__init__()
        self.attention = _Llama2cAttention(a["dim"], a["n_heads"], a["n_kv_heads"], a["max_seq_len"])
        self.feed_forward = _Llama2cFeedForward(a["dim"], hidden_dim)
        self.attention_norm = _RMSNorm(a["dim"], 1e-5)
        self.ffn_norm = _RMSNorm(a["dim"], 1e-5)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama2c(nn.Module):
    """model_args: dim, n_layers, n_heads, n_kv_heads, vocab_size, multiple_of, max_seq_len, dropout."""

    def __init__(self, a):
        super().__init__()
        hidden = int(2 * (4 * a["dim"]) / 3)
        hidden = a["multiple_of"] * ((hidden + a["multiple_of"] - 1) // a["multiple_of"])
        self.tok_embeddings = nn.Embedding(a["vocab_size"], a["dim"])
        self.layers = nn.ModuleList([_Llama2cBlock(a, hidden) for _ in range(a["n_layers"])])
        self.norm = _RMSNorm(a["dim"], 1e-5)
        self.output = nn.Linear(a["dim"], a["vocab_size"], bias=False)
        self.tok_embeddings.weight = self.output.weight
        cos, sin = _freqs(a["dim"] // a["n_heads"], a["max_seq_len"])
        self.register_buffer("freqs_cos", cos, persistent=False)
        self.register_buffer("freqs_sin", sin, persistent=False)

    def forward(self, tokens):
        T = tokens.shape[1]
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, self.freqs_cos[:T], self.freqs_sin[:T])
        hidden = self.norm(h)
        return self.output(hidden), hidden

    def trace(self, ids):
        self.eval()
        with torch.no_grad():
            logits, hidden = self(torch.tensor(ids))
        out = _stack({"dec_self": [l.attention.last for l in self.layers]})
        out["logits"], out["hidden"] = logits.numpy(), hidden.numpy()
        return out
