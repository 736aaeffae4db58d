"""Small PyTorch Marian, BART, mBART, Pegasus and M2M100 models for attnviz's parity tests, written
after Hugging Face transformers' modeling_marian.py, modeling_bart.py, modeling_mbart.py,
modeling_pegasus.py and modeling_m2m_100.py (MarianMTModel, BartForConditionalGeneration,
MBartForConditionalGeneration, PegasusForConditionalGeneration, M2M100ForConditionalGeneration):
the same module structure, hence the same state_dict names, and the same numerics in eager mode.
Debian ships no transformers; these classes are what the tests compare with.

    HfSeq2Seq(kind, vocab_size, d_model, heads, ffn_dim, encoder_layers, decoder_layers,
              max_position_embeddings, pad_token_id, eos_token_id, decoder_start_token_id,
              activation_function, scale_embedding, bos_token_id=None)

kind "marian": sinusoidal positions laid out [sin | cos] (MarianSinusoidalPositionalEmbedding), no
embedding LayerNorm; kind "bart": learned positions whose rows start at offset 2
(BartLearnedPositionalEmbedding) and layernorm_embedding after token + position embeddings. Both:
post-norm layers (self_attn, self_attn_layer_norm, encoder_attn, encoder_attn_layer_norm, fc1, fc2,
final_layer_norm), q_proj scaled by head_dim^-0.5, an additive mask of float32's lowest value, and
lm_head tied to model.shared with final_logits_bias added.

kind "mbart": BART's embeddings (learned positions from row 2, layernorm_embedding) with pre-norm
layers (each sublayer's LayerNorm before it, the residual added after) and a final layer_norm on
each stack. kind "pegasus": Marian's [sin | cos] positions with mBART's pre-norm layers and final
layer norms, no layernorm_embedding. kind "m2m_100": pre-norm as mBART, no layernorm_embedding, the
fairseq sinusoid of M2M100SinusoidalPositionalEmbedding (m2m100_sinusoid) read at position ids
counted from padding_idx + 1 over the tokens that are not padding (a pad token reads the zero row
padding_idx).

``trace(src_ids, tgt_ids)`` returns the reference tensors of docs/formats.md (enc_self/dec_self/cross
scores, masks, probs [B, L, H, Tq, Tk], logits, hidden); ``greedy_decode(src, max_len)`` decodes as
attnviz's greedy decoder does (the plain argmax; Hugging Face's generate() adds rules such as
Marian's bad_words_ids that attnviz leaves out).

Always run with Debian's PyTorch: /usr/bin/python3.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ACTIVATIONS = {"swish": F.silu, "silu": F.silu, "gelu": F.gelu, "relu": F.relu,
               "gelu_new": lambda x: F.gelu(x, approximate="tanh")}


def marian_sinusoid(n_pos, dim):
    """MarianSinusoidalPositionalEmbedding's table: angle pos / 10000^(2*(j//2)/dim) in float64, the sines
    of the even j in the first half of the columns, the cosines of the odd j in the second half."""
    angle = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
    half = dim // 2 + dim % 2
    out = torch.empty(n_pos, dim)
    out[:, :half] = torch.tensor(np.sin(angle[:, 0::2]), dtype=torch.float32)
    out[:, half:] = torch.tensor(np.cos(angle[:, 1::2]), dtype=torch.float32)
    return out


class SinusoidalPositions(nn.Embedding):
    """Marian's fixed table (a Parameter without gradient, as in transformers)."""

    def __init__(self, n_pos, dim):
        super().__init__(n_pos, dim)
        self.weight = nn.Parameter(marian_sinusoid(n_pos, dim), requires_grad=False)

    def forward(self, seq_len, past=0):
        return super().forward(torch.arange(past, past + seq_len))


def m2m100_sinusoid(n_rows, dim, padding_idx):
    """M2M100SinusoidalPositionalEmbedding.get_embedding, in float32 as it computes: frequencies
    exp(-k · ln(10000) / (dim/2 - 1)) for k < dim/2, row p = [sin(p·f) | cos(p·f)] (a zero column
    when dim is odd), the row padding_idx zero."""
    half = dim // 2
    freq = torch.exp(torch.arange(half, dtype=torch.float) * -(math.log(10000) / (half - 1)))
    angle = torch.arange(n_rows, dtype=torch.float).unsqueeze(1) * freq.unsqueeze(0)
    table = torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)
    if dim % 2 == 1:
        table = torch.cat([table, torch.zeros(n_rows, 1)], dim=1)
    table[padding_idx, :] = 0
    return table


class M2M100Positions(nn.Module):
    """M2M100's positions: a fixed buffer `weights` (not saved), each token's row from its id (a pad
    token reads the zero row padding_idx, the others padding_idx + 1 + their count of non-pad
    tokens so far minus one), past positions counted on."""

    offset = 2

    def __init__(self, n_pos, dim, padding_idx):
        super().__init__()
        self.padding_idx = padding_idx
        self.register_buffer("weights", m2m100_sinusoid(n_pos + 2 * self.offset, dim, padding_idx),
                             persistent=False)

    def forward(self, ids, past=0):
        keep = ids.ne(self.padding_idx).int()
        position_ids = (torch.cumsum(keep, dim=1).type_as(keep) + past) * keep + self.padding_idx
        return self.weights.index_select(0, position_ids.view(-1).long()).view(*ids.shape, -1)


class LearnedPositions(nn.Embedding):
    """BART's learned table: 2 extra rows, position p reads row p + 2."""

    offset = 2

    def __init__(self, n_pos, dim):
        super().__init__(n_pos + self.offset, dim)

    def forward(self, seq_len, past=0):
        return super().forward(torch.arange(past, past + seq_len) + self.offset)


class Attention(nn.Module):
    """BartAttention / MarianAttention (eager): q_proj(x)·scaling, scores q·kᵀ, an additive mask."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.heads, self.head_dim = heads, d_model // heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.q_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.last = None

    def _split(self, x):  # [B, T, d] -> [B, H, T, hd]
        B, T, _ = x.shape
        return x.view(B, T, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x, kv, masked):
        """x [B, Tq, d], kv [B, Tk, d], masked bool [B, 1, Tq, Tk] (True = masked)."""
        q = self._split(self.q_proj(x) * self.scaling)
        k, v = self._split(self.k_proj(kv)), self._split(self.v_proj(kv))
        scores = q @ k.transpose(-1, -2)  # [B, H, Tq, Tk], already scaled
        additive = torch.zeros(masked.shape).masked_fill(masked, torch.finfo(torch.float32).min)
        probs = torch.softmax(scores + additive, dim=-1)
        self.last = {"scores": scores, "mask": masked.expand_as(scores), "probs": probs}
        out = (probs @ v).transpose(1, 2).reshape(x.shape)
        return self.out_proj(out)


class EncoderLayer(nn.Module):
    def __init__(self, d_model, heads, ffn_dim, act, pre_norm=False):
        super().__init__()
        self.pre_norm = pre_norm
        self.self_attn = Attention(d_model, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d_model)
        self.act = act
        self.fc1 = nn.Linear(d_model, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, d_model)
        self.final_layer_norm = nn.LayerNorm(d_model)

    def forward(self, h, masked):
        if self.pre_norm:  # MBartEncoderLayer: norm, sublayer, residual
            x = self.self_attn_layer_norm(h)
            h = h + self.self_attn(x, x, masked)
            return h + self.fc2(self.act(self.fc1(self.final_layer_norm(h))))
        h = self.self_attn_layer_norm(h + self.self_attn(h, h, masked))
        return self.final_layer_norm(h + self.fc2(self.act(self.fc1(h))))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, heads, ffn_dim, act, pre_norm=False):
        super().__init__()
        self.pre_norm = pre_norm
        self.self_attn = Attention(d_model, heads)
        self.act = act
        self.self_attn_layer_norm = nn.LayerNorm(d_model)
        self.encoder_attn = Attention(d_model, heads)
        self.encoder_attn_layer_norm = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, d_model)
        self.final_layer_norm = nn.LayerNorm(d_model)

    def forward(self, h, self_masked, memory, cross_masked):
        if self.pre_norm:  # MBartDecoderLayer
            x = self.self_attn_layer_norm(h)
            h = h + self.self_attn(x, x, self_masked)
            h = h + self.encoder_attn(self.encoder_attn_layer_norm(h), memory, cross_masked)
            return h + self.fc2(self.act(self.fc1(self.final_layer_norm(h))))
        h = self.self_attn_layer_norm(h + self.self_attn(h, h, self_masked))
        h = self.encoder_attn_layer_norm(h + self.encoder_attn(h, memory, cross_masked))
        return self.final_layer_norm(h + self.fc2(self.act(self.fc1(h))))


class Stack(nn.Module):
    """The encoder (decoder=False) or the decoder of each kind (MarianEncoder, BartEncoder, …)."""

    def __init__(self, kind, shared, cfg, decoder):
        super().__init__()
        d = cfg["d_model"]
        self.kind = kind
        self.embed_tokens = shared
        self.embed_scale = math.sqrt(d) if cfg["scale_embedding"] else 1.0
        n_pos = cfg["max_position_embeddings"]
        if kind in ("marian", "pegasus"):
            self.embed_positions = SinusoidalPositions(n_pos, d)
        elif kind == "m2m_100":
            self.embed_positions = M2M100Positions(n_pos, d, cfg["pad_token_id"])
        else:
            self.embed_positions = LearnedPositions(n_pos, d)
        act = ACTIVATIONS[cfg["activation_function"]]
        layer = DecoderLayer if decoder else EncoderLayer
        n = cfg["decoder_layers" if decoder else "encoder_layers"]
        pre_norm = kind in PRE_NORM
        self.layers = nn.ModuleList([layer(d, cfg["encoder_attention_heads"], cfg["encoder_ffn_dim"], act,
                                           pre_norm) for _ in range(n)])
        if kind in ("bart", "mbart"):
            self.layernorm_embedding = nn.LayerNorm(d)
        if pre_norm:
            self.layer_norm = nn.LayerNorm(d)

    def embed(self, ids):
        if self.kind == "m2m_100":
            positions = self.embed_positions(ids)
        else:
            positions = self.embed_positions(ids.shape[1])
        h = self.embed_tokens(ids) * self.embed_scale + positions
        if hasattr(self, "layernorm_embedding"):
            h = self.layernorm_embedding(h)
        return h

    def final(self, h):
        return self.layer_norm(h) if hasattr(self, "layer_norm") else h


PRE_NORM = ("mbart", "pegasus", "m2m_100")
ARCHITECTURES = {"marian": "MarianMTModel", "bart": "BartForConditionalGeneration",
                 "mbart": "MBartForConditionalGeneration", "pegasus": "PegasusForConditionalGeneration",
                 "m2m_100": "M2M100ForConditionalGeneration"}


class Model(nn.Module):
    """MarianModel / BartModel: shared token embeddings, encoder, decoder."""

    def __init__(self, kind, cfg):
        super().__init__()
        self.shared = nn.Embedding(cfg["vocab_size"], cfg["d_model"], cfg["pad_token_id"])
        self.encoder = Stack(kind, self.shared, cfg, decoder=False)
        self.decoder = Stack(kind, self.shared, cfg, decoder=True)


class HfSeq2Seq(nn.Module):
    """MarianMTModel (kind "marian"), BartForConditionalGeneration ("bart"),
    MBartForConditionalGeneration ("mbart"), PegasusForConditionalGeneration ("pegasus") or
    M2M100ForConditionalGeneration ("m2m_100")."""

    def __init__(self, kind, vocab_size, d_model, heads, ffn_dim, encoder_layers, decoder_layers,
                 max_position_embeddings, pad_token_id, eos_token_id, decoder_start_token_id,
                 activation_function, scale_embedding, bos_token_id=None):
        super().__init__()
        assert kind in ARCHITECTURES
        self.kind = kind
        self.cfg = dict(vocab_size=vocab_size, d_model=d_model, encoder_attention_heads=heads,
                        decoder_attention_heads=heads, encoder_ffn_dim=ffn_dim, decoder_ffn_dim=ffn_dim,
                        encoder_layers=encoder_layers, decoder_layers=decoder_layers,
                        max_position_embeddings=max_position_embeddings, pad_token_id=pad_token_id,
                        eos_token_id=eos_token_id, decoder_start_token_id=decoder_start_token_id,
                        activation_function=activation_function, scale_embedding=scale_embedding)
        if bos_token_id is not None:
            self.cfg["bos_token_id"] = bos_token_id
        self.model = Model(kind, self.cfg)
        self.register_buffer("final_logits_bias", torch.zeros(1, vocab_size))
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.model.shared.weight  # tie_word_embeddings

    def config_json(self, **extra):
        """config.json as save_pretrained writes it (the keys the model reads, and a few it does not)."""
        arch = ARCHITECTURES[self.kind]
        c = dict(self.cfg, model_type=self.kind, architectures=[arch], is_encoder_decoder=True,
                 dropout=0.1, attention_dropout=0.0, activation_dropout=0.0, init_std=0.02,
                 tie_word_embeddings=True, torch_dtype="float32")
        c.update(extra)
        return c

    # ---- the forward pass ----

    def _masks(self, src, tgt):
        return seq2seq_masks(src, tgt, self.cfg["pad_token_id"])

    def forward(self, src, tgt):
        """src [B, S], tgt [B, T] (from the start token) -> logits [B, T, V], decoder hidden [B, T, d]."""
        enc_mask, dec_mask, cross_mask = self._masks(src, tgt)
        h = self.model.encoder.embed(src)
        for layer in self.model.encoder.layers:
            h = layer(h, enc_mask)
        memory = self.model.encoder.final(h)
        h = self.model.decoder.embed(tgt)
        for layer in self.model.decoder.layers:
            h = layer(h, dec_mask, memory, cross_mask)
        h = self.model.decoder.final(h)
        return self.lm_head(h) + self.final_logits_bias, h

    def trace(self, src_ids, tgt_ids):
        self.eval()
        src, tgt = torch.tensor(src_ids), torch.tensor(tgt_ids)
        with torch.no_grad():
            logits, hidden = self(src, tgt)
        records = {"enc_self": [l.self_attn.last for l in self.model.encoder.layers],
                   "dec_self": [l.self_attn.last for l in self.model.decoder.layers],
                   "cross": [l.encoder_attn.last for l in self.model.decoder.layers]}
        return reference_tensors(records, logits, hidden)

    def greedy_decode(self, src_1d, max_len):
        return greedy_decode(self, src_1d, max_len)


def seq2seq_masks(src, tgt, pad):
    """The encoder's, the decoder's and the cross-attention's masks (True = masked) [B, 1, Tq, Tk]:
    padding keys, and in the decoder the later positions; the target's start token (Marian's and
    T5's is the pad id) is never padding."""
    src_keep = src != pad                                   # [B, S]
    tgt_keep = tgt != pad
    tgt_keep[:, 0] = True
    T = tgt.shape[1]
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    enc = ~src_keep[:, None, None, :].expand(-1, 1, src.shape[1], -1)
    dec = causal[None, None] | ~tgt_keep[:, None, None, :]
    cross = ~src_keep[:, None, None, :].expand(-1, 1, T, -1)
    return enc, dec, cross


def reference_tensors(records, logits, hidden):
    """The reference tensors of docs/formats.md from each kind's per-layer records ({"scores", "mask",
    "probs"} of [B, H, Tq, Tk]): KIND.scores/mask/probs [B, L, H, Tq, Tk], logits, hidden."""
    out = {}
    for kind, recs in records.items():
        for key in ("scores", "mask", "probs"):
            a = torch.stack([r[key] for r in recs], dim=1)  # [B, L, H, Tq, Tk]
            out["%s.%s" % (kind, key)] = (a.to(torch.uint8) if key == "mask" else a.float()).numpy()
    out["logits"] = logits.numpy()
    out["hidden"] = hidden.numpy()
    return out


def greedy_decode(model, src_1d, max_len):
    """From decoder_start_token_id, append the argmax of the last position; stop after eos (kept) or
    after max_len ids. Returns the ids after the start token. `model(src, tgt)` returns (logits,
    hidden); model.cfg holds the ids."""
    model.eval()
    tgt = [model.cfg["decoder_start_token_id"]]
    out = []
    with torch.no_grad():
        while len(out) < max_len:
            logits, _ = model(torch.tensor([src_1d]), torch.tensor([tgt]))
            nxt = int(logits[0, -1].argmax())
            out.append(nxt)
            tgt.append(nxt)
            if nxt == model.cfg["eos_token_id"]:
                break
    return out


def init_for_reference_(model, seed, qk_gain=1.6, emb_std=1.0):
    """Deterministic random weights with peaked attention (not a training init): linear weights
    N(0, 1/fan_in) with q_proj/k_proj at qk_gain, biases N(0, 0.1²), LayerNorms γ = 1 + N(0, 0.2²),
    β = N(0, 0.1²), token embeddings N(0, emb_std²), learned positions N(0, 0.5²), final_logits_bias
    N(0, 0.5²). Marian's sinusoid table stays as computed; the tied lm_head is drawn once."""
    g = torch.Generator().manual_seed(seed)

    def normal(shape, std):
        return torch.randn(shape, generator=g) * std

    with torch.no_grad():
        for name, p in model.named_parameters():  # tied parameters appear once
            parts = name.split(".")
            leaf, parent = parts[-1], parts[-2]
            if "norm" in parent:
                p.copy_(1.0 + normal(p.shape, 0.2) if leaf == "weight" else normal(p.shape, 0.1))
            elif parent == "embed_positions":
                if not p.requires_grad:
                    continue  # Marian's fixed sinusoid
                p.copy_(normal(p.shape, 0.5))
            elif parent == "shared":
                p.copy_(normal(p.shape, emb_std))
            elif leaf == "bias":
                p.copy_(normal(p.shape, 0.1))
            elif p.dim() == 2:
                gain = qk_gain if parent in ("q_proj", "k_proj") else 1.0
                p.copy_(normal(p.shape, gain / math.sqrt(p.shape[1])))
            else:
                raise ValueError("init_for_reference_: unhandled parameter %s" % name)
        model.final_logits_bias.copy_(normal(model.final_logits_bias.shape, 0.5))
    return model
