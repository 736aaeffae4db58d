"""PyTorch reference models for attnviz: the three encoder-decoder families the C++ core reproduces.

The models are the ground truth of the numerics the C++ core must match. Each keeps the structure (and
therefore the ``state_dict`` names) of the tutorial it comes from; see docs/formats.md for the names.

Families and constructors (all arguments keyword-able; vocabularies are lists of token strings, index =
id, or an int size, in which case the tokens are named "<0>", "<1>", ...):

``NlpTutorialTransformer`` -- family ``nlp-tutorial``, the "5-1.Transformer" model of nlp-tutorial
(shared/reference/000_*.txt)::

    NlpTutorialTransformer(src_vocab, tgt_vocab, d_model=512, d_ff=2048, d_k=64, d_v=64, n_heads=8,
                           n_encoder_layers=6, n_decoder_layers=6, pad_id=0, bos_id=None, eos_id=None,
                           unk_id=-1, layer_norm=False, bias=False, projection_bias=False,
                           activation="relu", positional="sinusoidal", max_len=5000,
                           layer_norm_eps=1e-5, dropout=0.1, name=None, description=None)

    layer_norm=False  -> the original: nn.LayerNorm(d_model) built inside forward() (identity affine,
                         no tensors in the state_dict); True -> real modules ``….layer_norm``
    bias              -> biases on W_Q/W_K/W_V/fc and on the two FFN linears
    activation        -> "relu" | "gelu" (erf form)
    positional        -> "sinusoidal" (buffer ``encoder.pos_emb.pe`` [max_len, 1, d_model]) |
                         "learned" (nn.Embedding ``encoder.pos_emb.weight`` [max_len, d_model])
    bos_id / eos_id default to the ids of "S" / "E" in tgt_vocab.

``Seed003Translation`` -- family ``seed003``, the ``Translation`` model of shared/reference/003_*.txt::

    Seed003Translation(src_vocab, tgt_vocab, d_model=128, d_ff=256, d_k=64, d_v=64, n_heads=8,
                       n_layers=4, n_encoder_layers=None, n_decoder_layers=None, src_pad_id=0,
                       tgt_pad_id=None, bos_id=None, eos_id=None, unk_id=-1, positional="sinusoidal",
                       max_len=5000, projection_bias=False, layer_norm_eps=1e-5, name=None,
                       description=None)

    n_encoder_layers / n_decoder_layers default to n_layers; tgt_pad_id defaults to src_pad_id;
    bos_id / eos_id default to the ids of "S" / "E" in tgt_vocab.

``TorchSeq2Seq`` -- family ``torch-seq2seq``, PyTorch's translation tutorial ``Seq2SeqTransformer`` on
``nn.Transformer`` (sequence-first)::

    TorchSeq2Seq(src_vocab, tgt_vocab, d_model=512, n_heads=8, d_ff=512, n_encoder_layers=3,
                 n_decoder_layers=3, pad_id=None, bos_id=None, eos_id=None, unk_id=None,
                 norm_first=False, activation="relu", positional="sinusoidal", max_len=5000,
                 layer_norm_eps=1e-5, dropout=0.1, name=None, description=None)

    pad/bos/eos/unk ids default to the ids of "<pad>", "<bos>", "<eos>", "<unk>" in tgt_vocab
    (the tutorial's 1, 2, 3, 0); unk_id falls back to -1 when there is no "<unk>".

Every model (an ``AttnvizModel``) offers:

- ``attnviz_config()`` -> dict with the config keys of docs/formats.md;
- ``trace(src_ids, tgt_ids)`` -> dict of numpy arrays ``enc_self.{scores,mask,probs}``,
  ``dec_self.*``, ``cross.*`` ([B, L, H, Tq, Tk]; masks uint8, 1 = masked; scores scaled and taken
  before the mask) and ``logits`` [B, T, V]; inputs are padded batch-first id lists;
- ``greedy_decode(src_ids_1d, max_len)`` -> generated ids (without the start token, with the eos if
  produced; at most ``max_len`` ids).

Module functions: ``save_model(model, path, dtype)`` (rounds the parameters in place for F16/BF16,
then writes the state_dict + config), ``round_weights_(model, dtype)``, ``init_for_reference_(model,
seed)`` (random weights with peaked attention, for tests), ``model_from_config(cfg)`` and
``load_model(path)``.

Always run with Debian's PyTorch: /usr/bin/python3.
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402


def _vocab(v):
    """A vocabulary argument: a list of token strings, or a size (tokens named "<i>")."""
    if isinstance(v, int):
        return ["<%d>" % i for i in range(v)]
    return [str(t) for t in v]


def _find(vocab, token, what):
    if token in vocab:
        return vocab.index(token)
    raise ValueError("%s not given and the vocabulary has no %r" % (what, token))


def _ids(x):
    """Batch of ids (list of lists, numpy or tensor) -> LongTensor [B, T]."""
    t = torch.as_tensor(np.asarray(x, dtype=np.int64))
    if t.dim() == 1:
        t = t.unsqueeze(0)
    return t


# ======================================================================================================
# Common base: trace / greedy / config plumbing.  Attention modules store what they computed last in
# ``self.last = {"scores": [B,H,Tq,Tk], "mask": [B,H,Tq,Tk] bool, "probs": [B,H,Tq,Tk]}``.
# ======================================================================================================
class AttnvizModel(nn.Module):
    family = None

    # subclasses implement: _attn_records() -> {"enc_self": [...], "dec_self": [...], "cross": [...]}
    # (lists of ``last`` dicts, one per layer, filled by the last forward), _logits(src, tgt) -> [B,T,V],
    # _greedy(src_1xS, max_len) -> list of ids, attnviz_config().

    def trace(self, src_ids, tgt_ids):
        """Run the model on a padded batch and return the reference tensors (numpy)."""
        self.eval()
        src, tgt = _ids(src_ids), _ids(tgt_ids)
        with torch.no_grad():
            logits = self._logits(src, tgt)
            records = self._attn_records()
        out = {}
        for kind, recs in records.items():
            for key in ("scores", "mask", "probs"):
                a = torch.stack([r[key] for r in recs], dim=1)  # [B, L, H, Tq, Tk]
                out["%s.%s" % (kind, key)] = (a.to(torch.uint8) if key == "mask" else a.float()).numpy()
        out["logits"] = logits.float().numpy()
        return out

    def greedy_decode(self, src_ids_1d, max_len):
        """Greedy decoding as in the tutorials: start with bos, append the argmax of the last position,
        stop after eos or after ``max_len`` generated ids. Returns the ids without the start token."""
        self.eval()
        src = _ids(list(src_ids_1d))
        with torch.no_grad():
            return [int(i) for i in self._greedy(src, int(max_len))]

    def _base_config(self):
        cfg = {
            "family": self.family,
            "d_model": self.d_model,
            "d_ff": self.d_ff,
            "n_heads": self.n_heads,
            "d_k": self.d_k,
            "d_v": self.d_v,
            "n_encoder_layers": self.n_encoder_layers,
            "n_decoder_layers": self.n_decoder_layers,
            "src_vocab": list(self.src_vocab),
            "tgt_vocab": list(self.tgt_vocab),
        }
        return cfg

    def _finish_config(self, cfg):
        if getattr(self, "name", None):
            cfg["name"] = self.name
        if getattr(self, "description", None):
            cfg["description"] = self.description
        return cfg


# ======================================================================================================
# nlp-tutorial: "5-1.Transformer" (shared/reference/000_*.txt), made configurable.
# ======================================================================================================
class NlpPositionalEncoding(nn.Module):
    """Sinusoidal positions, sequence-first: x [seq_len, batch, d_model] + pe[:seq_len]."""

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0., max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0., d_model, 2) * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)  # [max_len, 1, d_model]
        self.register_buffer('pe', pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


class NlpLearnedPositionalEncoding(nn.Embedding):
    """Variant: learned positions, an nn.Embedding(max_len, d_model) (state_dict ``pos_emb.weight``),
    used like NlpPositionalEncoding (sequence-first input)."""

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__(max_len, d_model)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x):
        x = x + self.weight[:x.size(0)].unsqueeze(1)
        return self.dropout(x)


def nlp_get_attn_pad_mask(seq_q, seq_k, pad_id=0):
    """[B, len_q, len_k] bool, True where the KEY is padding (the tutorial's eq(0))."""
    batch_size, len_q = seq_q.size()
    batch_size, len_k = seq_k.size()
    pad_attn_mask = seq_k.data.eq(pad_id).unsqueeze(1)  # [B, 1, len_k]
    return pad_attn_mask.expand(batch_size, len_q, len_k)


def nlp_get_attn_subsequence_mask(seq):
    """[B, T, T] uint8, 1 above the diagonal (future positions)."""
    attn_shape = [seq.size(0), seq.size(1), seq.size(1)]
    subsequence_mask = np.triu(np.ones(attn_shape), k=1)
    return torch.from_numpy(subsequence_mask).byte()


class NlpScaledDotProductAttention(nn.Module):
    """The tutorial's attention; additionally records scores (before masked_fill_), mask and probs."""

    def __init__(self, d_k):
        super().__init__()
        self.d_k = d_k
        self.last = None

    def forward(self, Q, K, V, attn_mask):
        scores = torch.matmul(Q, K.transpose(-1, -2)) / np.sqrt(self.d_k)  # [B, H, len_q, len_k]
        recorded = scores.detach().clone()
        scores.masked_fill_(attn_mask, -1e9)
        attn = nn.Softmax(dim=-1)(scores)
        context = torch.matmul(attn, V)
        self.last = {"scores": recorded, "mask": attn_mask.detach().bool(), "probs": attn.detach()}
        return context, attn


class NlpMultiHeadAttention(nn.Module):
    def __init__(self, d_model, d_k, d_v, n_heads, bias=False, layer_norm=False, layer_norm_eps=1e-5):
        super().__init__()
        self.d_model, self.d_k, self.d_v, self.n_heads = d_model, d_k, d_v, n_heads
        self.layer_norm_eps = layer_norm_eps
        self.W_Q = nn.Linear(d_model, d_k * n_heads, bias=bias)
        self.W_K = nn.Linear(d_model, d_k * n_heads, bias=bias)
        self.W_V = nn.Linear(d_model, d_v * n_heads, bias=bias)
        self.fc = nn.Linear(n_heads * d_v, d_model, bias=bias)
        if layer_norm:  # variant: a real (trainable) LayerNorm
            self.layer_norm = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.sdpa = NlpScaledDotProductAttention(d_k)  # no tensors: state_dict unchanged

    @property
    def last(self):
        return self.sdpa.last

    def forward(self, input_Q, input_K, input_V, attn_mask):
        residual, batch_size = input_Q, input_Q.size(0)
        Q = self.W_Q(input_Q).view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_K(input_K).view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)
        V = self.W_V(input_V).view(batch_size, -1, self.n_heads, self.d_v).transpose(1, 2)
        attn_mask = attn_mask.unsqueeze(1).repeat(1, self.n_heads, 1, 1)  # [B, H, len_q, len_k]
        context, attn = self.sdpa(Q, K, V, attn_mask)
        context = context.transpose(1, 2).reshape(batch_size, -1, self.n_heads * self.d_v)
        output = self.fc(context)
        return _nlp_norm(self, output + residual), attn


class NlpPoswiseFeedForwardNet(nn.Module):
    def __init__(self, d_model, d_ff, bias=False, activation="relu", layer_norm=False,
                 layer_norm_eps=1e-5):
        super().__init__()
        self.d_model, self.layer_norm_eps = d_model, layer_norm_eps
        act = {"relu": nn.ReLU, "gelu": nn.GELU}[activation]()
        self.fc = nn.Sequential(
            nn.Linear(d_model, d_ff, bias=bias),
            act,
            nn.Linear(d_ff, d_model, bias=bias),
        )
        if layer_norm:
            self.layer_norm = nn.LayerNorm(d_model, eps=layer_norm_eps)

    def forward(self, inputs):
        residual = inputs
        output = self.fc(inputs)
        return _nlp_norm(self, output + residual)


def _nlp_norm(module, x):
    """The original builds ``nn.LayerNorm(d_model)`` inside forward(): a fresh, identity-affine norm.
    The layer_norm variant uses the module's own LayerNorm instead."""
    if hasattr(module, "layer_norm"):
        return module.layer_norm(x)
    return nn.LayerNorm(module.d_model, eps=module.layer_norm_eps)(x)


class NlpEncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.enc_self_attn = NlpMultiHeadAttention(c.d_model, c.d_k, c.d_v, c.n_heads, c.bias,
                                                   c.layer_norm, c.layer_norm_eps)
        self.pos_ffn = NlpPoswiseFeedForwardNet(c.d_model, c.d_ff, c.bias, c.activation, c.layer_norm,
                                                c.layer_norm_eps)

    def forward(self, enc_inputs, enc_self_attn_mask):
        enc_outputs, attn = self.enc_self_attn(enc_inputs, enc_inputs, enc_inputs, enc_self_attn_mask)
        enc_outputs = self.pos_ffn(enc_outputs)
        return enc_outputs, attn


class NlpDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        args = (c.d_model, c.d_k, c.d_v, c.n_heads, c.bias, c.layer_norm, c.layer_norm_eps)
        self.dec_self_attn = NlpMultiHeadAttention(*args)
        self.dec_enc_attn = NlpMultiHeadAttention(*args)
        self.pos_ffn = NlpPoswiseFeedForwardNet(c.d_model, c.d_ff, c.bias, c.activation, c.layer_norm,
                                                c.layer_norm_eps)

    def forward(self, dec_inputs, enc_outputs, dec_self_attn_mask, dec_enc_attn_mask):
        dec_outputs, dec_self_attn = self.dec_self_attn(dec_inputs, dec_inputs, dec_inputs, dec_self_attn_mask)
        dec_outputs, dec_enc_attn = self.dec_enc_attn(dec_outputs, enc_outputs, enc_outputs, dec_enc_attn_mask)
        dec_outputs = self.pos_ffn(dec_outputs)
        return dec_outputs, dec_self_attn, dec_enc_attn


def _nlp_pos(c):
    cls = NlpLearnedPositionalEncoding if c.positional == "learned" else NlpPositionalEncoding
    return cls(c.d_model, dropout=c.dropout, max_len=c.max_len)


class NlpEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.pad_id = c.pad_id
        self.src_emb = nn.Embedding(len(c.src_vocab), c.d_model)
        self.pos_emb = _nlp_pos(c)
        self.layers = nn.ModuleList([NlpEncoderLayer(c) for _ in range(c.n_encoder_layers)])

    def forward(self, enc_inputs):
        enc_outputs = self.src_emb(enc_inputs)
        enc_outputs = self.pos_emb(enc_outputs.transpose(0, 1)).transpose(0, 1)
        enc_self_attn_mask = nlp_get_attn_pad_mask(enc_inputs, enc_inputs, self.pad_id)
        enc_self_attns = []
        for layer in self.layers:
            enc_outputs, enc_self_attn = layer(enc_outputs, enc_self_attn_mask)
            enc_self_attns.append(enc_self_attn)
        return enc_outputs, enc_self_attns


class NlpDecoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.pad_id = c.pad_id
        self.tgt_emb = nn.Embedding(len(c.tgt_vocab), c.d_model)
        self.pos_emb = _nlp_pos(c)
        self.layers = nn.ModuleList([NlpDecoderLayer(c) for _ in range(c.n_decoder_layers)])

    def forward(self, dec_inputs, enc_inputs, enc_outputs):
        dec_outputs = self.tgt_emb(dec_inputs)
        dec_outputs = self.pos_emb(dec_outputs.transpose(0, 1)).transpose(0, 1)
        dec_self_attn_pad_mask = nlp_get_attn_pad_mask(dec_inputs, dec_inputs, self.pad_id)
        dec_self_attn_subsequence_mask = nlp_get_attn_subsequence_mask(dec_inputs)
        dec_self_attn_mask = torch.gt((dec_self_attn_pad_mask + dec_self_attn_subsequence_mask), 0)
        dec_enc_attn_mask = nlp_get_attn_pad_mask(dec_inputs, enc_inputs, self.pad_id)
        dec_self_attns, dec_enc_attns = [], []
        for layer in self.layers:
            dec_outputs, dec_self_attn, dec_enc_attn = layer(dec_outputs, enc_outputs, dec_self_attn_mask,
                                                             dec_enc_attn_mask)
            dec_self_attns.append(dec_self_attn)
            dec_enc_attns.append(dec_enc_attn)
        return dec_outputs, dec_self_attns, dec_enc_attns


class _Cfg:
    """Plain attribute bag shared by a model's sub-modules."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


class NlpTutorialTransformer(AttnvizModel):
    family = "nlp-tutorial"

    def __init__(self, src_vocab, tgt_vocab, d_model=512, d_ff=2048, d_k=64, d_v=64, n_heads=8,
                 n_encoder_layers=6, n_decoder_layers=6, pad_id=0, bos_id=None, eos_id=None, unk_id=-1,
                 layer_norm=False, bias=False, projection_bias=False, activation="relu",
                 positional="sinusoidal", max_len=5000, layer_norm_eps=1e-5, dropout=0.1, name=None,
                 description=None):
        super().__init__()
        assert activation in ("relu", "gelu"), activation
        assert positional in ("sinusoidal", "learned"), positional
        src_vocab, tgt_vocab = _vocab(src_vocab), _vocab(tgt_vocab)
        c = _Cfg(src_vocab=src_vocab, tgt_vocab=tgt_vocab, d_model=d_model, d_ff=d_ff, d_k=d_k, d_v=d_v,
                 n_heads=n_heads, n_encoder_layers=n_encoder_layers, n_decoder_layers=n_decoder_layers,
                 pad_id=pad_id, layer_norm=layer_norm, bias=bias, activation=activation,
                 positional=positional, max_len=max_len, layer_norm_eps=layer_norm_eps, dropout=dropout)
        self.__dict__.update({k: v for k, v in c.__dict__.items()})  # plain attributes for the config
        self.bos_id = _find(tgt_vocab, "S", "bos_id") if bos_id is None else bos_id
        self.eos_id = _find(tgt_vocab, "E", "eos_id") if eos_id is None else eos_id
        self.unk_id, self.name, self.description = unk_id, name, description
        self.encoder = NlpEncoder(c)
        self.decoder = NlpDecoder(c)
        self.projection = nn.Linear(d_model, len(tgt_vocab), bias=projection_bias)

    def forward(self, enc_inputs, dec_inputs):
        enc_outputs, enc_self_attns = self.encoder(enc_inputs)
        dec_outputs, dec_self_attns, dec_enc_attns = self.decoder(dec_inputs, enc_inputs, enc_outputs)
        dec_logits = self.projection(dec_outputs)
        return dec_logits.view(-1, dec_logits.size(-1)), enc_self_attns, dec_self_attns, dec_enc_attns

    # --- attnviz plumbing ---
    def _logits(self, src, tgt):
        logits = self(src, tgt)[0]
        return logits.view(src.size(0), tgt.size(1), -1)

    def _attn_records(self):
        return {
            "enc_self": [l.enc_self_attn.last for l in self.encoder.layers],
            "dec_self": [l.dec_self_attn.last for l in self.decoder.layers],
            "cross": [l.dec_enc_attn.last for l in self.decoder.layers],
        }

    def _greedy(self, enc_input, max_len):
        # the tutorial's greedy_decoder (which stops at "."), generalised: stop at eos_id or max_len
        enc_outputs, _ = self.encoder(enc_input)
        dec_input = torch.tensor([[self.bos_id]], dtype=torch.long)
        out = []
        while len(out) < max_len:
            dec_outputs, _, _ = self.decoder(dec_input, enc_input, enc_outputs)
            projected = self.projection(dec_outputs)
            next_word = int(projected.squeeze(0).max(dim=-1, keepdim=False)[1][-1])
            out.append(next_word)
            if next_word == self.eos_id:
                break
            dec_input = torch.cat([dec_input, torch.tensor([[next_word]], dtype=torch.long)], -1)
        return out

    def attnviz_config(self):
        cfg = self._base_config()
        cfg.update({
            "pad_id": self.pad_id, "bos_id": self.bos_id, "eos_id": self.eos_id, "unk_id": self.unk_id,
            "norm": "post", "activation": self.activation, "attn_bias": bool(self.bias),
            "ffn_bias": bool(self.bias), "final_norm": False, "embed_scale": False,
            "positional": self.positional, "max_len": self.max_len, "mask_fill": -1e9,
            "layer_norm_eps": self.layer_norm_eps,
        })
        return self._finish_config(cfg)


# ======================================================================================================
# seed003: the ``Translation`` model of shared/reference/003_*.txt (batch-first positions, biases,
# tanh GELU, real LayerNorms, residual taken from the attention's query input).
# ======================================================================================================
def s3_get_attn_pad_mask(seq_q, seq_k, pad_index):
    batch_size, len_q = seq_q.size()
    batch_size, len_k = seq_k.size()
    pad_attn_mask = seq_k.data.eq(pad_index).unsqueeze(1)
    pad_attn_mask = torch.as_tensor(pad_attn_mask, dtype=torch.int)
    return pad_attn_mask.expand(batch_size, len_q, len_k)


def s3_get_attn_subsequent_mask(seq):
    attn_shape = [seq.size(0), seq.size(1), seq.size(1)]
    subsequent_mask = np.triu(np.ones(attn_shape), k=1)
    subsequent_mask = torch.from_numpy(subsequent_mask).int()
    return subsequent_mask


class S3GELU(nn.Module):
    """tanh approximation of GELU (no tensors)."""

    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


class S3PositionalEncoding(nn.Module):
    """Sinusoidal positions, batch-first: x [batch, seq_len, d_model] + pe[:, :seq_len];
    buffer ``pe`` [1, max_len, d_model]."""

    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0., max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0., d_model, 2) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0)
        self.register_buffer('pe', pe)

    def forward(self, x):
        x = x + self.pe[:, :x.size(1)]
        return self.dropout(x)


class S3LearnedPositionalEncoding(nn.Embedding):
    """Variant (not in the reference): learned positions ``pos_emb.weight`` [max_len, d_model]."""

    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__(max_len, d_model)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x):
        return self.dropout(x + self.weight[:x.size(1)].unsqueeze(0))


class S3ScaledDotProductAttention(nn.Module):
    def __init__(self, d_k):
        super().__init__()
        self.d_k = d_k
        self.last = None

    def forward(self, Q, K, V, attn_mask):
        scores = torch.matmul(Q, K.transpose(-1, -2)) / np.sqrt(self.d_k)
        attn_mask = torch.as_tensor(attn_mask, dtype=torch.bool)
        recorded = scores.detach().clone()  # before masked_fill_
        scores.masked_fill_(attn_mask, -1e9)
        attn = nn.Softmax(dim=-1)(scores)
        context = torch.matmul(attn, V)
        self.last = {"scores": recorded, "mask": attn_mask.detach(), "probs": attn.detach()}
        return context, attn


class S3MultiHeadAttention(nn.Module):
    def __init__(self, d_model, d_k, d_v, n_heads, layer_norm_eps=1e-5):
        super().__init__()
        self.WQ = nn.Linear(d_model, d_k * n_heads)
        self.WK = nn.Linear(d_model, d_k * n_heads)
        self.WV = nn.Linear(d_model, d_v * n_heads)
        self.linear = nn.Linear(n_heads * d_v, d_model)
        self.layer_norm = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.d_model, self.d_k, self.d_v, self.n_heads = d_model, d_k, d_v, n_heads
        self.sdpa = S3ScaledDotProductAttention(d_k)

    @property
    def last(self):
        return self.sdpa.last

    def forward(self, Q, K, V, attn_mask):
        batch_size = Q.shape[0]
        q_s = self.WQ(Q).view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)
        k_s = self.WK(K).view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)
        v_s = self.WV(V).view(batch_size, -1, self.n_heads, self.d_v).transpose(1, 2)
        attn_mask = attn_mask.unsqueeze(1).repeat(1, self.n_heads, 1, 1)
        context, attn = self.sdpa(q_s, k_s, v_s, attn_mask)
        context = context.transpose(1, 2).contiguous().view(batch_size, -1, self.n_heads * self.d_v)
        output = self.linear(context)
        return self.layer_norm(output + Q), attn  # residual: the query INPUT


class S3PoswiseFeedForwardNet(nn.Module):
    def __init__(self, d_model, d_ff, layer_norm_eps=1e-5):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)
        self.relu = S3GELU()  # (sic: named relu in the reference, is the tanh GELU)
        self.layer_norm = nn.LayerNorm(d_model, eps=layer_norm_eps)

    def forward(self, inputs):
        residual = inputs
        output = self.l1(inputs)
        output = self.relu(output)
        output = self.l2(output)
        return self.layer_norm(output + residual)


class S3EncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.enc_self_attn = S3MultiHeadAttention(c.d_model, c.d_k, c.d_v, c.n_heads, c.layer_norm_eps)
        self.pos_ffn = S3PoswiseFeedForwardNet(c.d_model, c.d_ff, c.layer_norm_eps)

    def forward(self, enc_inputs, enc_self_attn_mask):
        enc_outputs, attn = self.enc_self_attn(Q=enc_inputs, K=enc_inputs, V=enc_inputs,
                                               attn_mask=enc_self_attn_mask)
        enc_outputs = self.pos_ffn(enc_outputs)
        return enc_outputs, attn


class S3DecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dec_self_attn = S3MultiHeadAttention(c.d_model, c.d_k, c.d_v, c.n_heads, c.layer_norm_eps)
        self.dec_enc_attn = S3MultiHeadAttention(c.d_model, c.d_k, c.d_v, c.n_heads, c.layer_norm_eps)
        self.pos_ffn = S3PoswiseFeedForwardNet(c.d_model, c.d_ff, c.layer_norm_eps)

    def forward(self, dec_inputs, enc_outputs, dec_self_attn_mask, dec_enc_attn_mask):
        dec_outputs, dec_self_attn = self.dec_self_attn(dec_inputs, dec_inputs, dec_inputs, dec_self_attn_mask)
        dec_outputs, dec_enc_attn = self.dec_enc_attn(dec_outputs, enc_outputs, enc_outputs, dec_enc_attn_mask)
        dec_outputs = self.pos_ffn(dec_outputs)
        return dec_outputs, dec_self_attn, dec_enc_attn


def _s3_pos(c):
    cls = S3LearnedPositionalEncoding if c.positional == "learned" else S3PositionalEncoding
    return cls(d_model=c.d_model, dropout=0, max_len=c.max_len)


class S3Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.pad_index = c.src_pad_id
        self.src_emb = nn.Embedding(len(c.src_vocab), c.d_model)
        self.pos_emb = _s3_pos(c)
        self.layers = nn.ModuleList([S3EncoderLayer(c) for _ in range(c.n_encoder_layers)])

    def forward(self, x):
        enc_outputs = self.src_emb(x)
        enc_outputs = self.pos_emb(enc_outputs)
        enc_self_attn_mask = s3_get_attn_pad_mask(x, x, self.pad_index)
        enc_self_attns = []
        for layer in self.layers:
            enc_outputs, enc_self_attn = layer(enc_outputs, enc_self_attn_mask)
            enc_self_attns.append(enc_self_attn)
        enc_self_attns = torch.stack(enc_self_attns)
        enc_self_attns = enc_self_attns.permute([1, 0, 2, 3, 4])
        return enc_outputs, enc_self_attns


class S3Decoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.pad_index = c.tgt_pad_id
        self.tgt_emb = nn.Embedding(len(c.tgt_vocab), c.d_model)
        self.pos_emb = _s3_pos(c)
        self.layers = nn.ModuleList([S3DecoderLayer(c) for _ in range(c.n_decoder_layers)])

    def forward(self, dec_inputs, enc_inputs, enc_outputs):
        dec_outputs = self.tgt_emb(dec_inputs)
        dec_outputs = self.pos_emb(dec_outputs)
        dec_self_attn_pad_mask = s3_get_attn_pad_mask(dec_inputs, dec_inputs, self.pad_index)
        dec_self_attn_subsequent_mask = s3_get_attn_subsequent_mask(dec_inputs)
        dec_self_attn_mask = torch.gt((dec_self_attn_pad_mask + dec_self_attn_subsequent_mask), 0)
        # QUIRK kept from the reference: the cross-attention mask tests the SOURCE ids against the
        # TARGET pad index (self.pad_index is the decoder's).  It only matters when the two pad ids
        # differ; the reference cases use the same pad id on both sides.
        dec_enc_attn_mask = s3_get_attn_pad_mask(dec_inputs, enc_inputs, self.pad_index)
        dec_self_attns, dec_enc_attns = [], []
        for layer in self.layers:
            dec_outputs, dec_self_attn, dec_enc_attn = layer(
                dec_inputs=dec_outputs, enc_outputs=enc_outputs,
                dec_self_attn_mask=dec_self_attn_mask, dec_enc_attn_mask=dec_enc_attn_mask)
            dec_self_attns.append(dec_self_attn)
            dec_enc_attns.append(dec_enc_attn)
        dec_self_attns = torch.stack(dec_self_attns).permute([1, 0, 2, 3, 4])
        dec_enc_attns = torch.stack(dec_enc_attns).permute([1, 0, 2, 3, 4])
        return dec_outputs, dec_self_attns, dec_enc_attns


class Seed003Translation(AttnvizModel):
    family = "seed003"

    def __init__(self, src_vocab, tgt_vocab, d_model=128, d_ff=256, d_k=64, d_v=64, n_heads=8, n_layers=4,
                 n_encoder_layers=None, n_decoder_layers=None, src_pad_id=0, tgt_pad_id=None, bos_id=None,
                 eos_id=None, unk_id=-1, positional="sinusoidal", max_len=5000, projection_bias=False,
                 layer_norm_eps=1e-5, name=None, description=None):
        super().__init__()
        assert positional in ("sinusoidal", "learned"), positional
        src_vocab, tgt_vocab = _vocab(src_vocab), _vocab(tgt_vocab)
        c = _Cfg(src_vocab=src_vocab, tgt_vocab=tgt_vocab, d_model=d_model, d_ff=d_ff, d_k=d_k, d_v=d_v,
                 n_heads=n_heads,
                 n_encoder_layers=n_layers if n_encoder_layers is None else n_encoder_layers,
                 n_decoder_layers=n_layers if n_decoder_layers is None else n_decoder_layers,
                 src_pad_id=src_pad_id, tgt_pad_id=src_pad_id if tgt_pad_id is None else tgt_pad_id,
                 positional=positional, max_len=max_len, layer_norm_eps=layer_norm_eps)
        self.__dict__.update({k: v for k, v in c.__dict__.items()})
        self.bos_id = _find(tgt_vocab, "S", "bos_id") if bos_id is None else bos_id
        self.eos_id = _find(tgt_vocab, "E", "eos_id") if eos_id is None else eos_id
        self.unk_id, self.name, self.description = unk_id, name, description
        self.encoder = S3Encoder(c)
        self.decoder = S3Decoder(c)
        self.projection = nn.Linear(d_model, len(tgt_vocab), bias=projection_bias)

    def forward(self, enc_inputs, dec_inputs):
        enc_outputs, enc_self_attns = self.encoder(enc_inputs)
        dec_outputs, dec_self_attns, dec_enc_attns = self.decoder(dec_inputs, enc_inputs, enc_outputs)
        dec_logits = self.projection(dec_outputs)
        return dec_logits, enc_self_attns, dec_self_attns, dec_enc_attns

    def _logits(self, src, tgt):
        return self(src, tgt)[0]

    def _attn_records(self):
        return {
            "enc_self": [l.enc_self_attn.last for l in self.encoder.layers],
            "dec_self": [l.dec_self_attn.last for l in self.decoder.layers],
            "cross": [l.dec_enc_attn.last for l in self.decoder.layers],
        }

    def _greedy(self, enc_input, max_len):
        # the reference has no decoder loop; this is nlp-tutorial's greedy_decoder on this model
        enc_outputs, _ = self.encoder(enc_input)
        dec_input = torch.tensor([[self.bos_id]], dtype=torch.long)
        out = []
        while len(out) < max_len:
            dec_outputs, _, _ = self.decoder(dec_input, enc_input, enc_outputs)
            next_word = int(self.projection(dec_outputs)[0, -1].max(dim=-1)[1])
            out.append(next_word)
            if next_word == self.eos_id:
                break
            dec_input = torch.cat([dec_input, torch.tensor([[next_word]], dtype=torch.long)], -1)
        return out

    def attnviz_config(self):
        cfg = self._base_config()
        cfg["pad_id"] = self.src_pad_id
        if self.tgt_pad_id != self.src_pad_id:
            cfg["src_pad_id"], cfg["tgt_pad_id"] = self.src_pad_id, self.tgt_pad_id
        cfg.update({
            "bos_id": self.bos_id, "eos_id": self.eos_id, "unk_id": self.unk_id,
            "norm": "post", "activation": "gelu_tanh", "attn_bias": True, "ffn_bias": True,
            "final_norm": False, "embed_scale": False, "positional": self.positional,
            "max_len": self.max_len, "mask_fill": -1e9, "layer_norm_eps": self.layer_norm_eps,
        })
        return self._finish_config(cfg)


# ======================================================================================================
# torch-seq2seq: PyTorch's translation tutorial (Seq2SeqTransformer on nn.Transformer, sequence-first).
# ======================================================================================================
class PositionalEncoding(nn.Module):
    """The tutorial's positions: buffer ``pos_embedding`` [maxlen, 1, emb_size], sequence-first."""

    def __init__(self, emb_size, dropout, maxlen=5000):
        super().__init__()
        den = torch.exp(- torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.unsqueeze(-2)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('pos_embedding', pos_embedding)

    def forward(self, token_embedding):
        return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, emb_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


def generate_square_subsequent_mask(sz):
    """The tutorial's float causal mask: 0 on and below the diagonal, -inf above."""
    mask = (torch.triu(torch.ones((sz, sz))) == 1).transpose(0, 1)
    mask = mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))
    return mask


class TorchSeq2Seq(AttnvizModel):
    family = "torch-seq2seq"

    def __init__(self, src_vocab, tgt_vocab, d_model=512, n_heads=8, d_ff=512, n_encoder_layers=3,
                 n_decoder_layers=3, pad_id=None, bos_id=None, eos_id=None, unk_id=None, norm_first=False,
                 activation="relu", positional="sinusoidal", max_len=5000, layer_norm_eps=1e-5,
                 dropout=0.1, name=None, description=None):
        super().__init__()
        assert activation in ("relu", "gelu"), activation
        assert positional in ("sinusoidal", "learned"), positional
        self.src_vocab, self.tgt_vocab = _vocab(src_vocab), _vocab(tgt_vocab)
        self.d_model, self.n_heads, self.d_ff = d_model, n_heads, d_ff
        self.d_k = self.d_v = d_model // n_heads
        self.n_encoder_layers, self.n_decoder_layers = n_encoder_layers, n_decoder_layers
        tv = self.tgt_vocab
        self.pad_id = _find(tv, "<pad>", "pad_id") if pad_id is None else pad_id
        self.bos_id = _find(tv, "<bos>", "bos_id") if bos_id is None else bos_id
        self.eos_id = _find(tv, "<eos>", "eos_id") if eos_id is None else eos_id
        self.unk_id = (tv.index("<unk>") if "<unk>" in tv else -1) if unk_id is None else unk_id
        self.norm_first, self.activation, self.positional = norm_first, activation, positional
        self.max_len, self.layer_norm_eps = max_len, layer_norm_eps
        self.name, self.description = name, description

        self.transformer = nn.Transformer(d_model=d_model, nhead=n_heads, num_encoder_layers=n_encoder_layers,
                                          num_decoder_layers=n_decoder_layers, dim_feedforward=d_ff,
                                          dropout=dropout, activation=activation, layer_norm_eps=layer_norm_eps,
                                          norm_first=norm_first)
        self.generator = nn.Linear(d_model, len(self.tgt_vocab))
        self.src_tok_emb = TokenEmbedding(len(self.src_vocab), d_model)
        self.tgt_tok_emb = TokenEmbedding(len(self.tgt_vocab), d_model)
        if positional == "learned":  # variant: separate learned tables, no positional_encoding buffer
            self.src_pos_emb = nn.Embedding(max_len, d_model)
            self.tgt_pos_emb = nn.Embedding(max_len, d_model)
        else:
            self.positional_encoding = PositionalEncoding(d_model, dropout=dropout, maxlen=max_len)

    # --- the tutorial's API (sequence-first tensors [T, B]) ---
    def _pos(self, x, side):
        if self.positional == "learned":
            table = self.src_pos_emb if side == "src" else self.tgt_pos_emb
            return x + table.weight[:x.size(0)].unsqueeze(1)
        return self.positional_encoding(x)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
        src_emb = self._pos(self.src_tok_emb(src), "src")
        tgt_emb = self._pos(self.tgt_tok_emb(trg), "tgt")
        outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None,
                                src_padding_mask, tgt_padding_mask, memory_key_padding_mask)
        return self.generator(outs)

    def encode(self, src, src_mask):
        return self.transformer.encoder(self._pos(self.src_tok_emb(src), "src"), src_mask)

    def decode(self, tgt, memory, tgt_mask):
        return self.transformer.decoder(self._pos(self.tgt_tok_emb(tgt), "tgt"), memory, tgt_mask)

    def create_mask(self, src, tgt):
        src_seq_len, tgt_seq_len = src.shape[0], tgt.shape[0]
        tgt_mask = generate_square_subsequent_mask(tgt_seq_len)
        src_mask = torch.zeros((src_seq_len, src_seq_len)).type(torch.bool)
        src_padding_mask = (src == self.pad_id).transpose(0, 1)
        tgt_padding_mask = (tgt == self.pad_id).transpose(0, 1)
        return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask

    # --- functional re-implementation that records per-head attention ---
    def _fx_mha(self, mha, x_q, x_kv, self_attn, mask):
        """nn.MultiheadAttention's slow path (F.multi_head_attention_forward), sequence-first.
        mask: bool [B, Tq, Tk], True = masked. Records scores (q/sqrt(hd) . k^T, before the mask)."""
        if x_kv is None:  # self-attention
            x_kv = x_q
        Tq, B, E = x_q.shape
        Tk = x_kv.shape[0]
        H = mha.num_heads
        hd = E // H
        w, b = mha.in_proj_weight, mha.in_proj_bias
        if self_attn:  # same packing as torch's _in_projection_packed
            q, k, v = F.linear(x_q, w, b).chunk(3, dim=-1)
        else:
            w_q, w_kv = w.split([E, E * 2])
            b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
            q = F.linear(x_q, w_q, b_q)
            k, v = F.linear(x_kv, w_kv, b_kv).chunk(2, dim=-1)
        q = q.contiguous().view(Tq, B * H, hd).transpose(0, 1)
        k = k.contiguous().view(Tk, B * H, hd).transpose(0, 1)
        v = v.contiguous().view(Tk, B * H, hd).transpose(0, 1)
        q_scaled = q / math.sqrt(hd)
        scores = torch.bmm(q_scaled, k.transpose(-2, -1))  # [B*H, Tq, Tk]
        m = mask.unsqueeze(1).expand(B, H, Tq, Tk).reshape(B * H, Tq, Tk)
        probs = F.softmax(scores.masked_fill(m, float("-inf")), dim=-1)
        out = torch.bmm(probs, v)
        out = out.transpose(0, 1).contiguous().view(Tq * B, E)
        out = F.linear(out, mha.out_proj.weight, mha.out_proj.bias).view(Tq, B, E)
        rec = {"scores": scores.view(B, H, Tq, Tk), "mask": m.view(B, H, Tq, Tk), "probs": probs.view(B, H, Tq, Tk)}
        return out, rec

    @staticmethod
    def _fx_ff(layer, x):
        return layer.linear2(layer.activation(layer.linear1(x)))

    def _fx_forward(self, src, tgt):
        """src [S, B], tgt [T, B] -> logits [T, B, V] and the attention records."""
        S, B = src.shape
        T = tgt.shape[0]
        src_pad = (src == self.pad_id).transpose(0, 1)  # [B, S]
        tgt_pad = (tgt == self.pad_id).transpose(0, 1)  # [B, T]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        enc_mask = src_pad.unsqueeze(1).expand(B, S, S)
        dec_mask = causal.unsqueeze(0) | tgt_pad.unsqueeze(1)  # [B, T, T]
        cross_mask = src_pad.unsqueeze(1).expand(B, T, S)
        recs = {"enc_self": [], "dec_self": [], "cross": []}

        x = self._pos(self.src_tok_emb(src), "src")
        for layer in self.transformer.encoder.layers:
            if layer.norm_first:
                a, r = self._fx_mha(layer.self_attn, layer.norm1(x), None, True, enc_mask)
                x = x + a
                x = x + self._fx_ff(layer, layer.norm2(x))
            else:
                a, r = self._fx_mha(layer.self_attn, x, None, True, enc_mask)
                x = layer.norm1(x + a)
                x = layer.norm2(x + self._fx_ff(layer, x))
            recs["enc_self"].append(r)
        if self.transformer.encoder.norm is not None:
            x = self.transformer.encoder.norm(x)
        memory = x

        x = self._pos(self.tgt_tok_emb(tgt), "tgt")
        for layer in self.transformer.decoder.layers:
            if layer.norm_first:
                a, r1 = self._fx_mha(layer.self_attn, layer.norm1(x), None, True, dec_mask)
                x = x + a
                a, r2 = self._fx_mha(layer.multihead_attn, layer.norm2(x), memory, False, cross_mask)
                x = x + a
                x = x + self._fx_ff(layer, layer.norm3(x))
            else:
                a, r1 = self._fx_mha(layer.self_attn, x, None, True, dec_mask)
                x = layer.norm1(x + a)
                a, r2 = self._fx_mha(layer.multihead_attn, x, memory, False, cross_mask)
                x = layer.norm2(x + a)
                x = layer.norm3(x + self._fx_ff(layer, x))
            recs["dec_self"].append(r1)
            recs["cross"].append(r2)
        if self.transformer.decoder.norm is not None:
            x = self.transformer.decoder.norm(x)
        return self.generator(x), recs

    def _logits(self, src, tgt):
        src_sf, tgt_sf = src.transpose(0, 1), tgt.transpose(0, 1)  # batch-first -> sequence-first
        logits_fx, self._last_records = self._fx_forward(src_sf, tgt_sf)
        # the real module, called as the tutorial does
        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = self.create_mask(src_sf, tgt_sf)
        logits = self(src_sf, tgt_sf, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)
        diff = (logits - logits_fx).abs().max().item()
        assert diff <= 1e-5, "functional re-implementation differs from nn.Transformer by %g" % diff
        return logits.transpose(0, 1)  # [B, T, V]

    def _attn_records(self):
        return self._last_records

    def _greedy(self, src, max_len):
        # the tutorial's greedy_decode (which loops max_len-1 times); here: at most max_len new ids
        src = src.transpose(0, 1)  # [S, 1]
        num_tokens = src.shape[0]
        src_mask = torch.zeros(num_tokens, num_tokens).type(torch.bool)
        memory = self.encode(src, src_mask)
        ys = torch.ones(1, 1).fill_(self.bos_id).type(torch.long)
        out = []
        while len(out) < max_len:
            tgt_mask = generate_square_subsequent_mask(ys.size(0)).type(torch.bool)
            o = self.decode(ys, memory, tgt_mask)
            o = o.transpose(0, 1)
            prob = self.generator(o[:, -1])
            _, next_word = torch.max(prob, dim=1)
            next_word = int(next_word.item())
            out.append(next_word)
            ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
            if next_word == self.eos_id:
                break
        return out

    def attnviz_config(self):
        cfg = self._base_config()
        cfg.update({
            "pad_id": self.pad_id, "bos_id": self.bos_id, "eos_id": self.eos_id, "unk_id": self.unk_id,
            "norm": "pre" if self.norm_first else "post", "activation": self.activation,
            "attn_bias": True, "ffn_bias": True, "final_norm": True, "embed_scale": True,
            "positional": self.positional, "max_len": self.max_len, "mask_fill": "-inf",
            "layer_norm_eps": self.layer_norm_eps,
        })
        return self._finish_config(cfg)


# ======================================================================================================
# Weights: random init for tests, rounding, saving, loading.
# ======================================================================================================
_TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def round_weights_(model, dtype):
    """Round every parameter (in place) to F16 / BF16 precision, keeping them float32 tensors, so that
    computations use exactly the values a file of that dtype holds. Buffers are left alone."""
    if dtype == "F32":
        return model
    td = _TORCH_DTYPES[dtype]
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(td).to(torch.float32))
    return model


def save_model(model, path, dtype="F32"):
    """Write ``model``'s full state_dict (buffers such as ``encoder.pos_emb.pe`` included) in ``dtype``
    ("F32", "F16" or "BF16") with ``__metadata__["attnviz_config"]``. For F16/BF16 the parameters are
    first rounded IN the model (see round_weights_), so call this before computing references. The
    buffers are stored in ``dtype`` too but not rounded in the model: the C++ loader ignores them."""
    round_weights_(model, dtype)
    td = _TORCH_DTYPES[dtype]
    tensors = {k: v.detach().to(td) for k, v in model.state_dict().items()}
    cfg = json.dumps(model.attnviz_config(), ensure_ascii=False)
    stio.write(path, tensors, {"attnviz_config": cfg})


def init_for_reference_(model, seed, qk_gain=1.6, gain=1.0, emb_std=1.0):
    """Deterministic random weights for reference tests (not a training init): linear weights
    N(0, gain²/fan_in) with Q/K projections at ``qk_gain`` so that attention is peaked (score std about
    qk_gain²), biases N(0, 0.1²), LayerNorm γ = 1 + N(0, 0.2²) and β = N(0, 0.1²), embeddings and learned
    positions N(0, emb_std²)."""
    g = torch.Generator().manual_seed(seed)

    def normal(shape, std):
        return torch.randn(shape, generator=g) * std

    with torch.no_grad():
        for name, p in model.named_parameters():  # deterministic order
            leaf = name.split(".")[-1]
            parent = name.split(".")[-2] if "." in name else ""
            if "norm" in parent:  # LayerNorm (layer_norm, norm1.., encoder.norm)
                p.copy_(1.0 + normal(p.shape, 0.2) if leaf == "weight" else normal(p.shape, 0.1))
            elif leaf == "bias" or leaf == "in_proj_bias":
                p.copy_(normal(p.shape, 0.1))
            elif "emb" in name:  # token embeddings, learned positions
                p.copy_(normal(p.shape, emb_std))
            elif leaf == "in_proj_weight":  # packed q, k, v of nn.MultiheadAttention
                E = p.shape[1]
                p[:2 * E].copy_(normal((2 * E, E), qk_gain / math.sqrt(E)))
                p[2 * E:].copy_(normal((E, E), gain / math.sqrt(E)))
            elif p.dim() == 2:
                g_ = qk_gain if parent in ("W_Q", "W_K", "WQ", "WK") else gain
                p.copy_(normal(p.shape, g_ / math.sqrt(p.shape[1])))
            else:
                raise ValueError("init_for_reference_: unhandled parameter %s" % name)
    return model


def model_from_config(cfg, **overrides):
    """Build an (untrained) model from an attnviz config dict; ``overrides`` go to the constructor
    (e.g. layer_norm=True, projection_bias=True, which the config does not name)."""
    fam = cfg["family"]
    kw = dict(src_vocab=cfg["src_vocab"], tgt_vocab=cfg["tgt_vocab"], d_model=cfg["d_model"],
              d_ff=cfg["d_ff"], n_heads=cfg["n_heads"], n_encoder_layers=cfg["n_encoder_layers"],
              n_decoder_layers=cfg["n_decoder_layers"], bos_id=cfg["bos_id"], eos_id=cfg["eos_id"],
              unk_id=cfg.get("unk_id", -1), positional=cfg.get("positional", "sinusoidal"),
              max_len=cfg.get("max_len", 5000), layer_norm_eps=cfg.get("layer_norm_eps", 1e-5),
              name=cfg.get("name"), description=cfg.get("description"))
    dk = cfg.get("d_k", cfg["d_model"] // cfg["n_heads"])
    dv = cfg.get("d_v", cfg["d_model"] // cfg["n_heads"])
    pad = cfg.get("pad_id", 0)
    if fam == "nlp-tutorial":
        kw.update(d_k=dk, d_v=dv, pad_id=pad, activation=cfg.get("activation", "relu"),
                  bias=cfg.get("attn_bias", False))
        cls = NlpTutorialTransformer
    elif fam == "seed003":
        kw.update(d_k=dk, d_v=dv, src_pad_id=cfg.get("src_pad_id", pad), tgt_pad_id=cfg.get("tgt_pad_id", pad))
        cls = Seed003Translation
    elif fam == "torch-seq2seq":
        kw.update(pad_id=pad, norm_first=cfg.get("norm", "post") == "pre", activation=cfg.get("activation", "relu"))
        cls = TorchSeq2Seq
    else:
        raise ValueError("unknown family %r" % fam)
    kw.update(overrides)
    return cls(**kw)


def load_model(path):
    """Load a model written by save_model (or any file following docs/formats.md whose config is in the
    metadata). Options the config does not name (nlp-tutorial LayerNorm modules, projection bias) are
    inferred from the tensors present; the buffers (sinusoid tables) are not loaded but recomputed in
    float32, as the references use them."""
    tensors, meta = stio.read(path)
    cfg = json.loads(meta["attnviz_config"])
    tensors = {k.replace(".ln.", ".layer_norm."): v for k, v in tensors.items()}  # docs allow ".ln."
    overrides = {}
    if cfg["family"] in ("nlp-tutorial", "seed003"):
        overrides["projection_bias"] = "projection.bias" in tensors
    if cfg["family"] == "nlp-tutorial":
        overrides["layer_norm"] = any(k.endswith("layer_norm.weight") for k in tensors)
    model = model_from_config(cfg, **overrides)
    buffers = set(k for k, _ in model.named_buffers())
    sd = {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in tensors.items() if k not in buffers}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if k not in buffers]
    if missing or unexpected:
        raise ValueError("load_model: missing %s, unexpected %s" % (missing, unexpected))
    return model.eval()
