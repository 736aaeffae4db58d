"""PyTorch reference models for attnviz: every model class of the tutorials the C++ core reproduces.

The models are the ground truth of the numerics the C++ core must match. Each keeps the structure (and
therefore the ``state_dict`` names) of the tutorial it comes from; see docs/formats.md for the names.

Families and constructors (all arguments keyword-able; vocabularies are lists of token strings, index =
id, or an int size, in which case the tokens are named "<0>", "<1>", ...). The config's ``family`` names
the tensor naming style, ``model`` the class inside it; ``seed003`` and ``torch-seq2seq`` are the old
names of ``wq-tutorial`` and ``pytorch-nn-transformer`` (the classes below still write the old names).

``NlpTutorialTransformer`` -- family ``nlp-tutorial``, model ``Transformer``: the "5-1.Transformer" model
of graykode's nlp-tutorial (5-1.Transformer/Transformer.py), encoder-decoder::

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

``Seed003Translation`` -- family ``seed003`` (= ``wq-tutorial``), model ``Translation``: the
``Translation`` model of the Chinese blog article on the Transformer's principle and source code
(WQ/WK/WV/linear, pos_ffn.l1/l2, tanh GELU), encoder-decoder::

    Seed003Translation(src_vocab, tgt_vocab, d_model=128, d_ff=256, d_k=64, d_v=64, n_heads=8,
                       n_layers=4, n_encoder_layers=None, n_decoder_layers=None, src_pad_id=0,
                       tgt_pad_id=None, bos_id=None, eos_id=None, unk_id=-1, positional="sinusoidal",
                       max_len=5000, projection_bias=False, layer_norm_eps=1e-5, name=None,
                       description=None)

    n_encoder_layers / n_decoder_layers default to n_layers; tgt_pad_id defaults to src_pad_id;
    bos_id / eos_id default to the ids of "S" / "E" in tgt_vocab.

``S3BertModel``, ``S3Classifier``, ``S3GPTModel`` -- family ``wq-tutorial``, models ``BertModel``
(encoder-only: token logits at every position + class logits), ``Classifier`` (encoder-only: class
logits from the mean over all positions) and ``GPTModel`` (decoder-only) of the same article; see their
docstrings for the constructors.

``TorchSeq2Seq`` -- family ``torch-seq2seq`` (= ``pytorch-nn-transformer``), model ``Seq2SeqTransformer``:
PyTorch's tutorial "Language Translation with nn.Transformer and torchtext" (sequence-first)::

    TorchSeq2Seq(src_vocab, tgt_vocab, d_model=512, n_heads=8, d_ff=512, n_encoder_layers=3,
                 n_decoder_layers=3, pad_id=None, bos_id=None, eos_id=None, unk_id=None,
                 norm_first=False, activation="relu", positional="sinusoidal", max_len=5000,
                 layer_norm_eps=1e-5, dropout=0.1, name=None, description=None)

    pad/bos/eos/unk ids default to the ids of "<pad>", "<bos>", "<eos>", "<unk>" in tgt_vocab
    (the tutorial's 1, 2, 3, 0); unk_id falls back to -1 when there is no "<unk>".

``MyTranslationModel`` -- family ``my-transformer``, model ``TranslationModel``: moon-hotel's
TransformerTranslation repository (MyTransformer, MyMultiheadAttention; the article "4万字50余图3个实战
示例一网打尽Transformer"), encoder-decoder, with the three spellings of q/k/v (``qkv``="separate",
"separate-linear", "fused"); see its docstring.

``StepByStepEncoder`` -- family ``step-by-step-encoder``, model ``TransformerEncoder``: the encoder of the
article "使用 Pytorch 一步一步实现 Transformer Encoder" (AttentionHead per head, pre-LayerNorm, learned
positions), encoder-only; see its docstring.

Every model (an ``AttnvizModel``) offers:

- ``attnviz_config()`` -> dict with the config keys of docs/formats.md;
- ``trace(src_ids=None, tgt_ids=None, segment_ids=None)`` -> dict of numpy arrays, for the kinds the
  model has: ``enc_self.{scores,mask,probs}``, ``dec_self.*``, ``cross.*`` ([B, L, H, Tq, Tk]; masks
  uint8, 1 = masked; scores scaled and taken before the mask); ``logits`` [B, T, V] when the model has a
  token head, ``class_logits`` [B, n_classes] when it has a class head, and ``hidden`` [B, T, d_model]
  (the output of the last stack, after any final norm). Inputs are padded batch-first id lists:
  encoder-decoders take src_ids and tgt_ids, encoder-only models src_ids (+ segment_ids for BertModel),
  decoder-only models tgt_ids;
- ``greedy_decode(ids_1d, max_len)`` -> generated ids (without the start token, with the eos if
  produced; at most ``max_len`` ids): for encoder-decoders ``ids_1d`` is the source, for decoder-only
  models the prompt (the result is the continuation); encoder-only models have none.

Module functions: ``save_model(model, path, dtype)`` (rounds the parameters in place for F16/BF16,
then writes the state_dict + config), ``round_weights_(model, dtype)``, ``init_for_reference_(model,
seed)`` (random weights with peaked attention, for tests), ``model_from_config(cfg)``,
``load_model(path)`` and ``family_and_model(cfg)``.

Always run with Debian's PyTorch: /usr/bin/python3.
"""
import copy
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
class _Capture:
    """Context manager: remembers the input (or, with output=True, the output) of the last call of
    ``module`` -- e.g. the hidden states an output head projects."""

    def __init__(self, module, output=False):
        self.module, self.output, self.value = module, output, None

    def __enter__(self):
        if self.output:
            def hook(_module, _inputs, out):
                self.value = out
            self.handle = self.module.register_forward_hook(hook)
        else:
            def hook(_module, inputs):
                self.value = inputs[0].detach()
            self.handle = self.module.register_forward_pre_hook(hook)
        return self

    def __exit__(self, *exc):
        self.handle.remove()
        return False


class AttnvizModel(nn.Module):
    family = None
    model_name = None  # the tutorial's class name (config key ``model``); None for the three original families
    architecture = "encoder-decoder"  # | "encoder-only" | "decoder-only"

    # Subclasses implement _attn_records() -> {"enc_self": [...], "dec_self": [...], "cross": [...]} with only
    # the kinds the model has (lists of ``last`` dicts, one per layer, filled by the last forward),
    # _greedy(ids_1xN, max_len) -> list of ids, attnviz_config(), and either
    #   _outputs(src, tgt, seg) -> {"logits": …, "class_logits": …, "hidden": …} (batch-first tensors), or
    #   _logits(src, tgt) -> [B, T, V] plus _head (the output projection module; its input is ``hidden``).
    _head = None
    _head_seq_first = False  # the head sees [T, B, d] (sequence-first models)

    def _outputs(self, src, tgt, seg):
        with _Capture(getattr(self, self._head)) as cap:
            logits = self._logits(src, tgt)
        hidden = cap.value.transpose(0, 1) if self._head_seq_first else cap.value
        return {"logits": logits, "hidden": hidden}

    def trace(self, src_ids=None, tgt_ids=None, segment_ids=None):
        """Run the model on a padded batch and return the reference tensors (numpy): the attention records
        of the kinds the model has, ``logits`` and/or ``class_logits`` as the model has heads, and ``hidden``
        (the output of the last stack, batch-first). Encoder-decoders take src_ids and tgt_ids, encoder-only
        models src_ids (+ segment_ids), decoder-only models tgt_ids."""
        self.eval()
        src = None if src_ids is None else _ids(src_ids)
        tgt = None if tgt_ids is None else _ids(tgt_ids)
        seg = None if segment_ids is None else _ids(segment_ids)
        with torch.no_grad():
            outputs = self._outputs(src, tgt, seg)
            records = self._attn_records()
        out = {}
        for kind, recs in records.items():
            for key in ("scores", "mask", "probs"):
                a = torch.stack([r[key] for r in recs], dim=1)  # [B, L, H, Tq, Tk]
                out["%s.%s" % (kind, key)] = (a.to(torch.uint8) if key == "mask" else a.float()).numpy()
        for key, value in outputs.items():
            out[key] = value.float().numpy()
        return out

    def greedy_decode(self, ids_1d, max_len):
        """Greedy decoding as in the tutorials. Encoder-decoders: ``ids_1d`` is the source; start with bos,
        append the argmax of the last position, stop after eos or after ``max_len`` generated ids; returns the
        ids without the start token. Decoder-only models: ``ids_1d`` is the prompt, which is continued the same
        way; returns the continuation only. Encoder-only models have no greedy decode."""
        if self.architecture == "encoder-only":
            raise TypeError("%s is encoder-only: it has no greedy decode" % type(self).__name__)
        self.eval()
        ids = _ids(list(ids_1d))
        with torch.no_grad():
            return [int(i) for i in self._greedy(ids, int(max_len))]

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
# nlp-tutorial: the "5-1.Transformer" model of graykode's nlp-tutorial, made configurable.
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
    """The original builds ``nn.LayerNorm(d_model)`` inside forward(): a fresh, identity-affine norm
    (made on the input's device here, so that the model runs on a GPU too).
    The layer_norm variant uses the module's own LayerNorm instead."""
    if hasattr(module, "layer_norm"):
        return module.layer_norm(x)
    return nn.LayerNorm(module.d_model, eps=module.layer_norm_eps, device=x.device)(x)


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
    _head = "projection"

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
# seed003 (wq-tutorial): the ``Translation`` model of the Chinese blog article on the Transformer's
# principle and source code (batch-first positions, biases, tanh GELU, real LayerNorms, residual taken from
# the attention's query input).
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
    _head = "projection"

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
# wq-tutorial: the other models of the same blog article (the one with the ``Translation`` model above):
# BertModel (encoder-only, MLM + class heads), Classifier (encoder-only, mean-pooled class head) and
# GPTModel (decoder-only, MaskedDecoder). They reuse the article's EncoderLayer / MultiHeadAttention /
# PoswiseFeedForwardNet (the S3* classes above): post-norm inside the sublayers, tanh GELU, fill -1e9.
# ======================================================================================================
def _wq_cfg(vocab, d_model, d_ff, d_k, d_v, n_heads, n_layers, pad_id, positional, max_len, layer_norm_eps):
    """The attribute bag the S3* modules read (one vocabulary and pad id serve both "sides")."""
    assert positional in ("sinusoidal", "learned"), positional
    return _Cfg(src_vocab=vocab, tgt_vocab=vocab, d_model=d_model, d_ff=d_ff, d_k=d_k, d_v=d_v,
                n_heads=n_heads, n_encoder_layers=n_layers, n_decoder_layers=n_layers, src_pad_id=pad_id,
                tgt_pad_id=pad_id, positional=positional, max_len=max_len, layer_norm_eps=layer_norm_eps)


class _WqModel(AttnvizModel):
    family = "wq-tutorial"

    def _common(self, vocab, d_model, d_ff, d_k, d_v, n_heads, n_layers, pad_id, unk_id, positional,
                max_len, layer_norm_eps, name, description):
        self.vocab = _vocab(vocab)
        self.d_model, self.d_ff, self.d_k, self.d_v, self.n_heads = d_model, d_ff, d_k, d_v, n_heads
        self.n_layers, self.pad_id, self.unk_id = n_layers, pad_id, unk_id
        self.positional, self.max_len, self.layer_norm_eps = positional, max_len, layer_norm_eps
        self.name, self.description = name, description
        return _wq_cfg(self.vocab, d_model, d_ff, d_k, d_v, n_heads, n_layers, pad_id, positional, max_len,
                       layer_norm_eps)

    def _wq_config(self, layers_key, **extra):
        cfg = {
            "family": self.family, "model": self.model_name, "d_model": self.d_model, "d_ff": self.d_ff,
            "n_heads": self.n_heads, "d_k": self.d_k, "d_v": self.d_v, layers_key: self.n_layers,
            "vocab": list(self.vocab), "pad_id": self.pad_id,
        }
        cfg.update(extra)
        cfg.update({
            "unk_id": self.unk_id, "norm": "post", "activation": "gelu_tanh", "attn_bias": True,
            "ffn_bias": True, "final_norm": False, "embed_scale": False, "positional": self.positional,
            "max_len": self.max_len, "mask_fill": -1e9, "layer_norm_eps": self.layer_norm_eps,
        })
        return cfg


def _class_labels(labels, n_classes):
    if labels is None:
        return ["class %d" % i for i in range(n_classes)]
    assert len(labels) == n_classes, "class_labels needs n_classes names"
    return [str(x) for x in labels]


class S3BertModel(_WqModel):
    """The article's ``BertModel``::

        S3BertModel(vocab, d_model=128, d_ff=256, d_k=64, d_v=64, n_heads=8, n_layers=4, pad_id=0,
                    unk_id=-1, n_segments=2, n_classes=2, class_labels=None, positional="sinusoidal",
                    max_len=5000, layer_norm_eps=1e-5, name=None, description=None)

    The article's forward gathers the hidden states at ``masked_pos`` for the MLM head; attnviz (and trace)
    computes the token logits at EVERY position (masked_pos=None). ``decoder.weight`` is tied to
    ``tok_embed.weight`` (the state_dict holds both names, with the same values). The article hard-codes
    2 segments and 2 classes; here they are parameters with those defaults."""
    model_name = "BertModel"
    architecture = "encoder-only"

    def __init__(self, vocab, d_model=128, d_ff=256, d_k=64, d_v=64, n_heads=8, n_layers=4, pad_id=0,
                 unk_id=-1, n_segments=2, n_classes=2, class_labels=None, positional="sinusoidal",
                 max_len=5000, layer_norm_eps=1e-5, name=None, description=None):
        super().__init__()
        c = self._common(vocab, d_model, d_ff, d_k, d_v, n_heads, n_layers, pad_id, unk_id, positional,
                         max_len, layer_norm_eps, name, description)
        self.n_segments, self.n_classes = n_segments, n_classes
        self.class_labels = _class_labels(class_labels, n_classes)
        vocab_size = len(self.vocab)
        # (the article's order of construction, hence of the state_dict)
        self.tok_embed = nn.Embedding(vocab_size, d_model)
        self.pos_embed = _s3_pos(c)
        self.seg_embed = nn.Embedding(n_segments, d_model)
        self.layers = nn.ModuleList([S3EncoderLayer(c) for _ in range(n_layers)])
        self.pad_index = pad_id
        self.fc = nn.Linear(d_model, d_model)
        self.active1 = nn.Tanh()
        self.classifier = nn.Linear(d_model, n_classes)
        self.linear = nn.Linear(d_model, d_model)
        self.active2 = S3GELU()
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.decoder = nn.Linear(d_model, vocab_size, bias=False)
        self.decoder.weight = self.tok_embed.weight
        self.decoder_bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, input_ids, segment_ids, masked_pos=None):
        output = self.tok_embed(input_ids) + self.seg_embed(segment_ids)
        output = self.pos_embed(output)
        enc_self_attn_mask = s3_get_attn_pad_mask(input_ids, input_ids, self.pad_index)
        for layer in self.layers:
            output, enc_self_attn = layer(output, enc_self_attn_mask)
        h_pooled = self.active1(self.fc(output[:, 0]))
        logits_clsf = self.classifier(h_pooled)
        if masked_pos is None:  # attnviz: every position
            h_masked = output
        else:
            masked_pos = masked_pos[:, :, None].expand(-1, -1, output.size(-1))
            h_masked = torch.gather(output, 1, masked_pos)
        h_masked = self.norm(self.active2(self.linear(h_masked)))
        logits_lm = self.decoder(h_masked) + self.decoder_bias
        return logits_lm, logits_clsf, output

    def _outputs(self, src, tgt, seg):
        if seg is None:
            seg = torch.zeros_like(src)
        logits_lm, logits_clsf, output = self(src, seg)
        return {"logits": logits_lm, "class_logits": logits_clsf, "hidden": output}

    def _attn_records(self):
        return {"enc_self": [l.enc_self_attn.last for l in self.layers]}

    def attnviz_config(self):
        cfg = self._wq_config("n_encoder_layers", n_segments=self.n_segments, n_classes=self.n_classes,
                              class_labels=list(self.class_labels), proj_bias=True)
        return self._finish_config(cfg)


class S3Classifier(_WqModel):
    """The article's ``Classifier``: the Translation model's Encoder (state_dict ``encoder.*``) and ``projection``
    [n_classes, d_model] applied to torch.mean(enc_outputs, dim=1) -- the mean over ALL positions, padding
    included, as the article computes it::

        S3Classifier(vocab, n_classes, d_model=128, d_ff=256, d_k=64, d_v=64, n_heads=8, n_layers=4,
                     pad_id=0, unk_id=-1, class_labels=None, positional="sinusoidal", max_len=5000,
                     layer_norm_eps=1e-5, name=None, description=None)"""
    model_name = "Classifier"
    architecture = "encoder-only"

    def __init__(self, vocab, n_classes, d_model=128, d_ff=256, d_k=64, d_v=64, n_heads=8, n_layers=4,
                 pad_id=0, unk_id=-1, class_labels=None, positional="sinusoidal", max_len=5000,
                 layer_norm_eps=1e-5, name=None, description=None):
        super().__init__()
        c = self._common(vocab, d_model, d_ff, d_k, d_v, n_heads, n_layers, pad_id, unk_id, positional,
                         max_len, layer_norm_eps, name, description)
        self.n_classes = n_classes
        self.class_labels = _class_labels(class_labels, n_classes)
        self.encoder = S3Encoder(c)
        self.projection = nn.Linear(d_model, n_classes)

    def forward(self, enc_inputs):
        enc_outputs, enc_self_attns = self.encoder(enc_inputs)
        mean_enc_outputs = torch.mean(enc_outputs, dim=1)
        logits = self.projection(mean_enc_outputs)
        return logits, enc_self_attns

    def _outputs(self, src, tgt, seg):
        with _Capture(self.encoder, output=True) as cap:
            logits, _ = self(src)
        return {"class_logits": logits, "hidden": cap.value[0]}

    def _attn_records(self):
        return {"enc_self": [l.enc_self_attn.last for l in self.encoder.layers]}

    def attnviz_config(self):
        cfg = self._wq_config("n_encoder_layers", n_classes=self.n_classes,
                              class_labels=list(self.class_labels))
        return self._finish_config(cfg)


class S3MaskedDecoderLayer(nn.Module):
    """The article's MaskedDecoderLayer: self-attention and feed-forward, no cross-attention."""

    def __init__(self, c):
        super().__init__()
        self.dec_self_attn = S3MultiHeadAttention(c.d_model, c.d_k, c.d_v, c.n_heads, c.layer_norm_eps)
        self.pos_ffn = S3PoswiseFeedForwardNet(c.d_model, c.d_ff, c.layer_norm_eps)

    def forward(self, dec_inputs, dec_self_attn_mask):
        dec_outputs, dec_self_attn = self.dec_self_attn(dec_inputs, dec_inputs, dec_inputs, dec_self_attn_mask)
        dec_outputs = self.pos_ffn(dec_outputs)
        return dec_outputs, dec_self_attn


class S3MaskedDecoder(nn.Module):
    """The article's MaskedDecoder (state_dict ``tgt_emb``, ``pos_emb``, ``layers``); mask = padding ∪ subsequent."""

    def __init__(self, c):
        super().__init__()
        self.pad_index = c.tgt_pad_id
        self.tgt_emb = nn.Embedding(len(c.tgt_vocab), c.d_model)
        self.pos_emb = _s3_pos(c)
        self.layers = nn.ModuleList([S3MaskedDecoderLayer(c) for _ in range(c.n_decoder_layers)])

    def forward(self, dec_inputs):
        dec_outputs = self.tgt_emb(dec_inputs)
        dec_outputs = self.pos_emb(dec_outputs)
        dec_self_attn_pad_mask = s3_get_attn_pad_mask(dec_inputs, dec_inputs, self.pad_index)
        dec_self_attn_subsequent_mask = s3_get_attn_subsequent_mask(dec_inputs)
        dec_self_attn_mask = torch.gt((dec_self_attn_pad_mask + dec_self_attn_subsequent_mask), 0)
        dec_self_attns = []
        for layer in self.layers:
            dec_outputs, dec_self_attn = layer(dec_inputs=dec_outputs, dec_self_attn_mask=dec_self_attn_mask)
            dec_self_attns.append(dec_self_attn)
        dec_self_attns = torch.stack(dec_self_attns).permute([1, 0, 2, 3, 4])
        return dec_outputs, dec_self_attns


class S3GPTModel(_WqModel):
    """The article's ``GPTModel``: ``decoder`` (a MaskedDecoder) and ``projection`` [V, d_model] (no bias)::

        S3GPTModel(vocab, d_model=128, d_ff=256, d_k=64, d_v=64, n_heads=8, n_layers=4, pad_id=0,
                   bos_id=-1, eos_id=-1, unk_id=-1, projection_bias=False, positional="sinusoidal",
                   max_len=5000, layer_norm_eps=1e-5, name=None, description=None)

    The article has no generation loop; greedy_decode continues a prompt: append the argmax of the last
    position, stop after eos_id (when >= 0) or after max_len new ids."""
    model_name = "GPTModel"
    architecture = "decoder-only"

    def __init__(self, vocab, d_model=128, d_ff=256, d_k=64, d_v=64, n_heads=8, n_layers=4, pad_id=0,
                 bos_id=-1, eos_id=-1, unk_id=-1, projection_bias=False, positional="sinusoidal",
                 max_len=5000, layer_norm_eps=1e-5, name=None, description=None):
        super().__init__()
        c = self._common(vocab, d_model, d_ff, d_k, d_v, n_heads, n_layers, pad_id, unk_id, positional,
                         max_len, layer_norm_eps, name, description)
        self.bos_id, self.eos_id = bos_id, eos_id
        self.decoder = S3MaskedDecoder(c)
        self.projection = nn.Linear(d_model, len(self.vocab), bias=projection_bias)

    def forward(self, dec_inputs):
        dec_outputs, dec_self_attns = self.decoder(dec_inputs)
        dec_logits = self.projection(dec_outputs)
        return dec_logits, dec_self_attns

    def _outputs(self, src, tgt, seg):
        with _Capture(self.projection) as cap:
            logits, _ = self(tgt)
        return {"logits": logits, "hidden": cap.value}

    def _attn_records(self):
        return {"dec_self": [l.dec_self_attn.last for l in self.decoder.layers]}

    def _greedy(self, prompt, max_len):
        dec_input = prompt
        out = []
        while len(out) < max_len:
            next_word = int(self(dec_input)[0][0, -1].max(dim=-1)[1])
            out.append(next_word)
            if next_word == self.eos_id:
                break
            dec_input = torch.cat([dec_input, torch.tensor([[next_word]], dtype=torch.long)], -1)
        return out

    def attnviz_config(self):
        cfg = self._wq_config("n_decoder_layers", bos_id=self.bos_id, eos_id=self.eos_id,
                              proj_bias=self.projection.bias is not None)
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
    _head = "generator"
    _head_seq_first = True  # the last generator call is the real module's, on [T, B, d]

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
            # trace() takes ids as they are: the source is not wrapped in <bos> ... <eos> here
            "src_bos_eos": False,
        })
        return self._finish_config(cfg)


# ======================================================================================================
# my-transformer: the TranslationModel of moon-hotel's TransformerTranslation repository (the article
# "4万字50余图3个实战示例一网打尽Transformer" by 月来客栈): MyTransformer (post-norm, ReLU, final norms on both
# stacks) built from MyTransformerEncoderLayer / MyTransformerDecoderLayer / MyMultiheadAttention, sinusoidal
# positions, token embeddings × √d_model, masks filled with -inf, sequence-first tensors [T, B, ...].
# MyMultiheadAttention comes in three spellings (``qkv``):
#   "separate"        q_proj_weight / k_proj_weight / v_proj_weight Parameters, no q/k/v bias, out_proj with
#                     bias -- as the article writes it;
#   "separate-linear" q_proj / k_proj / v_proj / out_proj nn.Linear with bias -- the repository's later version;
#   "fused"           in_proj_weight [3d, d] / in_proj_bias / out_proj -- torch.nn.MultiheadAttention's names,
#                     i.e. the model when TranslationModel.py takes ``from torch.nn import Transformer as
#                     MyTransformer`` (trace() checks the result against torch.nn.Transformer).
# ======================================================================================================
class MyPositionalEncoding(nn.Module):
    """The repository's PositionalEncoding: buffer ``pe`` [max_len, 1, d_model], x [T, B, d] + pe[:T]."""

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(1)
        self.register_buffer('pe', pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


def my_multi_head_attention_forward(query, key, value, num_heads, dropout_p, out_proj_weight, out_proj_bias,
                                    training=True, key_padding_mask=None, q_proj_weight=None,
                                    k_proj_weight=None, v_proj_weight=None, attn_mask=None, q_proj_bias=None,
                                    k_proj_bias=None, v_proj_bias=None, record=None):
    """The article's multi_head_attention_forward (sequence-first), with optional q/k/v biases for the other
    two spellings. q is scaled by head_dim^-0.5 BEFORE q·kᵀ; ``attn_mask`` is ADDED to the scores (pass
    the float mask: 0 / -inf -- a bool mask would be added as 0 / 1, as in the repository), then the
    ``key_padding_mask`` keys ([B, S], True = padding) are filled with -inf. When ``record`` is a dict it
    receives scores [B, H, Tq, Tk] (scaled, before the masks), mask (True where the fill is -inf) and probs.
    Returns (Z [Tq, B, E], head-averaged weights [B, Tq, Tk])."""
    # stage 1: Q, K, V
    q = F.linear(query, q_proj_weight, q_proj_bias)
    k = F.linear(key, k_proj_weight, k_proj_bias)
    v = F.linear(value, v_proj_weight, v_proj_bias)
    # stage 2: scaling; attn_mask shape
    tgt_len, bsz, embed_dim = query.size()
    src_len = key.size(0)
    head_dim = embed_dim // num_heads
    scaling = float(head_dim) ** -0.5
    q = q * scaling
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            attn_mask = attn_mask.unsqueeze(0)
            if list(attn_mask.size()) != [1, query.size(0), key.size(0)]:
                raise RuntimeError('The size of the 2D attn_mask is not correct.')
        elif attn_mask.dim() == 3:
            if list(attn_mask.size()) != [bsz * num_heads, query.size(0), key.size(0)]:
                raise RuntimeError('The size of the 3D attn_mask is not correct.')
    # stage 3: attention weights
    q = q.contiguous().view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.contiguous().view(-1, bsz * num_heads, head_dim).transpose(0, 1)
    v = v.contiguous().view(-1, bsz * num_heads, head_dim).transpose(0, 1)
    attn_output_weights = torch.bmm(q, k.transpose(1, 2))  # [B*H, Tq, Tk]
    if record is not None:
        record["scores"] = attn_output_weights.detach().clone().view(bsz, num_heads, tgt_len, src_len)
        masked = torch.zeros(bsz, num_heads, tgt_len, src_len, dtype=torch.bool)
        if attn_mask is not None and attn_mask.is_floating_point():
            masked = masked | torch.isneginf(attn_mask).view(-1, num_heads if attn_mask.size(0) > 1 else 1,
                                                             tgt_len, src_len)
        if key_padding_mask is not None:
            masked = masked | key_padding_mask.bool()[:, None, None, :]
        record["mask"] = masked
    if attn_mask is not None:
        attn_output_weights += attn_mask
    if key_padding_mask is not None:
        attn_output_weights = attn_output_weights.view(bsz, num_heads, tgt_len, src_len)
        attn_output_weights = attn_output_weights.masked_fill(key_padding_mask.unsqueeze(1).unsqueeze(2),
                                                              float('-inf'))
        attn_output_weights = attn_output_weights.view(bsz * num_heads, tgt_len, src_len)
    attn_output_weights = F.softmax(attn_output_weights, dim=-1)
    attn_output_weights = F.dropout(attn_output_weights, p=dropout_p, training=training)
    attn_output = torch.bmm(attn_output_weights, v)
    # stage 4: concatenate the heads, output projection
    attn_output = attn_output.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
    attn_output_weights = attn_output_weights.view(bsz, num_heads, tgt_len, src_len)
    if record is not None:
        record["probs"] = attn_output_weights.detach()
    Z = F.linear(attn_output, out_proj_weight, out_proj_bias)
    return Z, attn_output_weights.sum(dim=1) / num_heads


class MyMultiheadAttention(nn.Module):
    QKV = ("separate", "separate-linear", "fused")

    def __init__(self, embed_dim, num_heads, dropout=0., bias=True, qkv="separate"):
        super().__init__()
        assert qkv in self.QKV, qkv
        self.embed_dim = embed_dim
        self.head_dim = embed_dim // num_heads
        self.kdim = self.head_dim
        self.vdim = self.head_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.qkv = qkv
        assert self.head_dim * num_heads == self.embed_dim, "embed_dim must be a multiple of num_heads"
        if qkv == "separate":
            self.q_proj_weight = nn.Parameter(torch.empty(embed_dim, embed_dim))
            self.k_proj_weight = nn.Parameter(torch.empty(embed_dim, embed_dim))
            self.v_proj_weight = nn.Parameter(torch.empty(embed_dim, embed_dim))
        elif qkv == "separate-linear":
            self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
            self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
            self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        else:
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim)) if bias else None
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.last = None
        self._reset_parameters()

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def projections(self):
        """(q_w, k_w, v_w, q_b, k_b, v_b) whatever the spelling (biases None where absent)."""
        if self.qkv == "separate":
            return self.q_proj_weight, self.k_proj_weight, self.v_proj_weight, None, None, None
        if self.qkv == "separate-linear":
            return (self.q_proj.weight, self.k_proj.weight, self.v_proj.weight,
                    self.q_proj.bias, self.k_proj.bias, self.v_proj.bias)
        w = self.in_proj_weight.chunk(3)
        b = (None,) * 3 if self.in_proj_bias is None else self.in_proj_bias.chunk(3)
        return w[0], w[1], w[2], b[0], b[1], b[2]

    def forward(self, query, key, value, attn_mask=None, key_padding_mask=None):
        q_w, k_w, v_w, q_b, k_b, v_b = self.projections()
        self.last = {}
        return my_multi_head_attention_forward(query, key, value, self.num_heads, self.dropout,
                                               self.out_proj.weight, self.out_proj.bias,
                                               training=self.training, key_padding_mask=key_padding_mask,
                                               q_proj_weight=q_w, k_proj_weight=k_w, v_proj_weight=v_w,
                                               attn_mask=attn_mask, q_proj_bias=q_b, k_proj_bias=k_b,
                                               v_proj_bias=v_b, record=self.last)


def _my_get_clones(module, N):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


class MyTransformerEncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, qkv="separate"):
        super().__init__()
        self.self_attn = MyMultiheadAttention(d_model, nhead, dropout=dropout, qkv=qkv)
        self.dropout1 = nn.Dropout(dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.activation = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, src, src_mask=None, src_key_padding_mask=None):
        src2 = self.self_attn(src, src, src, attn_mask=src_mask, key_padding_mask=src_key_padding_mask)[0]
        src = src + self.dropout1(src2)
        src = self.norm1(src)
        src2 = self.activation(self.linear1(src))
        src2 = self.linear2(self.dropout(src2))
        src = src + self.dropout2(src2)
        src = self.norm2(src)
        return src


class MyTransformerEncoder(nn.Module):
    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _my_get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None):
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


class MyTransformerDecoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, qkv="separate"):
        super().__init__()
        self.self_attn = MyMultiheadAttention(embed_dim=d_model, num_heads=nhead, dropout=dropout, qkv=qkv)
        self.multihead_attn = MyMultiheadAttention(embed_dim=d_model, num_heads=nhead, dropout=dropout, qkv=qkv)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.activation = nn.ReLU()

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None):
        tgt2 = self.self_attn(tgt, tgt, tgt, attn_mask=tgt_mask, key_padding_mask=tgt_key_padding_mask)[0]
        tgt = tgt + self.dropout1(tgt2)
        tgt = self.norm1(tgt)
        tgt2 = self.multihead_attn(tgt, memory, memory, attn_mask=memory_mask,
                                   key_padding_mask=memory_key_padding_mask)[0]
        tgt = tgt + self.dropout2(tgt2)
        tgt = self.norm2(tgt)
        tgt2 = self.activation(self.linear1(tgt))
        tgt2 = self.linear2(self.dropout(tgt2))
        tgt = tgt + self.dropout3(tgt2)
        tgt = self.norm3(tgt)
        return tgt


class MyTransformerDecoder(nn.Module):
    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _my_get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None):
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


class MyTransformer(nn.Module):
    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, qkv="separate"):
        super().__init__()
        encoder_layer = MyTransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, qkv)
        encoder_norm = nn.LayerNorm(d_model)
        self.encoder = MyTransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        decoder_layer = MyTransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, qkv)
        decoder_norm = nn.LayerNorm(d_model)
        self.decoder = MyTransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None):
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask)
        output = self.decoder(tgt=tgt, memory=memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                              tgt_key_padding_mask=tgt_key_padding_mask,
                              memory_key_padding_mask=memory_key_padding_mask)
        return output

    def generate_square_subsequent_mask(self, sz):
        """Float mask [sz, sz]: 0 on and below the diagonal, -inf above."""
        mask = (torch.triu(torch.ones(sz, sz)) == 1).transpose(0, 1)
        mask = mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))
        return mask


class MyTranslationModel(AttnvizModel):
    """moon-hotel's ``TranslationModel`` (state_dict ``my_transformer.*``, ``pos_embedding.pe``,
    ``src_token_embedding.embedding``, ``tgt_token_embedding.embedding``, ``classification``)::

        MyTranslationModel(src_vocab, tgt_vocab, d_model=512, n_heads=8, n_encoder_layers=6,
                           n_decoder_layers=6, d_ff=2048, pad_id=None, bos_id=None, eos_id=None, unk_id=None,
                           qkv="separate", max_len=5000, dropout=0.1, name=None, description=None)

    pad/bos/eos/unk ids default to the ids of "<pad>", "<bos>", "<eos>", "<unk>" in tgt_vocab (the
    repository's torchtext specials: 1, 2, 3, 0). The source is not wrapped in bos/eos (the repository
    only wraps the target). trace() masks as the repository's training does (tgt_mask causal,
    src/tgt/memory key padding); greedy_decode follows its translate.py, with the float causal mask."""
    family = "my-transformer"
    model_name = "TranslationModel"

    def __init__(self, src_vocab, tgt_vocab, d_model=512, n_heads=8, n_encoder_layers=6, n_decoder_layers=6,
                 d_ff=2048, pad_id=None, bos_id=None, eos_id=None, unk_id=None, qkv="separate", max_len=5000,
                 dropout=0.1, name=None, description=None):
        super().__init__()
        self.src_vocab, self.tgt_vocab = _vocab(src_vocab), _vocab(tgt_vocab)
        self.d_model, self.n_heads, self.d_ff = d_model, n_heads, d_ff
        self.d_k = self.d_v = d_model // n_heads
        self.n_encoder_layers, self.n_decoder_layers = n_encoder_layers, n_decoder_layers
        tv = self.tgt_vocab
        self.pad_id = _find(tv, "<pad>", "pad_id") if pad_id is None else pad_id
        self.bos_id = _find(tv, "<bos>", "bos_id") if bos_id is None else bos_id
        self.eos_id = _find(tv, "<eos>", "eos_id") if eos_id is None else eos_id
        self.unk_id = (tv.index("<unk>") if "<unk>" in tv else -1) if unk_id is None else unk_id
        self.qkv, self.max_len, self.layer_norm_eps = qkv, max_len, 1e-5  # nn.LayerNorm's default eps
        self.name, self.description = name, description
        self.my_transformer = MyTransformer(d_model=d_model, nhead=n_heads, num_encoder_layers=n_encoder_layers,
                                            num_decoder_layers=n_decoder_layers, dim_feedforward=d_ff,
                                            dropout=dropout, qkv=qkv)
        self.pos_embedding = MyPositionalEncoding(d_model=d_model, dropout=dropout, max_len=max_len)
        self.src_token_embedding = TokenEmbedding(len(self.src_vocab), d_model)
        self.tgt_token_embedding = TokenEmbedding(len(self.tgt_vocab), d_model)
        self.classification = nn.Linear(d_model, len(self.tgt_vocab))
        self._reset_parameters()

    # --- the repository's API (sequence-first [T, B]) ---
    def forward(self, src=None, tgt=None, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None):
        src_embed = self.src_token_embedding(src)
        src_embed = self.pos_embedding(src_embed)
        tgt_embed = self.tgt_token_embedding(tgt)
        tgt_embed = self.pos_embedding(tgt_embed)
        outs = self.my_transformer(src=src_embed, tgt=tgt_embed, src_mask=src_mask, tgt_mask=tgt_mask,
                                   memory_mask=memory_mask, src_key_padding_mask=src_key_padding_mask,
                                   tgt_key_padding_mask=tgt_key_padding_mask,
                                   memory_key_padding_mask=memory_key_padding_mask)
        logits = self.classification(outs)
        return logits

    def encoder(self, src):
        src_embed = self.src_token_embedding(src)
        src_embed = self.pos_embedding(src_embed)
        memory = self.my_transformer.encoder(src_embed)
        return memory

    def decoder(self, tgt, memory, tgt_mask):
        tgt_embed = self.tgt_token_embedding(tgt)
        tgt_embed = self.pos_embedding(tgt_embed)
        outs = self.my_transformer.decoder(tgt_embed, memory=memory, tgt_mask=tgt_mask)
        return outs

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def create_mask(self, src, tgt):
        """As the repository's data helper, except src_mask: None (the helper's all-False bool mask is a
        no-op) -- returns src_mask, tgt_mask (float), src_padding_mask [B, S], tgt_padding_mask [B, T]."""
        tgt_mask = self.my_transformer.generate_square_subsequent_mask(tgt.shape[0])
        src_padding_mask = (src == self.pad_id).transpose(0, 1)
        tgt_padding_mask = (tgt == self.pad_id).transpose(0, 1)
        return None, tgt_mask, src_padding_mask, tgt_padding_mask

    # --- attnviz plumbing ---
    def _outputs(self, src, tgt, seg):
        src_sf, tgt_sf = src.transpose(0, 1), tgt.transpose(0, 1)
        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = self.create_mask(src_sf, tgt_sf)
        with _Capture(self.classification) as cap:
            logits = self(src_sf, tgt_sf, src_mask=src_mask, tgt_mask=tgt_mask,
                          src_key_padding_mask=src_padding_mask, tgt_key_padding_mask=tgt_padding_mask,
                          memory_key_padding_mask=src_padding_mask)
        self._check_against_torch(src_sf, tgt_sf, tgt_mask, src_padding_mask, tgt_padding_mask, cap.value)
        return {"logits": logits.transpose(0, 1), "hidden": cap.value.transpose(0, 1)}

    def nn_transformer_state_dict(self):
        """my_transformer's weights under torch.nn.Transformer's names (q/k/v packed into in_proj_*)."""
        sd = {k: v for k, v in self.my_transformer.state_dict().items()
              if not any(p in k for p in (".q_proj", ".k_proj", ".v_proj"))}
        for name, m in self.my_transformer.named_modules():
            if isinstance(m, MyMultiheadAttention):
                q_w, k_w, v_w, q_b, k_b, v_b = m.projections()
                sd[name + ".in_proj_weight"] = torch.cat([q_w, k_w, v_w]).detach()
                E = m.embed_dim
                sd[name + ".in_proj_bias"] = torch.cat([torch.zeros(E) if b is None else b.detach()
                                                        for b in (q_b, k_b, v_b)])
        return sd

    def _check_against_torch(self, src, tgt, tgt_mask, src_pad, tgt_pad, outs):
        """The same weights in torch.nn.Transformer (what TranslationModel.py runs when it imports
        ``Transformer as MyTransformer``) must give the same decoder output."""
        with torch.random.fork_rng(devices=[]):
            t = nn.Transformer(d_model=self.d_model, nhead=self.n_heads,
                               num_encoder_layers=self.n_encoder_layers,
                               num_decoder_layers=self.n_decoder_layers, dim_feedforward=self.d_ff, dropout=0.0)
        t.load_state_dict(self.nn_transformer_state_dict(), strict=True)
        t.eval()
        src_embed = self.pos_embedding(self.src_token_embedding(src))
        tgt_embed = self.pos_embedding(self.tgt_token_embedding(tgt))
        ref = t(src_embed, tgt_embed, tgt_mask=tgt_mask, src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                memory_key_padding_mask=src_pad)
        diff = (ref - outs).abs().max().item()
        assert diff <= 1e-5, "MyTransformer differs from torch.nn.Transformer by %g" % diff

    def _attn_records(self):
        return {
            "enc_self": [l.self_attn.last for l in self.my_transformer.encoder.layers],
            "dec_self": [l.self_attn.last for l in self.my_transformer.decoder.layers],
            "cross": [l.multihead_attn.last for l in self.my_transformer.decoder.layers],
        }

    def _greedy(self, src, max_len):
        # translate.py's greedy_decode (which loops max_len-1 times); here: at most max_len new ids. The
        # repository turns the causal mask into bool there, which MyMultiheadAttention would ADD (+1 on
        # future cells); the float mask used in training is used here.
        src = src.transpose(0, 1)  # [S, 1]
        memory = self.encoder(src)
        ys = torch.ones(1, 1).fill_(self.bos_id).type(torch.long)
        out = []
        while len(out) < max_len:
            tgt_mask = self.my_transformer.generate_square_subsequent_mask(ys.size(0))
            o = self.decoder(ys, memory, tgt_mask)
            o = o.transpose(0, 1)
            prob = self.classification(o[:, -1])
            _, next_word = torch.max(prob, dim=1)
            next_word = int(next_word.item())
            out.append(next_word)
            ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
            if next_word == self.eos_id:
                break
        return out

    def attnviz_config(self):
        cfg = self._base_config()
        cfg["model"] = self.model_name
        cfg = {"family": cfg.pop("family"), "model": cfg.pop("model"), **cfg}
        sep_params = self.qkv == "separate"
        cfg.update({
            "pad_id": self.pad_id, "bos_id": self.bos_id, "eos_id": self.eos_id, "unk_id": self.unk_id,
            "norm": "post", "activation": "relu", "qkv": "fused" if self.qkv == "fused" else "separate",
            "attn_bias": True, "q_bias": not sep_params, "k_bias": not sep_params, "v_bias": not sep_params,
            "out_bias": True, "ffn_bias": True, "final_norm": True, "embed_scale": True,
            "positional": "sinusoidal", "max_len": self.max_len, "mask_fill": "-inf",
            "layer_norm_eps": self.layer_norm_eps,
        })
        return self._finish_config(cfg)


# ======================================================================================================
# step-by-step-encoder: the encoder built step by step on BERT's configuration in the article
# "使用 Pytorch 一步一步实现 Transformer Encoder" (after *Natural Language Processing with Transformers*):
# one AttentionHead (q/k/v Linear) per head, pre-LayerNorm layers, GELU (erf) feed-forward, learned
# positions, LayerNorm (eps 1e-12) on the embeddings, masks filled with -inf, no final norm, no head.
# The modules take the article's ``config`` (a HuggingFace-style BertConfig: hidden_size, ...).
# ======================================================================================================
def sbs_scaled_dot_product_attention(query, key, value, query_mask=None, key_mask=None, mask=None,
                                     record=None):
    """The article's scaled_dot_product_attention (masks: 1 = keep, filled with -inf where 0). When
    ``record`` is a dict it receives scores (scaled, before the mask), mask (True = masked) and probs."""
    dim_k = query.size(-1)
    scores = torch.bmm(query, key.transpose(1, 2)) / math.sqrt(dim_k)
    if query_mask is not None and key_mask is not None:
        mask = torch.bmm(query_mask.unsqueeze(-1), key_mask.unsqueeze(1))
    if record is not None:
        record["scores"] = scores.detach().clone()
        record["mask"] = (torch.zeros_like(scores, dtype=torch.bool) if mask is None
                          else (mask == 0).expand_as(scores))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -float("inf"))
    weights = F.softmax(scores, dim=-1)
    if record is not None:
        record["probs"] = weights.detach()
    return torch.bmm(weights, value)


class SbsAttentionHead(nn.Module):
    """The article's AttentionHead: state_dict ``q``, ``k``, ``v`` (Linear embed_dim -> head_dim, bias)."""

    def __init__(self, embed_dim, head_dim):
        super().__init__()
        self.q = nn.Linear(embed_dim, head_dim)
        self.k = nn.Linear(embed_dim, head_dim)
        self.v = nn.Linear(embed_dim, head_dim)
        self.last = None

    def forward(self, query, key, value, query_mask=None, key_mask=None, mask=None):
        self.last = {}
        attn_outputs = sbs_scaled_dot_product_attention(
            self.q(query), self.k(key), self.v(value), query_mask, key_mask, mask, record=self.last)
        return attn_outputs


class SbsMultiHeadAttention(nn.Module):
    """The article's MultiHeadAttention: ``heads`` (ModuleList of AttentionHead), ``output_linear``."""

    def __init__(self, config):
        super().__init__()
        embed_dim = config.hidden_size
        num_heads = config.num_attention_heads
        head_dim = embed_dim // num_heads
        self.heads = nn.ModuleList([SbsAttentionHead(embed_dim, head_dim) for _ in range(num_heads)])
        self.output_linear = nn.Linear(embed_dim, embed_dim)

    @property
    def last(self):
        """The heads' records stacked: [B, H, Tq, Tk]."""
        return {k: torch.stack([h.last[k] for h in self.heads], dim=1) for k in ("scores", "mask", "probs")}

    def forward(self, query, key, value, query_mask=None, key_mask=None, mask=None):
        x = torch.cat([h(query, key, value, query_mask, key_mask, mask) for h in self.heads], dim=-1)
        x = self.output_linear(x)
        return x


class SbsFeedForward(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.linear_1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.linear_2 = nn.Linear(config.intermediate_size, config.hidden_size)
        self.gelu = nn.GELU()
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x):
        x = self.linear_1(x)
        x = self.gelu(x)
        x = self.linear_2(x)
        x = self.dropout(x)
        return x


class SbsTransformerEncoderLayer(nn.Module):
    """Pre-LayerNorm layer: x + attention(layer_norm_1(x)), then x + feed_forward(layer_norm_2(x))."""

    def __init__(self, config):
        super().__init__()
        self.layer_norm_1 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.layer_norm_2 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attention = SbsMultiHeadAttention(config)
        self.feed_forward = SbsFeedForward(config)

    def forward(self, x, mask=None):
        hidden_state = self.layer_norm_1(x)
        x = x + self.attention(hidden_state, hidden_state, hidden_state, mask=mask)
        x = x + self.feed_forward(self.layer_norm_2(x))
        return x


class SbsEmbeddings(nn.Module):
    """Token + learned position embeddings, then LayerNorm (eps 1e-12 in the article)."""

    def __init__(self, config):
        super().__init__()
        self.token_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.embed_norm_eps)
        self.dropout = nn.Dropout()

    def forward(self, input_ids):
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long).unsqueeze(0)
        token_embeddings = self.token_embeddings(input_ids)
        position_embeddings = self.position_embeddings(position_ids)
        embeddings = token_embeddings + position_embeddings
        embeddings = self.layer_norm(embeddings)
        embeddings = self.dropout(embeddings)
        return embeddings


class StepByStepEncoder(AttnvizModel):
    """The article's ``TransformerEncoder`` (state_dict ``embeddings.*``, ``layers.N.*``)::

        StepByStepEncoder(vocab, d_model=768, d_ff=3072, n_heads=12, n_layers=12, pad_id=0, unk_id=-1,
                          max_len=512, layer_norm_eps=1e-5, embed_norm_eps=1e-12, dropout=0.1,
                          name=None, description=None)

    The article's forward takes an optional mask (1 = keep); attnviz masks the padding keys, so trace()
    passes mask = (key != pad_id) as [B, S, S]. Rows are never fully masked as long as every sentence has
    a token (a fully masked row would be NaN with the -inf fill)."""
    family = "step-by-step-encoder"
    model_name = "TransformerEncoder"
    architecture = "encoder-only"

    def __init__(self, vocab, d_model=768, d_ff=3072, n_heads=12, n_layers=12, pad_id=0, unk_id=-1,
                 max_len=512, layer_norm_eps=1e-5, embed_norm_eps=1e-12, dropout=0.1, name=None,
                 description=None):
        super().__init__()
        self.vocab = _vocab(vocab)
        self.d_model, self.d_ff, self.n_heads, self.n_encoder_layers = d_model, d_ff, n_heads, n_layers
        self.d_k = self.d_v = d_model // n_heads
        self.pad_id, self.unk_id, self.max_len = pad_id, unk_id, max_len
        self.layer_norm_eps, self.embed_norm_eps = layer_norm_eps, embed_norm_eps
        self.name, self.description = name, description
        config = _Cfg(vocab_size=len(self.vocab), hidden_size=d_model, num_attention_heads=n_heads,
                      intermediate_size=d_ff, num_hidden_layers=n_layers, max_position_embeddings=max_len,
                      hidden_dropout_prob=dropout, layer_norm_eps=layer_norm_eps, embed_norm_eps=embed_norm_eps)
        self.embeddings = SbsEmbeddings(config)
        self.layers = nn.ModuleList([SbsTransformerEncoderLayer(config)
                                     for _ in range(config.num_hidden_layers)])

    def forward(self, x, mask=None):
        x = self.embeddings(x)
        for layer in self.layers:
            x = layer(x, mask=mask)
        return x

    def padding_mask(self, input_ids):
        """[B, S, S], 1 where the key is not padding (the article's convention: 0 = masked)."""
        B, S = input_ids.shape
        return (input_ids != self.pad_id).unsqueeze(1).expand(B, S, S)

    def _outputs(self, src, tgt, seg):
        return {"hidden": self(src, mask=self.padding_mask(src))}

    def _attn_records(self):
        return {"enc_self": [l.attention.last for l in self.layers]}

    def attnviz_config(self):
        cfg = {
            "family": self.family, "model": self.model_name, "d_model": self.d_model, "d_ff": self.d_ff,
            "n_heads": self.n_heads, "d_k": self.d_k, "d_v": self.d_v, "n_encoder_layers": self.n_encoder_layers,
            "vocab": list(self.vocab), "pad_id": self.pad_id, "unk_id": self.unk_id,
            "norm": "pre", "activation": "gelu", "attn_bias": True, "ffn_bias": True, "qkv": "per-head",
            "final_norm": False, "embed_scale": False, "positional": "learned", "max_len": self.max_len,
            "mask_fill": "-inf", "layer_norm_eps": self.layer_norm_eps,
            "embed_norm": True, "embed_norm_eps": self.embed_norm_eps,
        }
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
    N(0, gain²/fan_in) with the Q/K projections (W_Q/WQ/q/q_proj/q_proj_weight and the first two thirds
    of in_proj_weight, likewise K) at ``qk_gain`` so that attention is peaked (score std about qk_gain²),
    biases (``*_bias`` too) N(0, 0.1²), LayerNorm γ = 1 + N(0, 0.2²) and β = N(0, 0.1²), embeddings and
    learned positions N(0, emb_std²). Tied weights (BertModel's decoder.weight) are drawn once."""
    g = torch.Generator().manual_seed(seed)

    def normal(shape, std):
        return torch.randn(shape, generator=g) * std

    with torch.no_grad():
        for name, p in model.named_parameters():  # deterministic order
            leaf = name.split(".")[-1]
            parent = name.split(".")[-2] if "." in name else ""
            if "norm" in parent:  # LayerNorm (layer_norm, norm1.., encoder.norm)
                p.copy_(1.0 + normal(p.shape, 0.2) if leaf == "weight" else normal(p.shape, 0.1))
            elif leaf == "bias" or leaf.endswith("_bias"):  # in_proj_bias, BertModel's decoder_bias
                p.copy_(normal(p.shape, 0.1))
            elif "emb" in name:  # token embeddings, learned positions
                p.copy_(normal(p.shape, emb_std))
            elif leaf == "in_proj_weight":  # packed q, k, v of nn.MultiheadAttention
                E = p.shape[1]
                p[:2 * E].copy_(normal((2 * E, E), qk_gain / math.sqrt(E)))
                p[2 * E:].copy_(normal((E, E), gain / math.sqrt(E)))
            elif p.dim() == 2:
                qk = parent in ("W_Q", "W_K", "WQ", "WK", "q", "k", "q_proj", "k_proj") or \
                    leaf in ("q_proj_weight", "k_proj_weight")
                g_ = qk_gain if qk else gain
                p.copy_(normal(p.shape, g_ / math.sqrt(p.shape[1])))
            else:
                raise ValueError("init_for_reference_: unhandled parameter %s" % name)
    return model


FAMILY_ALIASES = {"seed003": "wq-tutorial", "torch-seq2seq": "pytorch-nn-transformer"}
DEFAULT_MODEL = {"nlp-tutorial": "Transformer", "wq-tutorial": "Translation",
                 "pytorch-nn-transformer": "Seq2SeqTransformer", "my-transformer": "TranslationModel",
                 "step-by-step-encoder": "TransformerEncoder"}


def family_and_model(cfg):
    """(canonical family, model class name) of a config; old family names are aliases."""
    fam = FAMILY_ALIASES.get(cfg["family"], cfg["family"])
    if fam not in DEFAULT_MODEL:
        raise ValueError("unknown family %r" % cfg["family"])
    return fam, cfg.get("model", DEFAULT_MODEL[fam])


def model_from_config(cfg, **overrides):
    """Build an (untrained) model from an attnviz config dict; ``overrides`` go to the constructor
    (e.g. layer_norm=True, projection_bias=True, qkv="separate-linear", which the config does not name)."""
    fam, model = family_and_model(cfg)
    common = dict(d_model=cfg["d_model"], d_ff=cfg["d_ff"], n_heads=cfg["n_heads"],
                  max_len=cfg.get("max_len", 5000), name=cfg.get("name"), description=cfg.get("description"))
    dk = cfg.get("d_k", cfg["d_model"] // cfg["n_heads"])
    dv = cfg.get("d_v", cfg["d_model"] // cfg["n_heads"])
    pad = cfg.get("pad_id", 0)
    eps = cfg.get("layer_norm_eps", 1e-5)
    if (fam, model) == ("step-by-step-encoder", "TransformerEncoder"):
        kw = dict(common, vocab=cfg["vocab"], n_layers=cfg["n_encoder_layers"], pad_id=pad,
                  unk_id=cfg.get("unk_id", -1), layer_norm_eps=eps,
                  embed_norm_eps=cfg.get("embed_norm_eps", eps))
        cls = StepByStepEncoder
    elif fam == "wq-tutorial" and model in ("BertModel", "Classifier", "GPTModel"):
        kw = dict(common, vocab=cfg["vocab"], d_k=dk, d_v=dv, pad_id=pad, unk_id=cfg.get("unk_id", -1),
                  positional=cfg.get("positional", "sinusoidal"), layer_norm_eps=eps)
        if model == "BertModel":
            kw.update(n_layers=cfg["n_encoder_layers"], n_segments=cfg.get("n_segments", 2),
                      n_classes=cfg.get("n_classes", 2), class_labels=cfg.get("class_labels"))
            cls = S3BertModel
        elif model == "Classifier":
            kw.update(n_layers=cfg["n_encoder_layers"], n_classes=cfg["n_classes"],
                      class_labels=cfg.get("class_labels"))
            cls = S3Classifier
        else:
            kw.update(n_layers=cfg["n_decoder_layers"], bos_id=cfg.get("bos_id", -1),
                      eos_id=cfg.get("eos_id", -1), projection_bias=cfg.get("proj_bias", False))
            cls = S3GPTModel
    else:
        kw = dict(common, src_vocab=cfg["src_vocab"], tgt_vocab=cfg["tgt_vocab"],
                  n_encoder_layers=cfg["n_encoder_layers"], n_decoder_layers=cfg["n_decoder_layers"],
                  bos_id=cfg["bos_id"], eos_id=cfg["eos_id"], unk_id=cfg.get("unk_id", -1))
        if (fam, model) == ("nlp-tutorial", "Transformer"):
            kw.update(d_k=dk, d_v=dv, pad_id=pad, activation=cfg.get("activation", "relu"),
                      bias=cfg.get("attn_bias", False), positional=cfg.get("positional", "sinusoidal"),
                      layer_norm_eps=eps)
            cls = NlpTutorialTransformer
        elif (fam, model) == ("wq-tutorial", "Translation"):
            kw.update(d_k=dk, d_v=dv, src_pad_id=cfg.get("src_pad_id", pad), tgt_pad_id=cfg.get("tgt_pad_id", pad),
                      positional=cfg.get("positional", "sinusoidal"), layer_norm_eps=eps)
            cls = Seed003Translation
        elif (fam, model) == ("pytorch-nn-transformer", "Seq2SeqTransformer"):
            kw.update(pad_id=pad, norm_first=cfg.get("norm", "post") == "pre",
                      activation=cfg.get("activation", "relu"), positional=cfg.get("positional", "sinusoidal"),
                      layer_norm_eps=eps)
            cls = TorchSeq2Seq
        elif (fam, model) == ("my-transformer", "TranslationModel"):
            qkv = cfg.get("qkv", "separate")
            if qkv == "separate" and cfg.get("q_bias", False):
                qkv = "separate-linear"
            kw.update(pad_id=pad, qkv=qkv)
            cls = MyTranslationModel
        else:
            raise ValueError("family %r has no model %r" % (cfg["family"], model))
    kw.update(overrides)
    return cls(**kw)


def load_model(path):
    """Load a model written by save_model (or any file following docs/formats.md whose config is in the
    metadata). Options the config does not name (nlp-tutorial LayerNorm modules, projection bias, the
    spelling of MyMultiheadAttention's q/k/v) are inferred from the tensors present; the buffers (sinusoid
    tables) are not loaded but recomputed in float32, as the references use them."""
    tensors, meta = stio.read(path)
    cfg = json.loads(meta["attnviz_config"])
    tensors = {k.replace(".ln.", ".layer_norm."): v for k, v in tensors.items()}  # docs allow ".ln."
    fam, model_name = family_and_model(cfg)
    overrides = {}
    if (fam, model_name) in (("nlp-tutorial", "Transformer"), ("wq-tutorial", "Translation"),
                             ("wq-tutorial", "GPTModel")):
        overrides["projection_bias"] = "projection.bias" in tensors
    if fam == "nlp-tutorial":
        overrides["layer_norm"] = any(k.endswith("layer_norm.weight") for k in tensors)
    if fam == "my-transformer":
        names = "\n".join(tensors)
        overrides["qkv"] = ("separate" if "q_proj_weight" in names else
                            "separate-linear" if "q_proj.weight" in names else "fused")
    model = model_from_config(cfg, **overrides)
    buffers = set(k for k, _ in model.named_buffers())
    sd = {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in tensors.items() if k not in buffers}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if k not in buffers]
    if missing or unexpected:
        raise ValueError("load_model: missing %s, unexpected %s" % (missing, unexpected))
    return model.eval()
