"""Small PyTorch GPT-2, BERT and Llama models for attnviz's parity tests, written after Hugging Face
transformers' modeling_gpt2.py (GPT2LMHeadModel), modeling_bert.py (BertForMaskedLM) and
modeling_llama.py (LlamaForCausalLM), modeling_qwen2.py (Qwen2ForCausalLM) and modeling_qwen3.py
(Qwen3ForCausalLM), modeling_mistral.py, modeling_gemma.py, modeling_gemma2.py, modeling_phi3.py, modeling_gpt_neo.py, modeling_gpt_neox.py,
modeling_opt.py, modeling_roberta.py and
modeling_distilbert.py: the same module structure, hence the same state_dict names
(GPT-2's Conv1D weights stored [in, out]), and the same numerics in eager mode. Debian ships no
transformers; these classes are what tests/test_tutorials.cpp compares with.

    Gpt2(cfg)   cfg: vocab_size, n_positions, n_embd, n_layer, n_head, layer_norm_epsilon
    Bert(cfg)   cfg: vocab_size, hidden_size, num_hidden_layers, num_attention_heads,
                intermediate_size, max_position_embeddings, type_vocab_size, layer_norm_eps,
                pad_token_id
    Llama(cfg)  cfg: vocab_size, hidden_size, intermediate_size, num_hidden_layers,
                num_attention_heads, num_key_value_heads, rms_norm_eps, rope_theta,
                max_position_embeddings, tie_word_embeddings[, head_dim]
    Qwen2(cfg)  Llama's cfg: q, k and v with biases (o_proj without), full attention in every layer
    Qwen3(cfg)  Llama's cfg: each head's q and k RMS-normalised (q_norm, k_norm) before the rotation
    Mistral(cfg)  Llama's blocks, no sliding window (sliding_window null)
    Gemma(cfg)  Llama's cfg: RMSNorms × (1 + weight), embeddings × √hidden_size, a tanh-GELU gate
    Gemma2(cfg) modeling_gemma2.py: Gemma's cfg with sandwich norms, soft-capped scores and logits,
                query_pre_attn_scalar, sliding and full layers (layer_types)
    Phi3(cfg)   modeling_phi3.py: Llama's cfg with fused qkv_proj and gate_up_proj, rotary on the first
                partial_rotary_factor of each head, a sliding window of sliding_window keys
    GptNeo(cfg) modeling_gpt_neo.py: GPT-2's blocks with separate q/k/v, unscaled scores, global and
                local (window_size) layers
    GptNeoX(cfg) modeling_gpt_neox.py: fused per-head query_key_value, rotary on the first rotary_pct of
                each head, the parallel residual or the sequential blocks (use_parallel_residual)
    Opt(cfg)    modeling_opt.py: positions at offset 2, ReLU, pre- or post-norm (do_layer_norm_before)
    Roberta(cfg) modeling_roberta.py: Bert's cfg; positions counted over the non-pad tokens from
                pad_token_id + 1, lm_head (dense, gelu, layer_norm, tied decoder)
    DistilBert(cfg) modeling_distilbert.py: cfg vocab_size, dim, n_layers, n_heads, hidden_dim,
                max_position_embeddings, pad_token_id; learned positions, gelu, LayerNorm eps 1e-12

Each records its attention blocks and offers ``trace(ids[, segments])`` -> the reference tensors
(``dec_self.*`` or ``enc_self.*`` [B, L, H, Tq, Tk], ``logits``, ``hidden``) and ``config()`` ->
the config.json Hugging Face's save_pretrained writes.

Always run with Debian's PyTorch: /usr/bin/python3.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from tutorial_models import _record, _stack, _causal, probs_only


class Conv1D(nn.Module):
    """transformers' Conv1D: y = x @ W + b with W stored [in, out]."""

    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(x.size()[:-1] + (-1,))


# ---- GPT-2 ----
class _Gpt2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["n_embd"]
        self.n_head, self.hd = c["n_head"], d // c["n_head"]
        self.c_attn = Conv1D(3 * d, d)
        self.c_proj = Conv1D(d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = [t.view(B, T, self.n_head, self.hd).transpose(1, 2) for t in (q, k, v)]
        w = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], v.size(-1) ** 0.5, device=x.device)
        masked = _causal(T, x.device)
        probs = F.softmax(torch.where(masked, torch.finfo(w.dtype).min, w), dim=-1)
        _record(self, w, masked, probs)
        return self.c_proj(torch.matmul(probs, v).transpose(1, 2).reshape(B, T, C))


class _Gpt2Mlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = Conv1D(4 * c["n_embd"], c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], 4 * c["n_embd"])

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))  # gelu_new


class _Gpt2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.attn = _Gpt2Attention(c)
        self.ln_2 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.mlp = _Gpt2Mlp(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class _CausalLM(nn.Module):
    """What every decoder-only reference shares, given _run(ids) -> (hidden, logits) and
    attention_layers() (each attention module's .last: what its last pass recorded)."""

    def greedy(self, prompt, n, eos):
        """generate() with do_sample=False: the argmax of the whole sequence rerun, n times, stopping
        after eos (kept); the ids after the prompt."""
        ids = list(prompt)
        self.eval()
        with torch.no_grad():
            for _ in range(n):
                ids.append(int(self._run(torch.tensor([ids]))[1][0, -1].argmax()))
                if ids[-1] == eos:
                    break
        return ids[len(prompt):]

    def trace(self, ids):
        self.eval()
        with torch.no_grad():
            hidden, logits = self._run(torch.tensor(ids))
        out = _stack({"dec_self": [a.last for a in self.attention_layers()]})
        out["logits"], out["hidden"] = logits.numpy(), hidden.numpy()
        return out


class Gpt2(_CausalLM):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        self.transformer.wpe = nn.Embedding(c["n_positions"], c["n_embd"])
        self.transformer.h = nn.ModuleList([_Gpt2Block(c) for _ in range(c["n_layer"])])
        self.transformer.ln_f = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight

    def _run(self, idx):
        """(hidden, logits) of token ids [B, T]; each block's attention recorded."""
        h = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.transformer.h:
            h = block(h)
        hidden = self.transformer.ln_f(h)
        return hidden, self.lm_head(hidden)

    def attention_layers(self):
        """Each layer's attention module; .last holds what its last pass recorded."""
        return [b.attn for b in self.transformer.h]

    def attentions(self, idx):
        """What GPT2LMHeadModel(idx, output_attentions=True) returns: the logits and every layer's
        probabilities [B, H, T, T]. Call under torch.no_grad(), in eval mode."""
        with probs_only():
            logits = self._run(idx)[1]
        return logits, [a.last["probs"] for a in self.attention_layers()]

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_inner": None,
                  "activation_function": "gelu_new", "scale_attn_weights": True,
                  "scale_attn_by_inverse_layer_idx": False, "reorder_and_upcast_attn": False,
                  "bos_token_id": c["vocab_size"] - 1, "eos_token_id": c["vocab_size"] - 1,
                  "n_ctx": c["n_positions"], "tie_word_embeddings": True})
        return c


# ---- BERT ----
class _BertSelf(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.n, self.hd = c["num_attention_heads"], H // c["num_attention_heads"]
        self.query, self.key, self.value = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, H)

    def forward(self, x, keep):
        B, T, H = x.shape
        q, k, v = [lin(x).view(B, T, self.n, self.hd).transpose(1, 2)
                   for lin in (self.query, self.key, self.value)]
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        # the extended attention mask: (1 - mask) * the dtype's lowest value, added
        ext = (1.0 - keep[:, None, None, :].float()) * torch.finfo(torch.float32).min
        probs = F.softmax(scores + ext, dim=-1)
        _record(self, scores, ~keep[:, None, None, :].bool(), probs)
        return torch.matmul(probs, v).transpose(1, 2).reshape(B, T, H)


class _BertDenseNorm(nn.Module):
    def __init__(self, n_in, H, eps):
        super().__init__()
        self.dense = nn.Linear(n_in, H)
        self.LayerNorm = nn.LayerNorm(H, eps=eps)

    def forward(self, h, residual):
        return self.LayerNorm(self.dense(h) + residual)


class _BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, I, eps = c["hidden_size"], c["intermediate_size"], c["layer_norm_eps"]
        self.attention = nn.Module()
        self.attention.self = _BertSelf(c)
        self.attention.output = _BertDenseNorm(H, H, eps)
        self.intermediate = nn.Module()
        self.intermediate.dense = nn.Linear(H, I)
        self.output = _BertDenseNorm(I, H, eps)

    def forward(self, x, keep):
        a = self.attention.output(self.attention.self(x, keep), x)
        return self.output(F.gelu(self.intermediate.dense(a)), a)


class Bert(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        H, eps = c["hidden_size"], c["layer_norm_eps"]
        self.bert = nn.Module()
        e = self.bert.embeddings = nn.Module()
        e.word_embeddings = nn.Embedding(c["vocab_size"], H, padding_idx=c["pad_token_id"])
        e.position_embeddings = nn.Embedding(c["max_position_embeddings"], H)
        e.token_type_embeddings = nn.Embedding(c["type_vocab_size"], H)
        e.LayerNorm = nn.LayerNorm(H, eps=eps)
        self.bert.encoder = nn.Module()
        self.bert.encoder.layer = nn.ModuleList([_BertLayer(c) for _ in range(c["num_hidden_layers"])])
        self.cls = nn.Module()
        p = self.cls.predictions = nn.Module()
        p.transform = nn.Module()
        p.transform.dense = nn.Linear(H, H)
        p.transform.LayerNorm = nn.LayerNorm(H, eps=eps)
        p.decoder = nn.Linear(H, c["vocab_size"], bias=False)
        p.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        p.decoder.bias = p.bias
        p.decoder.weight = e.word_embeddings.weight

    def trace(self, ids, segments):
        self.eval()
        idx, seg = torch.tensor(ids), torch.tensor(segments)
        keep = idx != self.c["pad_token_id"]
        with torch.no_grad():
            e = self.bert.embeddings
            h = e.LayerNorm(e.word_embeddings(idx) + e.token_type_embeddings(seg) +
                            e.position_embeddings(torch.arange(idx.shape[1])))
            for layer in self.bert.encoder.layer:
                h = layer(h, keep)
            p = self.cls.predictions
            t = p.transform.LayerNorm(F.gelu(p.transform.dense(h)))
            logits = p.decoder(t)
        out = _stack({"enc_self": [l.attention.self.last for l in self.bert.encoder.layer]})
        out["logits"], out["hidden"] = logits.numpy(), h.numpy()
        return out

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "bert", "architectures": ["BertForMaskedLM"], "hidden_act": "gelu",
                  "position_embedding_type": "absolute", "is_decoder": False})
        return c


class Roberta(nn.Module):
    """modeling_roberta.py's RobertaForMaskedLM: BERT's layers under "roberta.", positions from
    create_position_ids_from_input_ids (padding_idx + the count of non-pad tokens so far; a pad
    token reads row padding_idx), one token type, and lm_head: dense, gelu, layer_norm, decoder tied
    to the word embeddings with lm_head.bias."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        H, eps, pad = c["hidden_size"], c["layer_norm_eps"], c["pad_token_id"]
        self.roberta = nn.Module()
        e = self.roberta.embeddings = nn.Module()
        e.word_embeddings = nn.Embedding(c["vocab_size"], H, padding_idx=pad)
        e.position_embeddings = nn.Embedding(c["max_position_embeddings"], H, padding_idx=pad)
        e.token_type_embeddings = nn.Embedding(c["type_vocab_size"], H)
        e.LayerNorm = nn.LayerNorm(H, eps=eps)
        self.roberta.encoder = nn.Module()
        self.roberta.encoder.layer = nn.ModuleList([_BertLayer(c) for _ in range(c["num_hidden_layers"])])
        h = self.lm_head = nn.Module()
        h.dense = nn.Linear(H, H)
        h.layer_norm = nn.LayerNorm(H, eps=eps)
        h.decoder = nn.Linear(H, c["vocab_size"])
        h.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        h.decoder.bias = h.bias
        h.decoder.weight = e.word_embeddings.weight

    def position_ids(self, idx):
        pad = self.c["pad_token_id"]
        mask = idx.ne(pad).int()
        return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + pad

    def trace(self, ids):
        self.eval()
        idx = torch.tensor(ids)
        keep = idx != self.c["pad_token_id"]
        with torch.no_grad():
            e = self.roberta.embeddings
            h = e.LayerNorm(e.word_embeddings(idx) + e.token_type_embeddings(torch.zeros_like(idx)) +
                            e.position_embeddings(self.position_ids(idx)))
            for layer in self.roberta.encoder.layer:
                h = layer(h, keep)
            m = self.lm_head
            logits = m.decoder(m.layer_norm(F.gelu(m.dense(h))))
        out = _stack({"enc_self": [l.attention.self.last for l in self.roberta.encoder.layer]})
        out["logits"], out["hidden"] = logits.numpy(), h.numpy()
        return out

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "roberta", "architectures": ["RobertaForMaskedLM"], "hidden_act": "gelu",
                  "position_embedding_type": "absolute", "is_decoder": False, "bos_token_id": 0,
                  "eos_token_id": 2})
        return c


class _DistilBertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["dim"]
        self.n, self.hd = c["n_heads"], H // c["n_heads"]
        self.q_lin, self.k_lin, self.v_lin = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, H)
        self.out_lin = nn.Linear(H, H)

    def forward(self, x, keep):
        B, T, H = x.shape
        q, k, v = [lin(x).view(B, T, self.n, self.hd).transpose(1, 2)
                   for lin in (self.q_lin, self.k_lin, self.v_lin)]
        q = q / math.sqrt(self.hd)  # MultiHeadSelfAttention scales q, then q·kᵀ
        scores = torch.matmul(q, k.transpose(2, 3))
        masked = ~keep[:, None, None, :].bool()
        probs = F.softmax(scores.masked_fill(masked, torch.finfo(scores.dtype).min), dim=-1)
        _record(self, scores, masked, probs)
        return self.out_lin(torch.matmul(probs, v).transpose(1, 2).reshape(B, T, H))


class _DistilBertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["dim"]
        self.attention = _DistilBertAttention(c)
        self.sa_layer_norm = nn.LayerNorm(H, eps=1e-12)
        self.ffn = nn.Module()
        self.ffn.lin1, self.ffn.lin2 = nn.Linear(H, c["hidden_dim"]), nn.Linear(c["hidden_dim"], H)
        self.output_layer_norm = nn.LayerNorm(H, eps=1e-12)

    def forward(self, x, keep):
        a = self.sa_layer_norm(self.attention(x, keep) + x)
        return self.output_layer_norm(self.ffn.lin2(F.gelu(self.ffn.lin1(a))) + a)


class DistilBert(nn.Module):
    """modeling_distilbert.py's DistilBertForMaskedLM (learned positions, gelu): names under
    "distilbert.", the head vocab_transform, gelu, vocab_layer_norm, vocab_projector (tied)."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        H = c["dim"]
        self.distilbert = nn.Module()
        e = self.distilbert.embeddings = nn.Module()
        e.word_embeddings = nn.Embedding(c["vocab_size"], H, padding_idx=c["pad_token_id"])
        e.position_embeddings = nn.Embedding(c["max_position_embeddings"], H)
        e.LayerNorm = nn.LayerNorm(H, eps=1e-12)
        self.distilbert.transformer = nn.Module()
        self.distilbert.transformer.layer = nn.ModuleList([_DistilBertLayer(c) for _ in range(c["n_layers"])])
        self.vocab_transform = nn.Linear(H, H)
        self.vocab_layer_norm = nn.LayerNorm(H, eps=1e-12)
        self.vocab_projector = nn.Linear(H, c["vocab_size"])
        self.vocab_projector.weight = e.word_embeddings.weight

    def trace(self, ids):
        self.eval()
        idx = torch.tensor(ids)
        keep = idx != self.c["pad_token_id"]
        with torch.no_grad():
            e = self.distilbert.embeddings
            h = e.LayerNorm(e.word_embeddings(idx) + e.position_embeddings(torch.arange(idx.shape[1])))
            for layer in self.distilbert.transformer.layer:
                h = layer(h, keep)
            logits = self.vocab_projector(self.vocab_layer_norm(F.gelu(self.vocab_transform(h))))
        out = _stack({"enc_self": [l.attention.last for l in self.distilbert.transformer.layer]})
        out["logits"], out["hidden"] = logits.numpy(), h.numpy()
        return out

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "distilbert", "architectures": ["DistilBertForMaskedLM"],
                  "activation": "gelu", "sinusoidal_pos_embds": False, "dropout": 0.1,
                  "attention_dropout": 0.1, "initializer_range": 0.02, "qa_dropout": 0.1,
                  "seq_classif_dropout": 0.2, "tie_word_embeddings": True})
        return c


# ---- Llama ----
class _LlamaRMSNorm(nn.Module):
    def __init__(self, H, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(H))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def _rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def _head_dim(c):
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


class _LlamaAttention(nn.Module):
    def __init__(self, c, qkv_bias=False, qk_norm=False):
        super().__init__()
        H = c["hidden_size"]
        self.n, self.nkv = c["num_attention_heads"], c["num_key_value_heads"]
        self.hd = _head_dim(c)
        self.q_proj = nn.Linear(H, self.n * self.hd, bias=qkv_bias)
        self.k_proj = nn.Linear(H, self.nkv * self.hd, bias=qkv_bias)
        self.v_proj = nn.Linear(H, self.nkv * self.hd, bias=qkv_bias)
        self.o_proj = nn.Linear(self.n * self.hd, H, bias=False)
        self.qk_norm = qk_norm
        if qk_norm:  # Qwen3: over each head's head_dim values, before the rotation
            self.q_norm = _LlamaRMSNorm(self.hd, c["rms_norm_eps"])
            self.k_norm = _LlamaRMSNorm(self.hd, c["rms_norm_eps"])

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n, self.hd)
        k = self.k_proj(x).view(B, T, self.nkv, self.hd)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        rep = self.n // self.nkv
        k = k[:, :, None].expand(B, self.nkv, rep, T, self.hd).reshape(B, self.n, T, self.hd)
        v = v[:, :, None].expand(B, self.nkv, rep, T, self.hd).reshape(B, self.n, T, self.hd)
        w = torch.matmul(q, k.transpose(2, 3)) * self.hd ** -0.5
        masked = _causal(T, w.device)
        probs = F.softmax(w + masked * torch.finfo(w.dtype).min, dim=-1, dtype=torch.float32)
        _record(self, w, masked, probs)
        return self.o_proj(torch.matmul(probs, v).transpose(1, 2).reshape(B, T, -1))


class _GemmaRMSNorm(nn.Module):
    """GemmaRMSNorm: the weight starts at 0 and the norm multiplies by (1 + weight), in float32."""
    def __init__(self, H, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(H))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (h * (1.0 + self.weight.float())).type_as(x)


class _LlamaMlp(nn.Module):
    def __init__(self, c, act=F.silu):
        super().__init__()
        self.act = act
        H, I = c["hidden_size"], c["intermediate_size"]
        self.gate_proj = nn.Linear(H, I, bias=False)
        self.up_proj = nn.Linear(H, I, bias=False)
        self.down_proj = nn.Linear(I, H, bias=False)

    def forward(self, x):
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))


class _LlamaLayer(nn.Module):
    def __init__(self, c, qkv_bias=False, qk_norm=False, norm=_LlamaRMSNorm, act=F.silu):
        super().__init__()
        self.self_attn = _LlamaAttention(c, qkv_bias, qk_norm)
        self.mlp = _LlamaMlp(c, act)
        self.input_layernorm = norm(c["hidden_size"], c["rms_norm_eps"])
        self.post_attention_layernorm = norm(c["hidden_size"], c["rms_norm_eps"])

    def forward(self, x, cos, sin):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return h + self.mlp(self.post_attention_layernorm(h))


class Llama(_CausalLM):
    QKV_BIAS = False
    QK_NORM = False
    NORM = _LlamaRMSNorm
    ACT = staticmethod(F.silu)
    EMBED_SCALE = False

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.model.layers = nn.ModuleList([_LlamaLayer(c, self.QKV_BIAS, self.QK_NORM, self.NORM,
                                                       self.ACT)
                                           for _ in range(c["num_hidden_layers"])])
        self.model.norm = self.NORM(c["hidden_size"], c["rms_norm_eps"])
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c["tie_word_embeddings"]:
            self.lm_head.weight = self.model.embed_tokens.weight

    def _run(self, idx):
        """(hidden, logits) of token ids [B, T]; each layer's attention recorded."""
        T = idx.shape[1]
        hd = _head_dim(self.c)
        inv_freq = 1.0 / (self.c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
        freqs = torch.outer(torch.arange(T).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None].to(idx.device), emb.sin()[None, None].to(idx.device)
        h = self.model.embed_tokens(idx)
        if self.EMBED_SCALE:  # GemmaModel: × √hidden_size as a tensor of the embeddings' dtype
            h = h * torch.tensor(self.c["hidden_size"] ** 0.5, dtype=h.dtype)
        for layer in self.model.layers:
            h = layer(h, cos, sin)
        hidden = self.model.norm(h)
        return hidden, self.lm_head(hidden)

    def attention_layers(self):
        """Each layer's attention module; .last holds what its last pass recorded."""
        return [layer.self_attn for layer in self.model.layers]

    def attentions(self, idx):
        """What LlamaForCausalLM(idx, output_attentions=True) returns (eager attention): the logits
        and every layer's probabilities [B, H, T, T]. Call under torch.no_grad(), in eval mode."""
        with probs_only():
            logits = self._run(idx)[1]
        return logits, [a.last["probs"] for a in self.attention_layers()]

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_act": "silu",
                  "rope_scaling": None, "attention_bias": False, "mlp_bias": False,
                  "bos_token_id": 1, "eos_token_id": 2, "pretraining_tp": 1})
        return c


# ---- Qwen2 ----
class Qwen2(Llama):
    """Qwen2ForCausalLM (modeling_qwen2.py): Llama's blocks with biases on q_proj, k_proj and v_proj
    (o_proj has none); sliding-window attention is off (use_sliding_window false), so every layer's
    mask is the causal one."""
    QKV_BIAS = True

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_act": "silu",
                  "rope_scaling": None, "use_sliding_window": False, "sliding_window": 4096,
                  "max_window_layers": c["num_hidden_layers"],
                  "layer_types": ["full_attention"] * c["num_hidden_layers"],
                  "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2})
        return c


# ---- Qwen3 ----
class Qwen3(Llama):
    """Qwen3ForCausalLM (modeling_qwen3.py): Llama's blocks (no biases: attention_bias false) with
    q_norm and k_norm, RMSNorms over each head's head_dim values applied to the projected queries
    and keys before the rotation; no sliding window."""
    QK_NORM = True

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_act": "silu",
                  "rope_scaling": None, "attention_bias": False, "use_sliding_window": False,
                  "sliding_window": None, "max_window_layers": c["num_hidden_layers"],
                  "layer_types": ["full_attention"] * c["num_hidden_layers"],
                  "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2})
        return c


# ---- Mistral ----
class Mistral(Llama):
    """MistralForCausalLM (modeling_mistral.py) with sliding_window null: Llama's blocks."""

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "mistral", "architectures": ["MistralForCausalLM"], "hidden_act": "silu",
                  "sliding_window": None, "attention_dropout": 0.0, "bos_token_id": 1,
                  "eos_token_id": 2})
        return c


# ---- Gemma ----
class Gemma(Llama):
    """GemmaForCausalLM (modeling_gemma.py): RMSNorms × (1 + weight), embeddings × √hidden_size, the
    gate through gelu_pytorch_tanh (hidden_activation), tied embeddings."""
    NORM = _GemmaRMSNorm
    ACT = staticmethod(lambda x: F.gelu(x, approximate="tanh"))
    EMBED_SCALE = True

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "gemma", "architectures": ["GemmaForCausalLM"], "hidden_act": "gelu",
                  "hidden_activation": "gelu_pytorch_tanh", "rope_scaling": None,
                  "attention_bias": False, "attention_dropout": 0.0, "pad_token_id": 0,
                  "bos_token_id": 2, "eos_token_id": 1})
        return c


# ---- Phi-3 ----
def _sliding(T, window, device=None):
    """The causal mask with, when `window` is set, every key window or more positions back masked
    too (the sliding window of modeling_mistral.py / modeling_phi3.py: a query sees its last
    `window` keys)."""
    masked = _causal(T, device)
    if window:
        i = torch.arange(T, device=device)
        masked = masked | (i[None, :] <= i[:, None] - window).view(1, 1, T, T)
    return masked


def _rotate_first(x, cos, sin):
    """Rotary positions on the first cos.shape[-1] dimensions of each head; the rest unturned."""
    r = cos.shape[-1]
    x_rot, x_pass = x[..., :r], x[..., r:]
    return torch.cat([x_rot * cos + _rotate_half(x_rot) * sin, x_pass], dim=-1)


class _Phi3Attention(nn.Module):
    """Phi3Attention: one qkv_proj whose output is the queries (heads x head_dim), then the keys and
    the values (num_key_value_heads x head_dim each); o_proj; no biases."""

    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.n, self.nkv = c["num_attention_heads"], c["num_key_value_heads"]
        self.hd = _head_dim(c)
        self.window = c.get("sliding_window")
        self.qkv_proj = nn.Linear(H, (self.n + 2 * self.nkv) * self.hd, bias=False)
        self.o_proj = nn.Linear(self.n * self.hd, H, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        qkv = self.qkv_proj(x)
        nq, nk = self.n * self.hd, self.nkv * self.hd
        q = qkv[..., :nq].view(B, T, self.n, self.hd).transpose(1, 2)
        k = qkv[..., nq:nq + nk].view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = qkv[..., nq + nk:].view(B, T, self.nkv, self.hd).transpose(1, 2)
        q, k = _rotate_first(q, cos, sin), _rotate_first(k, cos, sin)
        rep = self.n // self.nkv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        w = torch.matmul(q, k.transpose(2, 3)) * self.hd ** -0.5
        masked = _sliding(T, self.window, w.device)
        probs = F.softmax(w + masked * torch.finfo(w.dtype).min, dim=-1, dtype=torch.float32)
        _record(self, w, masked, probs)
        return self.o_proj(torch.matmul(probs, v).transpose(1, 2).reshape(B, T, -1))


class _Phi3Mlp(nn.Module):
    """Phi3MLP: gate_up_proj's output split in halves, gate first: down(up * silu(gate))."""

    def __init__(self, c):
        super().__init__()
        H, I = c["hidden_size"], c["intermediate_size"]
        self.gate_up_proj = nn.Linear(H, 2 * I, bias=False)
        self.down_proj = nn.Linear(I, H, bias=False)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(up * F.silu(gate))


class _Phi3Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = _Phi3Attention(c)
        self.mlp = _Phi3Mlp(c)
        self.input_layernorm = _LlamaRMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.post_attention_layernorm = _LlamaRMSNorm(c["hidden_size"], c["rms_norm_eps"])

    def forward(self, x, cos, sin):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return h + self.mlp(self.post_attention_layernorm(h))


class Phi3(_CausalLM):
    """Phi3ForCausalLM (modeling_phi3.py): Llama's pre-RMSNorm blocks with q/k/v fused (qkv_proj)
    and gate/up fused (gate_up_proj), rotary positions on each head's first
    int(head_dim * partial_rotary_factor) dimensions (PhiRotaryEmbedding), a sliding window of
    sliding_window keys. cfg: Llama's plus partial_rotary_factor and sliding_window."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.model.layers = nn.ModuleList([_Phi3Layer(c) for _ in range(c["num_hidden_layers"])])
        self.model.norm = _LlamaRMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c["tie_word_embeddings"]:
            self.lm_head.weight = self.model.embed_tokens.weight

    def _run(self, idx):
        T = idx.shape[1]
        rd = int(_head_dim(self.c) * self.c.get("partial_rotary_factor", 1.0))
        inv_freq = 1.0 / (self.c["rope_theta"] ** (torch.arange(0, rd, 2, dtype=torch.int64).float() / rd))
        freqs = torch.outer(torch.arange(T).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        h = self.model.embed_tokens(idx)
        for layer in self.model.layers:
            h = layer(h, cos, sin)
        hidden = self.model.norm(h)
        return hidden, self.lm_head(hidden)

    def attention_layers(self):
        return [layer.self_attn for layer in self.model.layers]

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "phi3", "architectures": ["Phi3ForCausalLM"], "hidden_act": "silu",
                  "rope_scaling": None, "original_max_position_embeddings": c["max_position_embeddings"],
                  "attention_bias": False, "attention_dropout": 0.0, "resid_pdrop": 0.0,
                  "embd_pdrop": 0.0, "initializer_range": 0.02, "use_cache": True,
                  "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2})
        return c


# ---- Gemma 2 ----
def _gemma2_layer_types(c):
    """Gemma2Config's layer_types: given, else sliding on the even layers (0, 2, …), full on the odd."""
    return c.get("layer_types") or ["sliding_attention" if (i + 1) % 2 else "full_attention"
                                    for i in range(c["num_hidden_layers"])]


class _Gemma2Attention(nn.Module):
    """Gemma2Attention (eager): Llama's projections, the scores scaled by query_pre_attn_scalar^-0.5
    and soft-capped, cap * tanh(scores / cap) (attn_logit_softcapping), before the mask; a sliding
    layer also masks keys sliding_window or more positions back."""

    def __init__(self, c, kind):
        super().__init__()
        H = c["hidden_size"]
        self.n, self.nkv, self.hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        self.scaling = c["query_pre_attn_scalar"] ** -0.5
        self.cap = c.get("attn_logit_softcapping")
        self.window = c["sliding_window"] if kind == "sliding_attention" else None
        self.q_proj = nn.Linear(H, self.n * self.hd, bias=False)
        self.k_proj = nn.Linear(H, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(H, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.n * self.hd, H, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        rep = self.n // self.nkv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        w = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        if self.cap is not None:
            w = torch.tanh(w / self.cap) * self.cap
        masked = _sliding(T, self.window, w.device)
        probs = F.softmax(w + masked * torch.finfo(w.dtype).min, dim=-1, dtype=torch.float32)
        _record(self, w, masked, probs)
        return self.o_proj(torch.matmul(probs, v).transpose(1, 2).reshape(B, T, -1))


class _Gemma2Layer(nn.Module):
    """Gemma2DecoderLayer: each sublayer between two norms, x + post(sublayer(pre(x)))."""

    def __init__(self, c, kind):
        super().__init__()
        H, eps = c["hidden_size"], c["rms_norm_eps"]
        self.self_attn = _Gemma2Attention(c, kind)
        self.mlp = _LlamaMlp(c, lambda x: F.gelu(x, approximate="tanh"))
        self.input_layernorm = _GemmaRMSNorm(H, eps)
        self.post_attention_layernorm = _GemmaRMSNorm(H, eps)
        self.pre_feedforward_layernorm = _GemmaRMSNorm(H, eps)
        self.post_feedforward_layernorm = _GemmaRMSNorm(H, eps)

    def forward(self, x, cos, sin):
        h = x + self.post_attention_layernorm(self.self_attn(self.input_layernorm(x), cos, sin))
        return h + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(h)))


class Gemma2(_CausalLM):
    """Gemma2ForCausalLM (modeling_gemma2.py): Gemma's (1 + weight) RMSNorms and √hidden_size
    embeddings, the sandwich norms above, soft-capped attention scores, sliding and full layers
    (layer_types), tied lm_head, the logits soft-capped by final_logit_softcapping.
    cfg: Gemma's plus query_pre_attn_scalar, attn_logit_softcapping, final_logit_softcapping,
    sliding_window[, layer_types]."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        H = c["hidden_size"]
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(c["vocab_size"], H)
        self.model.layers = nn.ModuleList([_Gemma2Layer(c, kind) for kind in _gemma2_layer_types(c)])
        self.model.norm = _GemmaRMSNorm(H, c["rms_norm_eps"])
        self.lm_head = nn.Linear(H, c["vocab_size"], bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight

    def _run(self, idx):
        T = idx.shape[1]
        hd = self.c["head_dim"]
        inv_freq = 1.0 / (self.c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
        freqs = torch.outer(torch.arange(T).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        h = self.model.embed_tokens(idx)
        h = h * torch.tensor(self.c["hidden_size"] ** 0.5, dtype=h.dtype)
        for layer in self.model.layers:
            h = layer(h, cos, sin)
        hidden = self.model.norm(h)
        logits = self.lm_head(hidden)
        cap = self.c.get("final_logit_softcapping")
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
        return hidden, logits

    def attention_layers(self):
        return [layer.self_attn for layer in self.model.layers]

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "gemma2", "architectures": ["Gemma2ForCausalLM"],
                  "hidden_activation": "gelu_pytorch_tanh", "hidden_act": "gelu_pytorch_tanh",
                  "layer_types": _gemma2_layer_types(c), "rope_scaling": None,
                  "attention_bias": False, "attention_dropout": 0.0, "pad_token_id": 0,
                  "bos_token_id": 2, "eos_token_id": 1, "cache_implementation": "hybrid",
                  "initializer_range": 0.02, "use_cache": True})
        return c


# ---- GPT-Neo ----
class _NeoSelfAttention(nn.Module):
    """GPTNeoSelfAttention: q, k, v without biases, out_proj with one; the scores q·k unscaled, in
    float32; a "local" layer also masks every key more than window_size - 1 positions back."""

    def __init__(self, c, kind):
        super().__init__()
        H = c["hidden_size"]
        self.n, self.hd = c["num_heads"], H // c["num_heads"]
        self.kind, self.window = kind, c["window_size"]
        self.k_proj = nn.Linear(H, H, bias=False)
        self.v_proj = nn.Linear(H, H, bias=False)
        self.q_proj = nn.Linear(H, H, bias=False)
        self.out_proj = nn.Linear(H, H, bias=True)

    def forward(self, x):
        B, T, H = x.shape
        q, k, v = [lin(x).view(B, T, self.n, self.hd).transpose(1, 2)
                   for lin in (self.q_proj, self.k_proj, self.v_proj)]
        w = torch.matmul(q.float(), k.float().transpose(-1, -2))
        masked = _causal(T, x.device)
        if self.kind == "local":
            i = torch.arange(T, device=x.device)
            masked = masked | (i[None, :] <= i[:, None] - self.window).view(1, 1, T, T)
        probs = F.softmax(torch.where(masked, torch.finfo(w.dtype).min, w), dim=-1)
        _record(self, w, masked, probs)
        return self.out_proj(torch.matmul(probs, v).transpose(1, 2).reshape(B, T, H))


class _NeoBlock(nn.Module):
    def __init__(self, c, kind):
        super().__init__()
        H, eps = c["hidden_size"], c["layer_norm_epsilon"]
        inner = c.get("intermediate_size") or 4 * H
        self.ln_1 = nn.LayerNorm(H, eps=eps)
        self.attn = nn.Module()
        self.attn.attention = _NeoSelfAttention(c, kind)
        self.ln_2 = nn.LayerNorm(H, eps=eps)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(H, inner)
        self.mlp.c_proj = nn.Linear(inner, H)

    def forward(self, x):
        x = x + self.attn.attention(self.ln_1(x))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh"))


def _neo_layers(types):
    """GPTNeoConfig.expand_attention_types_params: [[["global", "local"], 2]] -> the layers."""
    out = []
    for pattern, count in types:
        for _ in range(count):
            out.extend(pattern)
    return out


class GptNeo(_CausalLM):
    """GPTNeoForCausalLM (modeling_gpt_neo.py): learned positions, pre-LayerNorm blocks whose
    attention alternates global and local (window_size), gelu_new, ln_f, lm_head tied to wte.
    cfg: vocab_size, hidden_size, num_layers, num_heads, max_position_embeddings, window_size,
    attention_types, layer_norm_epsilon[, intermediate_size]."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        H = c["hidden_size"]
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(c["vocab_size"], H)
        self.transformer.wpe = nn.Embedding(c["max_position_embeddings"], H)
        self.transformer.h = nn.ModuleList([_NeoBlock(c, kind)
                                            for kind in _neo_layers(c["attention_types"])])
        self.transformer.ln_f = nn.LayerNorm(H, eps=c["layer_norm_epsilon"])
        self.lm_head = nn.Linear(H, c["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight

    def _run(self, idx):
        t = self.transformer
        h = t.wte(idx) + t.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in t.h:
            h = block(h)
        hidden = t.ln_f(h)
        return hidden, self.lm_head(hidden)

    def attention_layers(self):
        return [b.attn.attention for b in self.transformer.h]

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "gpt_neo", "architectures": ["GPTNeoForCausalLM"],
                  "attention_layers": _neo_layers(c["attention_types"]),
                  "activation_function": "gelu_new", "intermediate_size": c.get("intermediate_size"),
                  "embed_dropout": 0.0, "attention_dropout": 0.0, "resid_dropout": 0.0,
                  "classifier_dropout": 0.1, "initializer_range": 0.02, "use_cache": True,
                  "bos_token_id": c["vocab_size"] - 1, "eos_token_id": c["vocab_size"] - 1,
                  "tie_word_embeddings": True})
        return c


# ---- GPT-NeoX / Pythia ----
class _NeoXAttention(nn.Module):
    """GPTNeoXAttention: query_key_value fused per head (the output viewed [.., heads, 3·head_size]:
    each head's q, k, v side by side), rotate_half rotary positions on each head's first
    rotary_ndims = int(head_size · rotary_pct) values, scores × head_size^-0.5, dense."""

    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.n, self.hd = c["num_attention_heads"], H // c["num_attention_heads"]
        self.rot = int(self.hd * c["rotary_pct"])
        bias = c.get("attention_bias", True)
        self.query_key_value = nn.Linear(H, 3 * H, bias=bias)
        self.dense = nn.Linear(H, H, bias=bias)

    def forward(self, x, cos, sin):
        B, T, H = x.shape
        qkv = self.query_key_value(x).view(B, T, self.n, 3 * self.hd)
        q = qkv[..., : self.hd].permute(0, 2, 1, 3)
        k = qkv[..., self.hd: 2 * self.hd].permute(0, 2, 1, 3)
        v = qkv[..., 2 * self.hd:].permute(0, 2, 1, 3)
        q_rot, q_pass = q[..., : self.rot], q[..., self.rot:]
        k_rot, k_pass = k[..., : self.rot], k[..., self.rot:]
        q = torch.cat((q_rot * cos + _rotate_half(q_rot) * sin, q_pass), dim=-1)
        k = torch.cat((k_rot * cos + _rotate_half(k_rot) * sin, k_pass), dim=-1)
        w = torch.matmul(q, k.transpose(-1, -2)) * self.hd ** -0.5
        masked = _causal(T, x.device)
        probs = F.softmax(torch.where(masked, torch.finfo(w.dtype).min, w), dim=-1)
        _record(self, w, masked, probs)
        return self.dense(torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(B, T, H))


class _NeoXMlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.dense_4h_to_h = nn.Linear(c["intermediate_size"], c["hidden_size"])

    def forward(self, x):
        return self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(x)))  # hidden_act "gelu"


class _NeoXLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.parallel = c["use_parallel_residual"]
        self.input_layernorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.post_attention_layernorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.attention = _NeoXAttention(c)
        self.mlp = _NeoXMlp(c)

    def forward(self, x, cos, sin):
        a = self.attention(self.input_layernorm(x), cos, sin)
        if self.parallel:  # x + attn(ln1(x)) + mlp(ln2(x))
            return self.mlp(self.post_attention_layernorm(x)) + a + x
        a = a + x
        return self.mlp(self.post_attention_layernorm(a)) + a


class GptNeoX(_CausalLM):
    """GPTNeoXForCausalLM (modeling_gpt_neox.py): embed_in, layers of _NeoXLayer, final_layer_norm,
    embed_out (untied unless tie_word_embeddings). cfg: vocab_size, hidden_size, num_hidden_layers,
    num_attention_heads, intermediate_size, rotary_pct, rotary_emb_base, max_position_embeddings,
    layer_norm_eps, use_parallel_residual, tie_word_embeddings."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        H = c["hidden_size"]
        self.gpt_neox = nn.Module()
        self.gpt_neox.embed_in = nn.Embedding(c["vocab_size"], H)
        self.gpt_neox.layers = nn.ModuleList([_NeoXLayer(c) for _ in range(c["num_hidden_layers"])])
        self.gpt_neox.final_layer_norm = nn.LayerNorm(H, eps=c["layer_norm_eps"])
        self.embed_out = nn.Linear(H, c["vocab_size"], bias=False)
        if c["tie_word_embeddings"]:
            self.embed_out.weight = self.gpt_neox.embed_in.weight

    def _run(self, idx):
        T = idx.shape[1]
        rot = int(self.c["hidden_size"] // self.c["num_attention_heads"] * self.c["rotary_pct"])
        inv_freq = 1.0 / (self.c["rotary_emb_base"] ** (torch.arange(0, rot, 2, dtype=torch.int64).float() / rot))
        freqs = torch.outer(torch.arange(T).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        h = self.gpt_neox.embed_in(idx)
        for layer in self.gpt_neox.layers:
            h = layer(h, cos, sin)
        hidden = self.gpt_neox.final_layer_norm(h)
        return hidden, self.embed_out(hidden)

    def attention_layers(self):
        return [layer.attention for layer in self.gpt_neox.layers]

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "hidden_act": "gelu",
                  "attention_bias": True, "attention_dropout": 0.0, "hidden_dropout": 0.0,
                  "classifier_dropout": 0.1, "initializer_range": 0.02, "use_cache": True,
                  "rope_scaling": None, "bos_token_id": 0, "eos_token_id": 0,
                  # what newer GPTNeoXConfig versions save beside rotary_pct and rotary_emb_base
                  "partial_rotary_factor": c["rotary_pct"], "rope_theta": c["rotary_emb_base"]})
        return c


# ---- OPT ----
class _OptAttention(nn.Module):
    """OPTAttention: q_proj(x) × head_dim^-0.5, then q·k; biases on q, k, v, out_proj."""

    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.n, self.hd = c["num_attention_heads"], H // c["num_attention_heads"]
        bias = c.get("enable_bias", True)
        self.q_proj, self.k_proj = nn.Linear(H, H, bias=bias), nn.Linear(H, H, bias=bias)
        self.v_proj, self.out_proj = nn.Linear(H, H, bias=bias), nn.Linear(H, H, bias=bias)

    def forward(self, x):
        B, T, H = x.shape
        q = (self.q_proj(x) * self.hd ** -0.5).view(B, T, self.n, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n, self.hd).transpose(1, 2)
        w = torch.matmul(q, k.transpose(-1, -2))
        masked = _causal(T, x.device)
        probs = F.softmax(torch.where(masked, torch.finfo(w.dtype).min, w), dim=-1)
        _record(self, w, masked, probs)
        return self.out_proj(torch.matmul(probs, v).transpose(1, 2).reshape(B, T, H))


class _OptLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.pre = c["do_layer_norm_before"]
        self.self_attn = _OptAttention(c)
        self.self_attn_layer_norm = nn.LayerNorm(H)
        self.fc1 = nn.Linear(H, c["ffn_dim"], bias=c.get("enable_bias", True))
        self.fc2 = nn.Linear(c["ffn_dim"], H, bias=c.get("enable_bias", True))
        self.final_layer_norm = nn.LayerNorm(H)

    def forward(self, x):
        h = self.self_attn(self.self_attn_layer_norm(x) if self.pre else x) + x
        if not self.pre:  # opt-350m: the norm after the residual
            h = self.self_attn_layer_norm(h)
        f = self.fc2(F.relu(self.fc1(self.final_layer_norm(h) if self.pre else h))) + h
        return f if self.pre else self.final_layer_norm(f)


class Opt(_CausalLM):
    """OPTForCausalLM (modeling_opt.py) with word_embed_proj_dim = hidden_size: learned positions
    read at position + 2, OPT's layers, the decoder's final_layer_norm when do_layer_norm_before,
    lm_head tied to embed_tokens. cfg: vocab_size, hidden_size, num_hidden_layers,
    num_attention_heads, ffn_dim, max_position_embeddings, do_layer_norm_before."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        H = c["hidden_size"]
        self.model = nn.Module()
        d = self.model.decoder = nn.Module()
        d.embed_tokens = nn.Embedding(c["vocab_size"], H, padding_idx=1)
        d.embed_positions = nn.Embedding(c["max_position_embeddings"] + 2, H)
        if c["do_layer_norm_before"]:
            d.final_layer_norm = nn.LayerNorm(H)
        d.layers = nn.ModuleList([_OptLayer(c) for _ in range(c["num_hidden_layers"])])
        self.lm_head = nn.Linear(H, c["vocab_size"], bias=False)
        self.lm_head.weight = d.embed_tokens.weight

    def _run(self, idx):
        d = self.model.decoder
        # positions from the attention mask (all ones): cumsum − 1, then + 2
        pos = torch.cumsum(torch.ones_like(idx), dim=1) - 1
        h = d.embed_tokens(idx) + d.embed_positions(pos + 2)
        for layer in d.layers:
            h = layer(h)
        hidden = d.final_layer_norm(h) if self.c["do_layer_norm_before"] else h
        return hidden, self.lm_head(hidden)

    def attention_layers(self):
        return [layer.self_attn for layer in self.model.decoder.layers]

    def config(self):
        c = dict(self.c)
        c.update({"model_type": "opt", "architectures": ["OPTForCausalLM"], "activation_function": "relu",
                  "word_embed_proj_dim": c["hidden_size"], "enable_bias": True,
                  "layer_norm_elementwise_affine": True, "_remove_final_layer_norm": False,
                  "dropout": 0.0, "attention_dropout": 0.0, "layerdrop": 0.0, "init_std": 0.02,
                  "use_cache": True, "pad_token_id": 1, "bos_token_id": 2, "eos_token_id": 2,
                  "tie_word_embeddings": True})
        return c
