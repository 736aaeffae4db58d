"""Reference tokenizers, in Python, that attnviz's C++ tokenizers (core/text) are compared with.
Written after the public algorithms, not after the C++:

- ``BertReference``: Hugging Face transformers' BertTokenizer (tokenization_bert.py and
  tokenization_utils.py's tokenize()): special tokens split off, the BasicTokenizer (clean text,
  CJK split, lower case and accent stripping, punctuation split) and the greedy WordpieceTokenizer.
  Unicode from Python's unicodedata and str.
- ``FastReference``: the pipeline of Hugging Face's tokenizers library as a tokenizer.json
  describes it (added tokens, normalizers Prepend/Replace/Strip, pre-tokenizers ByteLevel/
  Metaspace/Digits/WhitespaceSplit, the BPE model with byte fallback and unk fusing, the
  TemplateProcessing post-processor), after the Rust sources (pre_tokenizers/*.rs,
  models/bpe/model.rs): merges applied as GPT-2's encoder.py applies them (every occurrence of the
  lowest-ranked pair, left to right).
- ``gpt2_encode``: OpenAI's GPT-2 encoder.py on encoder.json + vocab.bpe (python3-regex for \\p{L}).
- ``llama_converter``: a tokenizer.json made from a SentencePiece BPE model the way transformers'
  convert_slow_tokenizer.py (LlamaConverter, SentencePieceExtractor) makes one.
"""
import json
import unicodedata

import regex

GPT2_PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def byte_chars():
    """GPT-2's bytes_to_unicode: the printable Latin-1 bytes stand for themselves, the rest for 256+."""
    keep = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


BYTE_CHARS = byte_chars()
CHAR_BYTES = {c: b for b, c in BYTE_CHARS.items()}


def merge_by_rank(word, ranks):
    """GPT-2's bpe(): the adjacent pair of lowest rank, every occurrence left to right, until none
    has a rank. `word`: list of symbols (strings); `ranks`: (a, b) -> rank."""
    word = list(word)
    while len(word) > 1:
        best = None
        for a, b in zip(word, word[1:]):
            r = ranks.get((a, b))
            if r is not None and (best is None or r < best[0]):
                best = (r, a, b)
        if best is None:
            break
        _, first, second = best
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and word[i] == first and word[i + 1] == second:
                out.append(first + second)
                i += 2
            else:
                out.append(word[i])
                i += 1
        word = out
    return word


def learn_merges(counts, n_merges):
    """Byte-pair encoding's training: `counts` maps words (tuples of symbols) to how often they
    occur; each step merges the most frequent adjacent pair (ties: the smaller pair by its
    spelling) everywhere. Returns the merges in rank order."""
    merges, words = [], dict(counts)
    for _ in range(n_merges):
        pairs = {}
        for w, n in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + n
        if not pairs:
            break
        best = min(pairs, key=lambda ab: (-pairs[ab], ab))
        merges.append(best)
        new = {}
        for w, n in words.items():
            out = tuple(merge_by_rank(list(w), {best: 0}))
            new[out] = new.get(out, 0) + n
        words = new
    return merges


# ---- GPT-2 (OpenAI's encoder.py) ----

def load_gpt2(encoder_json, vocab_bpe):
    with open(encoder_json, encoding="utf-8") as f:
        encoder = json.load(f)
    with open(vocab_bpe, encoding="utf-8") as f:
        lines = f.read().split("\n")
    merges = [tuple(line.split()) for line in lines[1:-1]]
    ranks = dict(zip(merges, range(len(merges))))
    return encoder, ranks


def gpt2_encode(encoder, ranks, text):
    ids = []
    for piece in GPT2_PATTERN.findall(text):
        word = [BYTE_CHARS[b] for b in piece.encode("utf-8")]
        ids.extend(encoder[s] for s in merge_by_rank(word, ranks))
    return ids


# ---- BERT (transformers' BertTokenizer) ----

def _bert_whitespace(c):
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def _bert_control(c):
    if c in "\t\n\r":
        return False
    return unicodedata.category(c).startswith("C")


def _bert_punctuation(c):
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def _cjk(cp):
    return any(a <= cp <= b for a, b in [
        (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)])


class BertReference:
    def __init__(self, vocab, do_lower_case=True, strip_accents=None, tokenize_chinese_chars=True,
                 unk="[UNK]", sep="[SEP]", pad="[PAD]", cls="[CLS]", mask="[MASK]"):
        self.vocab = {t: i for i, t in enumerate(vocab)}
        self.lower = do_lower_case
        self.strip = do_lower_case if strip_accents is None else strip_accents
        self.chinese = tokenize_chinese_chars
        self.unk, self.sep, self.cls = unk, sep, cls
        self.specials = [t for t in (unk, sep, pad, cls, mask) if t in self.vocab]

    # BasicTokenizer
    def basic(self, text):
        cleaned = []
        for c in text:
            if ord(c) == 0 or ord(c) == 0xFFFD or _bert_control(c):
                continue
            cleaned.append(" " if _bert_whitespace(c) else c)
        text = "".join(cleaned)
        if self.chinese:
            text = "".join(" %s " % c if _cjk(ord(c)) else c for c in text)
        out = []
        for token in text.strip().split():
            if self.lower:
                token = token.lower()
            if self.strip:
                token = "".join(c for c in unicodedata.normalize("NFD", token)
                                if unicodedata.category(c) != "Mn")
            word = []
            for c in token:
                if _bert_punctuation(c):
                    if word:
                        out.append("".join(word))
                        word = []
                    out.append(c)
                else:
                    word.append(c)
            if word:
                out.append("".join(word))
        return " ".join(out).strip().split()

    # WordpieceTokenizer
    def wordpiece(self, word):
        if len(word) > 100:
            return [self.unk]
        pieces, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                sub = word[start:end]
                if start > 0:
                    sub = "##" + sub
                if sub in self.vocab:
                    found = sub
                    break
                end -= 1
            if found is None:
                return [self.unk]
            pieces.append(found)
            start = end
        return pieces

    def prelower(self, text):
        """tokenize()'s first step: with do_lower_case each character outside a special token is
        lowercased alone (re.sub of "(specials)|(.+?)"; "." does not match a newline)."""
        if not self.lower:
            return text
        out, i = [], 0
        while i < len(text):
            hit = next((s for s in self.specials if text.startswith(s, i)), None)
            if hit:
                out.append(hit)
                i += len(hit)
            else:
                out.append(text[i] if text[i] == "\n" else text[i].lower())
                i += 1
        return "".join(out)

    def tokens(self, text):
        # tokenize(): lowercased character by character, then the special tokens split off.
        text = self.prelower(text)
        result, chunk, i = [], [], 0
        while i < len(text):
            hits = [s for s in self.specials if text.startswith(s, i)]
            if hits:
                hit = max(hits, key=len)
                result.extend(self._chunk("".join(chunk)))
                chunk = []
                result.append(hit)
                i += len(hit)
            else:
                chunk.append(text[i])
                i += 1
        result.extend(self._chunk("".join(chunk)))
        return result

    def _chunk(self, text):
        return [p for w in self.basic(text) for p in self.wordpiece(w)]

    def encode(self, text):
        return [self.vocab[self.cls]] + [self.vocab[t] for t in self.tokens(text)] + [self.vocab[self.sep]]


# ---- Hugging Face tokenizers' pipeline from a tokenizer.json ----

def _rust_whitespace(c):
    # char::is_whitespace: the White_Space property
    return c in "\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" or 0x2000 <= ord(c) <= 0x200A


def _flatten(component, key):
    if component is None:
        return []
    if component.get("type") == "Sequence":
        return [x for c in component[key] for x in _flatten(c, key)]
    return [component]


class FastReference:
    def __init__(self, tok):
        model = tok["model"]
        assert model.get("type", "BPE") == "BPE"
        self.vocab = dict(model["vocab"])
        self.added = {}
        for a in tok.get("added_tokens") or []:
            self.added[a["content"]] = a
            self.vocab.setdefault(a["content"], a["id"])
        self.unk = model.get("unk_token")
        self.fuse_unk = model.get("fuse_unk") or False
        self.byte_fallback = model.get("byte_fallback") or False
        self.ignore_merges = model.get("ignore_merges") or False
        self.prefix = model.get("continuing_subword_prefix") or ""
        self.suffix = model.get("end_of_word_suffix") or ""
        self.ranks = {}
        for rank, m in enumerate(model["merges"]):
            a, b = m.split(" ") if isinstance(m, str) else m
            self.ranks[(a, b)] = rank
        self.normalizers = _flatten(tok.get("normalizer"), "normalizers")
        self.pre_tokenizers = _flatten(tok.get("pre_tokenizer"), "pretokenizers")
        self.prefix_ids, self.suffix_ids = [], []
        for p in _flatten(tok.get("post_processor"), "processors"):
            if p["type"] == "TemplateProcessing":
                seen = False
                for item in p["single"]:
                    if "Sequence" in item:
                        seen = True
                    else:
                        ids = p["special_tokens"][item["SpecialToken"]["id"]]["ids"]
                        (self.suffix_ids if seen else self.prefix_ids).extend(ids)

    def _normalize(self, s):
        for n in self.normalizers:
            t = n["type"]
            if t == "Prepend":
                s = n["prepend"] + s if s else s
            elif t == "Replace":
                s = s.replace(n["pattern"]["String"], n["content"])
            elif t == "Strip":
                if n.get("strip_left", True):
                    while s and _rust_whitespace(s[0]):
                        s = s[1:]
                if n.get("strip_right", True):
                    while s and _rust_whitespace(s[-1]):
                        s = s[:-1]
            else:
                raise ValueError(t)
        return s

    def _pre_tokenize(self, pieces):
        # pieces: list of (text, begins the typed text)
        for p in self.pre_tokenizers:
            t = p["type"]
            out = []
            for s, first in pieces:
                if t == "ByteLevel":
                    if p.get("add_prefix_space", True) and not s.startswith(" "):
                        s = " " + s
                    parts = GPT2_PATTERN.findall(s) if p.get("use_regex", True) else [s]
                    for k, part in enumerate(parts):
                        out.append(("".join(BYTE_CHARS[b] for b in part.encode("utf-8")), first and k == 0))
                elif t == "Metaspace":
                    rep = p.get("replacement", "\u2581")
                    scheme = p.get("prepend_scheme", "always")
                    if p.get("add_prefix_space") is False:
                        scheme = "never"
                    s = s.replace(" ", rep)
                    if not s.startswith(rep) and (scheme == "always" or (scheme == "first" and first)):
                        s = rep + s
                    if not p.get("split", True):
                        out.append((s, first))
                        continue
                    cur, k = "", 0
                    for c in s:  # MergedWithNext: each replacement begins a piece
                        if c == rep and cur:
                            out.append((cur, first and k == 0))
                            k += 1
                            cur = ""
                        cur += c
                    if cur:
                        out.append((cur, first and k == 0))
                elif t == "Digits":
                    runs = []
                    for c in s:
                        d = unicodedata.category(c).startswith("N")
                        if runs and not (d and p.get("individual_digits")) and runs[-1][1] == d:
                            runs[-1][0] += c
                        else:
                            runs.append([c, d])
                    out.extend((r, first and k == 0) for k, (r, _) in enumerate(runs))
                elif t == "WhitespaceSplit":
                    words = "".join(" " if _rust_whitespace(c) else c for c in s).split(" ")
                    out.extend((w, first and k == 0) for k, w in enumerate(x for x in words if x))
                else:
                    raise ValueError(t)
            pieces = out
        return pieces

    def _model(self, piece):
        if not piece:
            return []
        if self.ignore_merges and piece in self.vocab:
            return [self.vocab[piece]]
        symbols = []  # strings in the vocabulary, or ids of unk / byte tokens (ints)
        unk_open = False
        for k, c in enumerate(piece):
            s = (self.prefix if k > 0 else "") + c + (self.suffix if k == len(piece) - 1 else "")
            if s in self.vocab:
                symbols.append(s)
                unk_open = False
                continue
            if self.byte_fallback:
                names = ["<0x%02X>" % b for b in c.encode("utf-8")]
                if all(n in self.vocab for n in names):
                    symbols.extend(names)
                    unk_open = False
                    continue
            if self.unk is None:
                raise KeyError(c)
            if not (self.fuse_unk and unk_open):
                symbols.append(self.unk)
            unk_open = True
        merged = merge_by_rank(symbols, self.ranks)
        return [self.vocab[s] for s in merged]

    def encode(self, text, suffix=True):
        ids = list(self.prefix_ids)
        # Added tokens: leftmost, longest.
        segments, i, start = [], 0, 0
        while i < len(text):
            hits = [a for a in self.added if text.startswith(a, i)]
            if not hits:
                i += 1
                continue
            hit = max(hits, key=len)
            before = text[start:i]
            if self.added[hit].get("lstrip"):
                before = before.rstrip()
            segments.append((before, start, None))
            segments.append((hit, i, self.added[hit]["id"]))
            i += len(hit)
            if self.added[hit].get("rstrip"):
                while i < len(text) and text[i] in " \t\n\r":
                    i += 1
            start = i
        segments.append((text[start:], start, None))
        for s, offset, added in segments:
            if added is not None:
                ids.append(added)
                continue
            if not s:
                continue
            for piece, _ in self._pre_tokenize([(self._normalize(s), offset == 0)]):
                ids.extend(self._model(piece))
        if suffix:
            ids.extend(self.suffix_ids)
        return ids


# ---- a tokenizer.json from a SentencePiece BPE model (transformers' LlamaConverter) ----

def llama_converter(sp, form):
    """`sp`: a SentencePieceProcessor of a BPE model with byte fallback; form "legacy" (Prepend +
    Replace normalizer, as LlamaTokenizerFast wrote them until transformers 4.38) or "metaspace"
    (a Metaspace pre-tokenizer, prepend_scheme "first", split false: legacy=False)."""
    n = sp.get_piece_size()
    vocab = {sp.id_to_piece(i): i for i in range(n)}
    scores = {sp.id_to_piece(i): sp.get_score(i) for i in range(n)}
    merges = []
    for piece in vocab:  # SentencePieceExtractor: every split of a piece into two pieces
        local = []
        for k in range(1, len(piece)):
            left, right = piece[:k], piece[k:]
            if left in vocab and right in vocab:
                local.append((left, right, scores[piece]))
        local.sort(key=lambda x: (vocab[x[0]], vocab[x[1]]))
        merges.extend(local)
    merges.sort(key=lambda x: x[2], reverse=True)  # by the merged piece's score, stable
    special = lambda i: {"id": i, "content": sp.id_to_piece(i), "single_word": False, "lstrip": False,
                         "rstrip": False, "normalized": False, "special": True}
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [special(0), special(1), special(2)],
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}},
        },
        "model": {
            "type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
            "vocab": vocab,
            "merges": [[a, b] for a, b, _ in merges] if form == "metaspace" else ["%s %s" % (a, b) for a, b, _ in merges],
        },
    }
    if form == "legacy":
        tok["normalizer"] = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
        tok["pre_tokenizer"] = None
        tok["decoder"] = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    else:
        tok["normalizer"] = None
        tok["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
                                "split": False}
        tok["decoder"] = {"type": "Sequence", "decoders": [
            {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False},
            {"type": "ByteFallback"}, {"type": "Fuse"}]}
    return tok
