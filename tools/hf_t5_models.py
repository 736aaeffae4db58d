"""A small PyTorch T5 for attnviz's parity tests, written after Hugging Face transformers'
modeling_t5.py and configuration_t5.py (T5ForConditionalGeneration; mT5 and Flan-T5 are the same
code): the same module structure, hence the same state_dict names, and the same numerics in eager
float32. Debian ships no transformers; this class is what the tests compare with.

    T5(vocab_size, d_model, d_kv, d_ff, num_layers, num_decoder_layers, num_heads,
       relative_attention_num_buckets, relative_attention_max_distance, layer_norm_epsilon,
       feed_forward_proj, tie_word_embeddings, pad_token_id=0, eos_token_id=1,
       decoder_start_token_id=0)

What it computes, as the modeling code does:
- no positions added to the embeddings; the first block of each stack holds
  SelfAttention.relative_attention_bias [num_buckets, heads], looked up by the bucket of
  key position − query position (bidirectional in the encoder, causal in the decoder) and added to
  every layer's self-attention scores; cross-attention has no bias;
- scores q·kᵀ without 1/√d_kv; the additive mask (float32's lowest value) after the bias;
- T5LayerNorm: x / √(mean(x²) + eps) · weight (no mean, no bias), before each sublayer, and a
  final_layer_norm per stack;
- DenseReluDense: wo(act(wi(x))) for "relu"; wo(act(wi_0(x)) ⊙ wi_1(x)) for "gated-gelu" (gelu_new);
- with tie_word_embeddings the decoder's output × d_model^-0.5 into lm_head = shared.

``trace(src_ids, tgt_ids)`` returns the reference tensors of docs/formats.md (enc_self/dec_self/cross
scores — after the bias, before the mask —, masks, probs [B, L, H, Tq, Tk], logits, hidden);
``greedy_decode(src, max_len)`` decodes from decoder_start_token_id with the plain argmax, stopping
after eos.

Always run with Debian's PyTorch: /usr/bin/python3.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference_models as hm  # noqa: E402

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
               "silu": F.silu}


def feed_forward_kind(proj):
    """configuration_t5.py's reading of feed_forward_proj: (gated, activation name)."""
    parts = proj.split("-")
    gated = parts[0] == "gated"
    act = "gelu_new" if proj == "gated-gelu" else parts[-1]
    return gated, act


def relative_bucket(rel, bidirectional, num_buckets, max_distance):
    """The bucket of each relative position rel = key − query (a long tensor), as modeling_t5.py's
    bucketing: with bidirectional, half of the buckets for keys after the query; within a half, the
    distances below half of its buckets exact, larger ones on a log scale (float32) up to
    max_distance, the last bucket beyond."""
    bucket = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        bucket = bucket + (rel > 0).long() * num_buckets
        dist = rel.abs()
    else:
        dist = -torch.clamp(rel, max=0)
    exact = num_buckets // 2
    small = dist < exact
    log_ratio = torch.log(dist.float() / exact) / math.log(max_distance / exact)
    large = exact + (log_ratio * (num_buckets - exact)).long()
    large = torch.clamp(large, max=num_buckets - 1)
    return bucket + torch.where(small, dist, large)


class LayerNorm(nn.Module):
    """T5LayerNorm: RMS over the last dimension (variance in float32), then the weight."""

    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        var = x.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


class Attention(nn.Module):
    """T5Attention (eager): q, k, v, o without bias; the scores unscaled."""

    def __init__(self, cfg, has_bias, bidirectional):
        super().__init__()
        self.heads, self.d_kv = cfg["num_heads"], cfg["d_kv"]
        inner = self.heads * self.d_kv
        d = cfg["d_model"]
        self.q = nn.Linear(d, inner, bias=False)
        self.k = nn.Linear(d, inner, bias=False)
        self.v = nn.Linear(d, inner, bias=False)
        self.o = nn.Linear(inner, d, bias=False)
        self.bidirectional = bidirectional
        self.num_buckets = cfg["relative_attention_num_buckets"]
        self.max_distance = cfg["relative_attention_max_distance"]
        if has_bias:
            self.relative_attention_bias = nn.Embedding(self.num_buckets, self.heads)
        self.last = None

    def position_bias(self, q_len, k_len):
        """[1, H, q_len, k_len]: the table's value at the bucket of key − query."""
        query = torch.arange(q_len)[:, None]
        key = torch.arange(k_len)[None, :]
        buckets = relative_bucket(key - query, self.bidirectional, self.num_buckets, self.max_distance)
        return self.relative_attention_bias(buckets).permute(2, 0, 1).unsqueeze(0)

    def _split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.heads, self.d_kv).transpose(1, 2)

    def forward(self, x, kv, masked, bias):
        """x [B, Tq, d], kv [B, Tk, d], masked bool [B, 1, Tq, Tk] (True = masked), bias
        [1, H, Tq, Tk] or zeros (cross-attention)."""
        q, k, v = self._split(self.q(x)), self._split(self.k(kv)), self._split(self.v(kv))
        scores = q @ k.transpose(-1, -2) + bias  # no 1/√d_kv
        additive = torch.zeros(masked.shape).masked_fill(masked, torch.finfo(torch.float32).min)
        probs = torch.softmax((scores + additive).float(), dim=-1)
        self.last = {"scores": scores, "mask": masked.expand_as(scores), "probs": probs}
        out = (probs @ v).transpose(1, 2).reshape(x.shape[0], x.shape[1], -1)
        return self.o(out)


class SelfAttentionLayer(nn.Module):
    """T5LayerSelfAttention: x + SelfAttention(layer_norm(x))."""

    def __init__(self, cfg, has_bias, bidirectional):
        super().__init__()
        self.SelfAttention = Attention(cfg, has_bias, bidirectional)
        self.layer_norm = LayerNorm(cfg["d_model"], cfg["layer_norm_epsilon"])

    def forward(self, h, masked, bias):
        n = self.layer_norm(h)
        return h + self.SelfAttention(n, n, masked, bias)


class CrossAttentionLayer(nn.Module):
    """T5LayerCrossAttention: x + EncDecAttention(layer_norm(x), encoder output); no bias."""

    def __init__(self, cfg):
        super().__init__()
        self.EncDecAttention = Attention(cfg, False, False)
        self.layer_norm = LayerNorm(cfg["d_model"], cfg["layer_norm_epsilon"])

    def forward(self, h, memory, masked):
        zeros = torch.zeros(1, self.EncDecAttention.heads, h.shape[1], memory.shape[1])
        return h + self.EncDecAttention(self.layer_norm(h), memory, masked, zeros)


class DenseActDense(nn.Module):
    def __init__(self, cfg, act):
        super().__init__()
        self.wi = nn.Linear(cfg["d_model"], cfg["d_ff"], bias=False)
        self.wo = nn.Linear(cfg["d_ff"], cfg["d_model"], bias=False)
        self.act = ACTIVATIONS[act]

    def forward(self, x):
        return self.wo(self.act(self.wi(x)))


class DenseGatedActDense(nn.Module):
    def __init__(self, cfg, act):
        super().__init__()
        self.wi_0 = nn.Linear(cfg["d_model"], cfg["d_ff"], bias=False)
        self.wi_1 = nn.Linear(cfg["d_model"], cfg["d_ff"], bias=False)
        self.wo = nn.Linear(cfg["d_ff"], cfg["d_model"], bias=False)
        self.act = ACTIVATIONS[act]

    def forward(self, x):
        return self.wo(self.act(self.wi_0(x)) * self.wi_1(x))


class FeedForwardLayer(nn.Module):
    """T5LayerFF: x + DenseReluDense(layer_norm(x)) (the module keeps that name when gated)."""

    def __init__(self, cfg):
        super().__init__()
        gated, act = feed_forward_kind(cfg["feed_forward_proj"])
        self.DenseReluDense = DenseGatedActDense(cfg, act) if gated else DenseActDense(cfg, act)
        self.layer_norm = LayerNorm(cfg["d_model"], cfg["layer_norm_epsilon"])

    def forward(self, h):
        return h + self.DenseReluDense(self.layer_norm(h))


class Block(nn.Module):
    def __init__(self, cfg, first, decoder):
        super().__init__()
        parts = [SelfAttentionLayer(cfg, first, not decoder)]
        if decoder:
            parts.append(CrossAttentionLayer(cfg))
        parts.append(FeedForwardLayer(cfg))
        self.layer = nn.ModuleList(parts)


class Stack(nn.Module):
    """T5Stack: embeddings (no positions), blocks, final_layer_norm."""

    def __init__(self, cfg, shared, decoder):
        super().__init__()
        self.embed_tokens = shared
        n = cfg["num_decoder_layers"] if decoder else cfg["num_layers"]
        self.block = nn.ModuleList([Block(cfg, i == 0, decoder) for i in range(n)])
        self.final_layer_norm = LayerNorm(cfg["d_model"], cfg["layer_norm_epsilon"])
        self.decoder = decoder

    def forward(self, ids, self_masked, memory=None, cross_masked=None):
        h = self.embed_tokens(ids)
        T = ids.shape[1]
        bias = self.block[0].layer[0].SelfAttention.position_bias(T, T)  # shared by every layer
        for blk in self.block:
            h = blk.layer[0](h, self_masked, bias)
            if self.decoder:
                h = blk.layer[1](h, memory, cross_masked)
            h = blk.layer[-1](h)
        return self.final_layer_norm(h)


class T5(nn.Module):
    """T5ForConditionalGeneration: shared, encoder, decoder, lm_head."""

    def __init__(self, vocab_size, d_model, d_kv, d_ff, num_layers, num_decoder_layers, num_heads,
                 relative_attention_num_buckets, relative_attention_max_distance, layer_norm_epsilon,
                 feed_forward_proj, tie_word_embeddings, pad_token_id=0, eos_token_id=1,
                 decoder_start_token_id=0):
        super().__init__()
        self.cfg = dict(vocab_size=vocab_size, d_model=d_model, d_kv=d_kv, d_ff=d_ff, num_layers=num_layers,
                        num_decoder_layers=num_decoder_layers, num_heads=num_heads,
                        relative_attention_num_buckets=relative_attention_num_buckets,
                        relative_attention_max_distance=relative_attention_max_distance,
                        layer_norm_epsilon=layer_norm_epsilon, feed_forward_proj=feed_forward_proj,
                        tie_word_embeddings=tie_word_embeddings, pad_token_id=pad_token_id,
                        eos_token_id=eos_token_id, decoder_start_token_id=decoder_start_token_id)
        self.shared = nn.Embedding(vocab_size, d_model)
        self.encoder = Stack(self.cfg, self.shared, decoder=False)
        self.decoder = Stack(self.cfg, self.shared, decoder=True)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        if tie_word_embeddings:
            self.lm_head.weight = self.shared.weight

    def config_json(self, **extra):
        """config.json as save_pretrained writes a T5Config (the keys the model reads and some it does
        not)."""
        gated, act = feed_forward_kind(self.cfg["feed_forward_proj"])
        c = dict(self.cfg, model_type="t5", architectures=["T5ForConditionalGeneration"], is_encoder_decoder=True,
                 dropout_rate=0.1, initializer_factor=1.0, use_cache=True, classifier_dropout=0.0,
                 dense_act_fn=act, is_gated_act=gated, torch_dtype="float32", transformers_version="4.40.0")
        c.update(extra)
        return c

    def _masks(self, src, tgt):
        return hm.seq2seq_masks(src, tgt, self.cfg["pad_token_id"])

    def forward(self, src, tgt):
        """src [B, S], tgt [B, T] (from the start token) -> logits [B, T, V], decoder output [B, T, d]."""
        enc_mask, dec_mask, cross_mask = self._masks(src, tgt)
        memory = self.encoder(src, enc_mask)
        h = self.decoder(tgt, dec_mask, memory, cross_mask)
        out = h * self.cfg["d_model"] ** -0.5 if self.cfg["tie_word_embeddings"] else h
        return self.lm_head(out), h

    def trace(self, src_ids, tgt_ids):
        self.eval()
        src, tgt = torch.tensor(src_ids), torch.tensor(tgt_ids)
        with torch.no_grad():
            logits, hidden = self(src, tgt)
        records = {"enc_self": [b.layer[0].SelfAttention.last for b in self.encoder.block],
                   "dec_self": [b.layer[0].SelfAttention.last for b in self.decoder.block],
                   "cross": [b.layer[1].EncDecAttention.last for b in self.decoder.block]}
        return hm.reference_tensors(records, logits, hidden)

    def loss_gradients(self, src_ids, tgt_ids, targets):
        """The mean cross-entropy of the logits against `targets` [B, T] (−1: not counted), as a
        training step computes it without dropout, and its gradient for every parameter (a tied one
        once, under its first name: shared.weight)."""
        self.eval()
        self.zero_grad()
        logits, _ = self(torch.tensor(src_ids), torch.tensor(tgt_ids))
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), torch.tensor(targets).reshape(-1),
                               ignore_index=-1)
        loss.backward()
        grads = {name: p.grad.detach().clone().numpy() for name, p in self.named_parameters()}
        self.zero_grad()
        return float(loss), grads

    def greedy_decode(self, src_1d, max_len):
        """From decoder_start_token_id, the plain argmax until eos (kept) or max_len ids."""
        return hm.greedy_decode(self, src_1d, max_len)


def init_for_reference_(model, seed, qk_gain=1.6, bias_std=1.0):
    """Deterministic random weights with peaked attention (not a training init): linear weights
    N(0, 1/fan_in) with q and k at qk_gain and q × d_kv^-0.5 more, T5LayerNorm weights 1 + N(0, 0.2²), shared N(0, 1)
    (its pad row × 0.1), the
    relative position bias tables N(0, bias_std²), an untied lm_head N(0, 1/d_model)."""
    g = torch.Generator().manual_seed(seed)

    def normal(shape, std):
        return torch.randn(shape, generator=g) * std

    with torch.no_grad():
        for name, p in model.named_parameters():  # tied parameters appear once
            parts = name.split(".")
            leaf, parent = parts[-1], parts[-2]
            if "layer_norm" in parent:
                p.copy_(1.0 + normal(p.shape, 0.2))
            elif parent == "relative_attention_bias":
                p.copy_(normal(p.shape, bias_std))
            elif parent == "shared":
                p.copy_(normal(p.shape, 1.0))
                # the pad row (the decoder's start) small: a tied head would echo the start token
                p[model.cfg["pad_token_id"]] *= 0.1
            elif leaf == "weight" and p.dim() == 2:
                gain = qk_gain if parent in ("q", "k") else 1.0
                # q also × d_kv^-0.5, as T5's own initialisation: its scores are not scaled
                if parent == "q":
                    gain /= math.sqrt(model.cfg["d_kv"])
                p.copy_(normal(p.shape, gain / math.sqrt(p.shape[1])))
            else:
                raise ValueError("init_for_reference_: unhandled parameter %s" % name)
    return model
