"""Hugging Face transformers as the judge: small random-weight models built with transformers
(GPT2LMHeadModel, BertForMaskedLM, LlamaForCausalLM with grouped-query attention, MarianMTModel,
BartForConditionalGeneration, T5ForConditionalGeneration as Flan-T5: gated-gelu, untied), saved with save_pretrained (and their tokenizers where the library
builds one offline), run by `attnviz-cli run FOLDER --backend cpu|cuda --dump`, and every layer's and
head's attention probabilities and the logits compared with what transformers returned
(attn_implementation="eager", output_attentions=True), at the tolerances of tests/test_parity.cpp
(tools/compare_dump.py: probabilities 1e-5 absolute, logits 1e-4 relative to max(|ref|, 1)). Where
a tokenizer was saved, attnviz's ids for a few sentences (tokens.json of `run --src/--tgt TEXT
--dump`) are compared with the Hugging Face tokenizer's.

The inputs: decoder-only rows are not padded (attnviz's GPT-2 and Llama take no padding mask);
BERT's second row is a sentence pair (segment ids 0 and 1) and its first is padded with [PAD];
Marian's, BART's and T5's second rows are padded with the pad id on both sides (attention_mask and
decoder_attention_mask to transformers; the decoder's start token, Marian's and T5's pad id, is
kept).

--stand-in: the same pipeline without transformers (this machine, PyTorch 1.13): the folders and
reference tensors come from our own models of those classes, tools/hf_decoder_models.py (written by
tools/make_tutorial_checkpoints.py), tools/hf_reference_models.py and tools/hf_t5_models.py
(tools/make_hf_references.py),
of which only the probabilities and the logits are kept, as transformers gives them.

usage: python3 tools/hf_judge.py --cli PATH/attnviz-cli [--backends cpu,cuda] [--out DIR]
                                 [--work DIR] [--models gpt2,bert,llama,marian,bart,t5] [--stand-in]
Prints a table model x tensor x backend -> max error, PASS/FAIL, and writes OUT/hf-judge.json.
exit: 0 everything matched; 1 a mismatch, a failed model or CLI run; 77 transformers (or PyTorch)
is not installed here (the line "unavailable: ..." says why); 2 usage.
"""
import argparse
import json
import os
import sys
import tempfile
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_dump as cd  # noqa: E402

MODELS = ("gpt2", "bert", "llama", "marian", "bart", "t5")
UNAVAILABLE = 77
SEED = 27
ROW_KEYS = (("src_ids", "--src-ids"), ("segment_ids", "--segment-ids"), ("tgt_ids", "--tgt-ids"))

# The sentences each tokenizer is asked to split (ASCII, punctuation, accents, an emoji).
BYTE_TEXTS = ["the cat sat on the mat.", "Hello world! it's 123, isn't it?", "naïve café 🙂"]
BERT_TEXTS = ["The cat sat on the mat.", "a dog, runs in the park?", "Unknown wörds éverywhere"]
MARIAN_TEXTS = ["the cat sees a dog .", "the elephant dances slowly", "Café naïve 🙂 !"]


class Case:
    """One model to judge: its save_pretrained folder, the rows it runs (dicts of src_ids /
    segment_ids / tgt_ids), the reference tensors (KIND.probs [B, L, H, Tq, Tk], logits [B, T, V])
    and the tokenizer checks: [{"text", "args": CLI options, "expect": {"src_ids"/"tgt_ids": ids}}]."""

    def __init__(self, name, hf_class):
        self.name, self.hf_class = name, hf_class
        self.folder = None
        self.rows, self.ref, self.tokenize = [], {}, []
        self.tokenize_skipped = None  # why there is no tokenizer check
        self.notes = []


def _probs_and_logits(ref):
    """What transformers returns of a reference: the probabilities and the logits."""
    return {k: v for k, v in ref.items() if k.endswith(".probs") or k == "logits"}


def _seq2seq_samples(texts, start):
    """Tokenizer checks of an encoder-decoder: texts [{"text", "src_ids", "tgt_ids"}] with the
    target's ids after the start token and without the end token (attnviz's --tgt TEXT)."""
    return [{"text": t["text"], "args": ["--src", t["text"], "--tgt", t["text"]],
             "expect": {"src_ids": t["src_ids"], "tgt_ids": [start] + list(t["tgt_ids"])}} for t in texts]


# ---- the stand-in: our own reference models of those classes (PyTorch 1.13, no transformers) ----

def stand_in_case(name, work):
    import stio
    import make_hf_references as mhr
    import make_tutorial_checkpoints as mtc

    classes = {"gpt2": "GPT2LMHeadModel", "bert": "BertForMaskedLM", "llama": "LlamaForCausalLM",
               "marian": "MarianMTModel", "bart": "BartForConditionalGeneration",
               "t5": "T5ForConditionalGeneration"}
    case = Case(name, classes[name] + " (stand-in)")
    if name in ("marian", "bart", "t5"):
        mhr.make_case("t5_gated" if name == "t5" else name, work)
        if name == "t5":
            os.replace(os.path.join(work, "t5_gated"), os.path.join(work, name))
            os.replace(os.path.join(work, "t5_gated.ref.safetensors"), os.path.join(work, name + ".ref.safetensors"))
        models = "tools/hf_t5_models.py" if name == "t5" else "tools/hf_reference_models.py"
        case.notes.append(models + ", folder and inputs of tools/make_hf_references.py")
    else:
        {"gpt2": mtc.hf_gpt2, "bert": mtc.hf_bert, "llama": mtc.hf_llama}[name](work, name)
        case.notes.append("tools/hf_decoder_models.py, folder and inputs of tools/make_tutorial_checkpoints.py")
    case.folder = os.path.join(work, name)
    if name == "gpt2":
        # A byte-level vocabulary spells the letters S, E and P (nlp-tutorial's start, end and pad
        # markers): as GPT-2's does, three tokens of the stand-in's are those letters.
        path = os.path.join(case.folder, "vocab.json")
        with open(path) as f:
            vocab = json.load(f)
        for old, new in (("t5", "S"), ("t6", "E"), ("t7", "P")):
            vocab[new] = vocab.pop(old)
        with open(path, "w") as f:
            json.dump(vocab, f)
        case.notes.append("vocab.json spells S, E and P (ids 5-7), as a byte-level vocabulary does")
    if name == "bert":
        # As transformers 5 saves it: model.safetensors without the MLM decoder's weight, which
        # is tied to the word embeddings (and so left out), nor its bias (the same tensor as
        # cls.predictions.bias).
        import torch
        old_file = os.path.join(case.folder, "pytorch_model.bin")
        state = torch.load(old_file)
        os.remove(old_file)
        kept = {k: v for k, v in state.items()
                if k not in ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")}
        stio.write(os.path.join(case.folder, "model.safetensors"), kept, {"format": "pt"})
        case.notes.append("model.safetensors without cls.predictions.decoder.*, as transformers 5 saves it")
    if name == "llama":
        # config.json as transformers 5 writes it: the rotary base inside rope_parameters.
        path = os.path.join(case.folder, "config.json")
        with open(path) as f:
            config = json.load(f)
        config.pop("rope_scaling", None)
        config["rope_parameters"] = {"rope_type": "default", "rope_theta": config.pop("rope_theta")}
        with open(path, "w") as f:
            json.dump(config, f, indent=2, sort_keys=True)
        case.notes.append("config.json rewritten as transformers 5 writes it: %s" % config["rope_parameters"])
    ref, meta = stio.read(os.path.join(work, name + ".ref.safetensors"))
    inputs = json.loads(meta["inputs"])
    n = len(inputs.get("src_ids") or inputs["tgt_ids"])
    case.rows = [{k: inputs[k][b] for k, _ in ROW_KEYS if k in inputs} for b in range(n)]
    case.ref = _probs_and_logits(ref)
    if "tokenize" in inputs:
        with open(os.path.join(case.folder, "config.json")) as f:
            start = json.load(f)["decoder_start_token_id"]
        case.tokenize = _seq2seq_samples(inputs["tokenize"], start)
    else:
        case.tokenize_skipped = "the stand-in folder's vocabulary has no Python tokenizer to compare with"
    return case


# ---- transformers: the real judge (transformers 5; kept apart, each step checked) ----

def _tiny_corpus():
    import make_hf_references as mhr
    return mhr.EN, mhr.DE


def _randomize_(model, seed, emb_std=1.0, frozen=()):
    """Deterministic random weights that make every parameter matter and attention peaked: norms'
    weights 1 + N(0, 0.2²) and biases N(0, 0.1²), other biases N(0, 0.1²), embeddings N(0, emb_std²)
    (positions N(0, 0.5²)), other matrices N(0, 1/fan_in) (queries and keys ×1.6; GPT-2's Conv1D
    stores [in, out]), final_logits_bias N(0, 0.5²). Parameters named in `frozen` (Marian's sinusoid)
    and those without gradient are left as the library made them."""
    import torch

    g = torch.Generator().manual_seed(seed)
    modules = dict(model.named_modules())
    with torch.no_grad():
        for name, p in model.named_parameters():  # tied parameters appear once
            if not p.requires_grad or any(f in name for f in frozen):
                continue
            parent = name.rsplit(".", 1)[0]
            leaf = name.rsplit(".", 1)[-1]
            module = modules.get(parent)
            short = parent.rsplit(".", 1)[-1].lower()
            if "norm" in short or short.startswith("ln_"):
                std = 0.1 if leaf == "bias" else 0.2
                p.copy_((0.0 if leaf == "bias" else 1.0) + std * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif isinstance(module, torch.nn.Embedding):
                std = 0.5 if ("position" in name or short == "wpe") else emb_std
                p.copy_(std * torch.randn(p.shape, generator=g))
            else:
                fan_in = p.shape[0] if type(module).__name__ == "Conv1D" else p.shape[1]
                gain = 1.6 if short in ("q_proj", "k_proj", "query", "key", "c_attn") else 1.0
                p.copy_(gain / fan_in ** 0.5 * torch.randn(p.shape, generator=g))
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.copy_(0.5 * torch.randn(model.final_logits_bias.shape, generator=g))


def _hf_model(model_class, config, seed, **init):
    """model_class(config) with eager attention, float32, random weights, eval mode."""
    import torch
    import transformers

    torch.manual_seed(seed)
    cls = getattr(transformers, model_class)
    try:
        model = cls._from_config(config, attn_implementation="eager")
    except (TypeError, AttributeError):  # an older signature
        config._attn_implementation = "eager"
        model = cls(config)
    if getattr(model.config, "_attn_implementation", None) != "eager" and hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")
    impl = getattr(model.config, "_attn_implementation", None)
    if impl != "eager":
        raise RuntimeError("the attention implementation is %r, not eager" % impl)
    model = model.to(torch.float32).eval()
    _randomize_(model, seed, **init)
    try:
        model.tie_weights()  # the tied copies share what was drawn, whichever the library keeps
    except Exception as e:  # noqa: BLE001 - _reference() finds out whether the folder kept them
        print("note: tie_weights() failed: %s" % _one_line(e))
    return model


def _save_and_reload(case, model, folder):
    """save_pretrained(folder), then the model as from_pretrained reads it back (eager, float32):
    the reference is what the library itself makes of the folder attnviz reads."""
    import torch

    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder)
    files = sorted(os.listdir(folder))
    if not any(f in files for f in ("model.safetensors", "pytorch_model.bin")):
        raise RuntimeError("save_pretrained wrote no model.safetensors: %s" % files)
    case.notes.append("save_pretrained wrote %s" % files)
    loaded, info = type(model).from_pretrained(folder, attn_implementation="eager", output_loading_info=True)
    if getattr(loaded.config, "_attn_implementation", None) != "eager":
        raise RuntimeError("from_pretrained gave attention %r, not eager" % loaded.config._attn_implementation)
    lost = {k: sorted(map(str, v)) for k, v in info.items() if v}
    if lost:
        case.notes.append("from_pretrained: %s" % lost)
    return loaded.to(torch.float32).eval()


def _reference(case, model, **inputs):
    """The reference tensors of the model reloaded from its folder (what attnviz reads too); the
    model in memory should agree, else the folder lost something (noted)."""
    loaded = _save_and_reload(case, model, case.folder)
    ref = _forward(loaded, **inputs)
    diff = float(np.abs(_forward(model, **inputs)["logits"] - ref["logits"]).max())
    case.notes.append("logits in memory vs reloaded from the folder: max difference %.3g%s"
                      % (diff, "" if diff <= 1e-6 else " (SAVED FOLDER DIFFERS; the reference is the reloaded model)"))
    return ref


def _forward(model, **kw):
    """The model's reference tensors: every kind of attention's probabilities and the logits."""
    import torch

    with torch.no_grad():
        out = model(**{k: torch.tensor(v) for k, v in kw.items()}, output_attentions=True)
    ref = {"logits": out.logits.float().numpy()}
    kinds = {"enc_self": "encoder_attentions", "dec_self": "decoder_attentions", "cross": "cross_attentions"}
    if getattr(model.config, "is_encoder_decoder", False):
        present = kinds
    else:
        present = {"enc_self" if model.config.model_type == "bert" else "dec_self": "attentions"}
    for kind, field in present.items():
        layers = getattr(out, field, None)
        if not layers or any(a is None for a in layers):
            raise RuntimeError("transformers returned no %s with output_attentions=True" % field)
        ref[kind + ".probs"] = torch.stack(list(layers), dim=1).float().numpy()  # [B, L, H, Tq, Tk]
    return ref


def _ids(tok, text, **kw):
    return [int(i) for i in tok(text, **kw)["input_ids"]]


def _hf_tokenizer(case, make, texts, expect):
    """Builds the Hugging Face tokenizer with make(), saves it into the folder and records
    expect(tok, text) for each text; a tokenizer the library cannot build offline is noted."""
    try:
        tok = make()
    except Exception as e:  # noqa: BLE001 - the library's own failure, reported
        case.tokenize_skipped = "the library could not build the tokenizer offline: %s" % _one_line(e)
        return
    try:
        tok.save_pretrained(case.folder)
        case.notes.append("tokenizer %s saved: %s" % (type(tok).__name__, sorted(os.listdir(case.folder))))
    except Exception as e:  # noqa: BLE001
        case.notes.append("tokenizer %s not saved (%s)" % (type(tok).__name__, _one_line(e)))
    case.tokenize = [expect(tok, t) for t in texts]


def _byte_bpe(extra_first, n_merges):
    """A byte-level BPE learned from the corpus: (vocab token -> id, merges), the special tokens
    first."""
    import hf_tokenizers as ht

    merges = ht.train_bpe(_tiny_corpus()[0], n_merges)
    tokens = list(extra_first) + [ht.BYTE_CHARS[b] for b in range(256)]
    for a, b in merges:
        if a + b not in tokens:
            tokens.append(a + b)
    return {t: i for i, t in enumerate(tokens)}, merges


def _write_gpt2_files(folder, vocab, merges):
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join("%s %s\n" % m for m in merges))


def _auto_tokenizer(folder, fallback):
    import transformers

    try:
        return transformers.AutoTokenizer.from_pretrained(folder)
    except Exception:  # noqa: BLE001 - then the class itself, from the files
        return fallback()


def hf_gpt2(case, work, rng):
    import transformers

    vocab, merges = _byte_bpe([], 100)
    vocab["<|endoftext|>"] = len(vocab)
    V, eot = len(vocab), len(vocab) - 1
    config = transformers.GPT2Config(vocab_size=V, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                                     layer_norm_epsilon=1e-5, activation_function="gelu_new",
                                     bos_token_id=eot, eos_token_id=eot)
    model = _hf_model("GPT2LMHeadModel", config, SEED)
    ids = rng.randint(0, V, size=(2, 9)).tolist()
    case.rows = [{"tgt_ids": r} for r in ids]
    case.ref = _reference(case, model, input_ids=ids, attention_mask=np.ones((2, 9), dtype=np.int64).tolist())
    _write_gpt2_files(case.folder, vocab, merges)
    files = [os.path.join(case.folder, f) for f in ("vocab.json", "merges.txt")]
    _hf_tokenizer(case, lambda: _auto_tokenizer(case.folder, lambda: transformers.GPT2Tokenizer(*files)),
                  BYTE_TEXTS, lambda tok, t: {"text": t, "args": ["--tgt", t], "expect": {"tgt_ids": _ids(tok, t)}})


def hf_bert(case, work, rng):
    import transformers

    words = sorted({w for s in _tiny_corpus()[0] for w in s.split() if w.isalpha()})
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(".,?!'") + letters + \
        ["##" + c for c in letters] + [w for w in words if len(w) > 1]
    V = len(tokens)
    config = transformers.BertConfig(vocab_size=V, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, max_position_embeddings=64, type_vocab_size=2,
                                     layer_norm_eps=1e-12, pad_token_id=0, hidden_act="gelu")
    model = _hf_model("BertForMaskedLM", config, SEED + 1)
    w = rng.randint(5, V, size=(2, 6)).tolist()
    ids = [[2] + w[0][:4] + [3, 0, 0], [2] + w[1][:3] + [3] + w[1][3:5] + [3]]  # padded; a pair
    seg = [[0] * 8, [0] * 5 + [1] * 3]
    case.rows = [{"src_ids": i, "segment_ids": s} for i, s in zip(ids, seg)]
    keep = (np.array(ids) != 0).astype(np.int64).tolist()
    case.ref = _reference(case, model, input_ids=ids, token_type_ids=seg, attention_mask=keep)
    with open(os.path.join(case.folder, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in tokens))
    vocab_txt = os.path.join(case.folder, "vocab.txt")
    _hf_tokenizer(case, lambda: _auto_tokenizer(case.folder, lambda: transformers.BertTokenizer(vocab_txt)),
                  BERT_TEXTS, lambda tok, t: {"text": t, "args": ["--src", t], "expect": {"src_ids": _ids(tok, t)}})


def hf_llama(case, work, rng):
    import transformers

    vocab, merges = _byte_bpe(["<unk>", "<s>", "</s>"], 100)
    V = len(vocab)
    sizes = dict(vocab_size=V, hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, rms_norm_eps=1e-5, max_position_embeddings=64,
                 tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, hidden_act="silu")
    try:  # transformers 5: the rotary base inside rope_parameters
        config = transformers.LlamaConfig(**sizes, rope_parameters={"rope_type": "default", "rope_theta": 100000.0})
    except TypeError:
        config = transformers.LlamaConfig(**sizes, rope_theta=100000.0)
    model = _hf_model("LlamaForCausalLM", config, SEED + 2)
    ids = [[1] + r for r in rng.randint(3, V, size=(2, 8)).tolist()]
    case.rows = [{"tgt_ids": r} for r in ids]
    case.ref = _reference(case, model, input_ids=ids, attention_mask=np.ones((2, 9), dtype=np.int64).tolist())
    with open(os.path.join(case.folder, "config.json")) as f:
        saved = json.load(f)
    case.notes.append("config.json's rotary keys: %s" % {k: saved[k] for k in saved if "rope" in k})

    def make():
        # The tokenizers library's in-memory byte-level BPE (SmolLM's kind), <s> prepended.
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

        tk = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m) for m in merges], unk_token="<unk>"))
        tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tk.decoder = decoders.ByteLevel()
        tk.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                          special_tokens=[("<s>", 1)])
        tk.add_special_tokens(["<unk>", "<s>", "</s>"])
        tk.save(os.path.join(case.folder, "tokenizer.json"))
        try:  # transformers' wrapper of it (PreTrainedTokenizerFast, TokenizersBackend in 5)
            fast = getattr(transformers, "PreTrainedTokenizerFast", None) or transformers.TokenizersBackend
            return fast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
        except Exception as e:  # noqa: BLE001 - then the tokenizers library itself
            case.notes.append("no transformers wrapper (%s): the tokenizers library's ids" % _one_line(e))
            return _RawTokenizer(tk)

    _hf_tokenizer(case, make, BYTE_TEXTS,
                  lambda tok, t: {"text": t, "args": ["--tgt", t], "expect": {"tgt_ids": _ids(tok, t)}})


class _RawTokenizer:
    """The tokenizers library's Tokenizer called as transformers' tokenizers are; its
    tokenizer.json is in the folder already."""

    def __init__(self, tk):
        self.tk = tk

    def __call__(self, text):
        return {"input_ids": self.tk.encode(text).ids}

    def save_pretrained(self, folder):
        pass


def _seq2seq_rows(rng, first, last, eos, start, src_prefix=(), tgt_prefix=()):
    """Two rows of source and target ids, the second shorter (padded later): source = prefix +
    random ids in [first, last) + end, target = start + prefix + random ids."""
    src = [list(src_prefix) + rng.randint(first, last, size=n).tolist() + [eos] for n in (6, 4)]
    tgt = [[start] + list(tgt_prefix) + rng.randint(first, last, size=n).tolist() for n in (5, 3)]
    return src, tgt


def _pad_rows(rows, pad):
    n = max(len(r) for r in rows)
    return [r + [pad] * (n - len(r)) for r in rows]


def _seq2seq_forward(case, model, src, tgt, pad):
    src_b, tgt_b = _pad_rows(src, pad), _pad_rows(tgt, pad)
    case.rows = [{"src_ids": s, "tgt_ids": t} for s, t in zip(src_b, tgt_b)]
    src_keep = (np.array(src_b) != pad).astype(np.int64)
    tgt_keep = (np.array(tgt_b) != pad).astype(np.int64)
    tgt_keep[:, 0] = 1  # the start token (Marian's is the pad id)
    case.ref = _reference(case, model, input_ids=src_b, attention_mask=src_keep.tolist(), decoder_input_ids=tgt_b,
                          decoder_attention_mask=tgt_keep.tolist())


def hf_marian(case, work, rng):
    import transformers
    import hf_tokenizers as ht
    import make_hf_references as mhr

    en, de = _tiny_corpus()
    src_spm, tgt_spm = ht.train_spm(en, 48), ht.train_spm(de, 56)
    vocab = mhr.marian_vocab(src_spm, tgt_spm)
    V, pad = len(vocab), len(vocab) - 1
    config = transformers.MarianConfig(
        vocab_size=V, decoder_vocab_size=V, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
        activation_function="swish", max_position_embeddings=64, scale_embedding=True, pad_token_id=pad,
        eos_token_id=0, decoder_start_token_id=pad, share_encoder_decoder_embeddings=True)
    model = _hf_model("MarianMTModel", config, SEED + 3, emb_std=64 ** -0.5, frozen=("embed_positions",))
    src, tgt = _seq2seq_rows(rng, 2, pad, 0, pad)
    _seq2seq_forward(case, model, src, tgt, pad)
    for name, data in (("source.spm", src_spm), ("target.spm", tgt_spm)):
        with open(os.path.join(case.folder, name), "wb") as f:
            f.write(data)
    with open(os.path.join(case.folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)

    def expect(tok, t):
        tgt_ids = _ids(tok, None, text_target=t)
        return {"text": t, "args": ["--src", t, "--tgt", t],
                "expect": {"src_ids": _ids(tok, t), "tgt_ids": [pad] + tgt_ids[:-1 if tgt_ids[-1:] == [0] else None]}}

    files = {k: os.path.join(case.folder, f) for k, f in
             (("source_spm", "source.spm"), ("target_spm", "target.spm"), ("vocab", "vocab.json"))}
    _hf_tokenizer(case, lambda: _auto_tokenizer(case.folder, lambda: transformers.MarianTokenizer(**files)),
                  MARIAN_TEXTS, expect)


def hf_bart(case, work, rng):
    import transformers
    import hf_tokenizers as ht
    import make_hf_references as mhr

    merges = ht.train_bpe(_tiny_corpus()[0], 60)
    vocab = mhr.bart_vocab(merges)
    V = len(vocab)
    config = transformers.BartConfig(
        vocab_size=V, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, activation_function="gelu",
        max_position_embeddings=64, scale_embedding=False, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        decoder_start_token_id=2)
    model = _hf_model("BartForConditionalGeneration", config, SEED + 4)
    # <s> … </s> as BART's tokenizer wraps a source; the target after the start token </s> begins
    # with <s> too (random ids below <mask>, the last).
    src, tgt = _seq2seq_rows(rng, 4, V - 1, 2, 2, src_prefix=[0], tgt_prefix=[0])
    _seq2seq_forward(case, model, src, tgt, 1)
    _write_gpt2_files(case.folder, vocab, merges)

    def expect(tok, t):
        ids = _ids(tok, t)
        return {"text": t, "args": ["--src", t, "--tgt", t],
                "expect": {"src_ids": ids, "tgt_ids": [2] + ids[:-1 if ids[-1:] == [2] else None]}}

    files = [os.path.join(case.folder, f) for f in ("vocab.json", "merges.txt")]
    _hf_tokenizer(case, lambda: _auto_tokenizer(case.folder, lambda: transformers.BartTokenizer(*files)),
                  BYTE_TEXTS, expect)


def hf_t5(case, work, rng):
    """Flan-T5 / T5 v1.1: gated-gelu, lm_head untied, relative position bias with few buckets over
    short distances (the logarithmic buckets reached), spiece.model trained on the corpus."""
    import transformers
    import hf_tokenizers as ht

    en, de = _tiny_corpus()
    spm_bytes = ht.train_t5_spm(en + de, 60)
    pieces = ht.T5Tokenizer(spm_bytes).sp.get_piece_size()
    V = pieces + 100  # T5Tokenizer's extra ids
    config = transformers.T5Config(
        vocab_size=V, d_model=64, d_kv=16, d_ff=96, num_layers=2, num_decoder_layers=2, num_heads=4,
        relative_attention_num_buckets=8, relative_attention_max_distance=10, feed_forward_proj="gated-gelu",
        tie_word_embeddings=False, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    model = _hf_model("T5ForConditionalGeneration", config, SEED + 5)
    src, tgt = _seq2seq_rows(rng, 3, pieces, 1, 0)
    _seq2seq_forward(case, model, src, tgt, 0)
    with open(os.path.join(case.folder, "spiece.model"), "wb") as f:
        f.write(spm_bytes)

    def expect(tok, t):
        tgt_ids = _ids(tok, None, text_target=t)
        return {"text": t, "args": ["--src", t, "--tgt", t],
                "expect": {"src_ids": _ids(tok, t), "tgt_ids": [0] + tgt_ids[:-1 if tgt_ids[-1:] == [1] else None]}}

    spiece = os.path.join(case.folder, "spiece.model")
    _hf_tokenizer(case, lambda: transformers.T5Tokenizer(spiece), MARIAN_TEXTS, expect)


HF_BUILDERS = {"gpt2": ("GPT2LMHeadModel", hf_gpt2), "bert": ("BertForMaskedLM", hf_bert),
               "llama": ("LlamaForCausalLM", hf_llama), "marian": ("MarianMTModel", hf_marian),
               "bart": ("BartForConditionalGeneration", hf_bart),
               "t5": ("T5ForConditionalGeneration", hf_t5)}


def transformers_case(name, work):
    hf_class, build = HF_BUILDERS[name]
    case = Case(name, hf_class)
    case.folder = os.path.join(work, name)
    os.makedirs(case.folder, exist_ok=True)
    build(case, work, np.random.RandomState(SEED))
    return case


# ---- attnviz against the reference ----

def _one_line(e):
    return " ".join(str(e).split())[:400]


class Report:
    def __init__(self):
        self.rows = []  # dicts: model, tensor, backend, error, tolerance, result, detail

    def add(self, model, tensor, backend, result, error=None, tolerance=None, detail=""):
        self.rows.append({"model": model, "tensor": tensor, "backend": backend, "error": error,
                          "tolerance": tolerance, "result": result, "detail": detail})
        print("%s %s %s %s%s" % (result, model, tensor, backend, (": " + detail) if detail else ""))
        sys.stdout.flush()


def judge_case(case, cli, backends, work, report):
    """Every row through `attnviz-cli run --dump` on each backend; the max error per tensor."""
    tensors = [k for k in ("enc_self.probs", "dec_self.probs", "cross.probs", "logits") if k in case.ref]
    for backend in backends:
        worst = {t: 0.0 for t in tensors}
        problems = {t: [] for t in tensors}
        other = []
        for b, row in enumerate(case.rows):
            out = os.path.join(work, "dump-%s-%s-b%d" % (case.name, backend, b))
            cmd = [cli, "run", case.folder, "--backend", backend, "--dump", out]
            for key, option in ROW_KEYS:
                if key in row:
                    cmd += [option, cd.ids_arg(row[key])]
            rc, output = cd.run_cli(cmd, timeout=120)
            if rc:
                other.append("row %d: %s exited with %d: %s" % (b, " ".join(cmd[1:3]), rc, output.strip()[-600:]))
                continue
            for p in cd.compare_dump(out, case.ref, b):
                # "KIND probs differ …", "KIND_probs.npy is missing", "logits differ …", "logits.npy …"
                t = next((t for t in tensors if any(p.startswith(t.split(".")[0] + c) for c in (" ", "_probs", "."))),
                         None)
                (problems[t] if t else other).append("row %d: %s" % (b, p))
            for t in tensors:
                path = os.path.join(out, t.replace(".", "_") + ".npy")  # KIND_probs.npy, logits.npy
                want = case.ref[t][b]
                if not os.path.exists(path):
                    continue
                got = np.load(path)
                if got.shape != want.shape:
                    worst[t] = float("inf")
                    continue
                err = cd.worst_absolute(got, want)[0] if t != "logits" else cd.worst_relative(got, want)[0]
                worst[t] = max(worst[t], err)
        for t in tensors:
            tol = cd.PROB_TOL if t != "logits" else cd.REL_TOL
            bad = problems[t] + other
            label = t.replace(".probs", " probs")
            report.add(case.name, label, backend, "FAIL" if bad or worst[t] > tol else "PASS",
                       None if other else worst[t], tol, "; ".join(bad)[:1500])
    judge_tokenizer(case, cli, work, report)


def judge_tokenizer(case, cli, work, report):
    if not case.tokenize:
        report.add(case.name, "tokenizer ids", "cpu", "SKIP", detail=case.tokenize_skipped or "no tokenizer")
        return
    wrong = []
    for i, s in enumerate(case.tokenize):
        out = os.path.join(work, "tok-%s-%d" % (case.name, i))
        rc, output = cd.run_cli([cli, "run", case.folder, "--backend", "cpu", "--dump", out] + s["args"], timeout=120)
        if rc:
            wrong.append("%r: attnviz-cli exited with %d: %s" % (s["text"], rc, output.strip()[-400:]))
            continue
        with open(os.path.join(out, "tokens.json"), encoding="utf-8") as f:
            got = json.load(f)
        for key, want in s["expect"].items():
            ids = got.get(key)
            if isinstance(ids, list) and len(ids) == 1 and isinstance(ids[0], list):
                ids = ids[0]  # tokens.json holds a batch of one row
            if ids != want:
                wrong.append("%r %s: attnviz %s, Hugging Face %s" % (s["text"], key, ids, want))
    report.add(case.name, "tokenizer ids", "cpu", "FAIL" if wrong else "PASS", len(wrong), 0,
               "; ".join(wrong)[:1500] if wrong else "%d sentences" % len(case.tokenize))


def print_table(report):
    print()
    print("%-8s %-16s %-7s %12s %10s  %s" % ("model", "tensor", "backend", "max error", "tolerance", "result"))
    for r in report.rows:
        err = "-" if r["error"] is None else ("%d wrong" % r["error"] if r["tensor"] == "tokenizer ids"
                                              else "%.3g" % r["error"])
        tol = "-" if r["tolerance"] is None else ("exact" if r["tensor"] == "tokenizer ids" else "%g" % r["tolerance"])
        print("%-8s %-16s %-7s %12s %10s  %s" % (r["model"], r["tensor"], r["backend"], err, tol, r["result"]))


def versions(stand_in):
    import torch

    v = {"python": sys.version.split()[0], "numpy": np.__version__, "torch": torch.__version__}
    if not stand_in:
        import transformers

        v["transformers"] = transformers.__version__
        for m in ("tokenizers", "sentencepiece", "safetensors"):
            try:
                v[m] = __import__(m).__version__
            except Exception as e:  # noqa: BLE001
                v[m] = "not importable: %s" % _one_line(e)
    return v


def run(args, work):
    stand_in = args.stand_in
    # Everything is built here: no look-up on the Hub (the GPU machine has no network, and a
    # look-up could wait for its timeout).
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
        os.environ.setdefault(key, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import torch  # noqa: F401

        if not stand_in:
            import transformers  # noqa: F401
    except ImportError as e:
        why = ("unavailable: %s is not installed here (%s); the judge needs PyTorch and Hugging Face "
               "transformers (--stand-in: PyTorch only)" % (e.name or "a module", _one_line(e)))
        print(why)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "hf-judge.json"), "w", encoding="utf-8") as f:
                json.dump({"mode": "stand-in" if stand_in else "transformers", "skipped": why}, f, indent=1)
                f.write("\n")
        return UNAVAILABLE
    import torch

    torch.set_num_threads(min(4, os.cpu_count() or 1))
    started = time.time()
    print("versions: %s" % versions(stand_in))
    report, cases = Report(), {}
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        print("unknown model %s; the judge builds %s" % (", ".join(unknown), ", ".join(MODELS)))
        return 2
    backends = [b for b in args.backends.split(",") if b]
    for name in models:
        t0 = time.time()
        try:
            case = stand_in_case(name, work) if stand_in else transformers_case(name, work)
        except Exception as e:  # noqa: BLE001 - one model's failure is reported, the others go on
            traceback.print_exc()
            report.add(name, "build", "-", "FAIL", detail="building the reference failed: %s" % _one_line(e))
            continue
        cases[name] = case
        for n in case.notes:
            print("note %s: %s" % (name, n))
        judge_case(case, args.cli, backends, work, report)
        print("(%s: %.1f s)" % (name, time.time() - t0))
    print_table(report)
    failed = sum(r["result"] == "FAIL" for r in report.rows)
    passed = sum(r["result"] == "PASS" for r in report.rows)
    print("%d passed, %d failed, %d skipped (%.1f s%s)" % (passed, failed, len(report.rows) - passed - failed,
                                                           time.time() - started, ", stand-in" if stand_in else ""))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        doc = {"mode": "stand-in" if stand_in else "transformers", "versions": versions(stand_in),
               "backends": backends, "tolerances": {"probs_absolute": cd.PROB_TOL, "logits_relative": cd.REL_TOL},
               "models": {n: {"class": c.hf_class, "notes": c.notes, "rows": c.rows,
                              "tokenize": c.tokenize, "tokenize_skipped": c.tokenize_skipped}
                          for n, c in cases.items()},
               "results": report.rows}
        with open(os.path.join(args.out, "hf-judge.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False, default=float)
            f.write("\n")
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", required=True, help="the attnviz-cli to judge")
    p.add_argument("--backends", default="cpu,cuda", help="comma-separated: cpu, cuda")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--out", help="folder for hf-judge.json")
    p.add_argument("--work", help="folder for the models and dumps (default: a temporary one)")
    p.add_argument("--stand-in", action="store_true",
                   help="our own reference models instead of transformers (PyTorch 1.13 is enough)")
    args = p.parse_args()
    if not os.access(args.cli, os.X_OK):
        print("%s is not an executable attnviz-cli" % args.cli)
        return 2
    if args.work:
        os.makedirs(args.work, exist_ok=True)
        return run(args, os.path.abspath(args.work))
    with tempfile.TemporaryDirectory(prefix="attnviz-hf-judge-") as work:
        return run(args, work)


if __name__ == "__main__":
    sys.exit(main())
