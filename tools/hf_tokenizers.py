"""The tokenizers of attnviz's Hugging Face test folders, in Python, as the references its C++ tokenizers
are compared with:

- Marian: SentencePiece (python3-sentencepiece) for each side, pieces mapped to ids through vocab.json
  (a piece not in it -> <unk>), </s> appended to the source; ``train_spm`` trains a tiny model
  deterministically.
- BART: GPT-2's byte-level BPE: text split by GPT-2's pattern (python3-regex for \\p{L} and \\p{N}),
  bytes spelled as printable characters, merges applied by rank; ``train_bpe`` learns a few merges from
  a corpus (most frequent pair first, ties by the pair's spelling).
"""
import io
import os
import sys

import regex

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenizer_references import learn_merges, merge_by_rank  # noqa: E402

GPT2_PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    """GPT-2's table: printable Latin-1 bytes stand for themselves, the other bytes for 256, 257, ..."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


BYTE_CHARS = bytes_to_unicode()


def pretokenize(text):
    return GPT2_PATTERN.findall(text)


def _spell(piece):
    return [BYTE_CHARS[b] for b in piece.encode("utf-8")]


def bpe(piece, ranks):
    """The merges applied to one pre-tokenized piece: the pair of lowest rank, every occurrence, until
    no pair has a rank."""
    return merge_by_rank(_spell(piece), ranks)


def train_bpe(sentences, n_merges):
    """Learns n_merges merges from the sentences' pre-tokenized pieces: the most frequent adjacent pair
    first (ties: the smaller pair by its spelling)."""
    counts = {}
    for s in sentences:
        for p in pretokenize(s):
            key = tuple(_spell(p))
            counts[key] = counts.get(key, 0) + 1
    return learn_merges(counts, n_merges)


class BartTokenizer:
    """vocab: token -> id; merges: list of (a, b) in rank order. encode() wraps in <s> ... </s>."""

    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.ranks = {m: i for i, m in enumerate(merges)}

    def pieces(self, text):
        return [sym for p in pretokenize(text) for sym in bpe(p, self.ranks)]

    def ids(self, text):
        unk = self.vocab["<unk>"]
        return [self.vocab.get(sym, unk) for sym in self.pieces(text)]

    def encode_source(self, text):
        return [self.vocab["<s>"]] + self.ids(text) + [self.vocab["</s>"]]

    def encode_target(self, text):
        return [self.vocab["<s>"]] + self.ids(text)


def train_spm(sentences, vocab_size):
    """A tiny unigram SentencePiece model (its serialized bytes), trained deterministically on one
    thread."""
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=model, vocab_size=vocab_size,
                                   model_type="unigram", num_threads=1, character_coverage=1.0,
                                   hard_vocab_limit=False, minloglevel=2)
    return model.getvalue()


class MarianTokenizer:
    """source/target: serialized SentencePiece models; vocab: token -> id (vocab.json)."""

    def __init__(self, source_spm, target_spm, vocab):
        import sentencepiece as spm

        self.src = spm.SentencePieceProcessor(model_proto=source_spm)
        self.tgt = spm.SentencePieceProcessor(model_proto=target_spm)
        self.vocab = vocab

    def _ids(self, sp, text):
        unk = self.vocab["<unk>"]
        return [self.vocab.get(p, unk) for p in sp.encode(text, out_type=str)]

    def encode_source(self, text):
        return self._ids(self.src, text) + [self.vocab["</s>"]]

    def encode_target(self, text):
        return self._ids(self.tgt, text)

    def decode_source(self, ids):
        """The text of source ids (</s> and <pad> dropped), decoded by the source SentencePiece model."""
        tokens = {i: t for t, i in self.vocab.items()}
        return self.src.decode_pieces([tokens[i] for i in ids if tokens[i] not in ("</s>", "<pad>")])


def train_t5_spm(sentences, vocab_size):
    """A tiny unigram SentencePiece model laid out as T5's spiece.model: <pad> 0, </s> 1, <unk> 2, no
    <s> (its serialized bytes), trained deterministically on one thread."""
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=model, vocab_size=vocab_size,
                                   model_type="unigram", num_threads=1, character_coverage=1.0,
                                   hard_vocab_limit=False, minloglevel=2, pad_id=0, eos_id=1, unk_id=2,
                                   bos_id=-1)
    return model.getvalue()


class T5Tokenizer:
    """T5Tokenizer's ids for plain text: the SentencePiece pieces' own ids, </s> appended to the source
    (not to a target prefix); the extra ids <extra_id_N> follow the pieces, <extra_id_0> last."""

    def __init__(self, spm_bytes, eos_id=1):
        import sentencepiece as spm

        self.sp = spm.SentencePieceProcessor(model_proto=spm_bytes)
        self.eos_id = eos_id

    def encode_source(self, text):
        return list(self.sp.encode(text)) + [self.eos_id]

    def encode_target(self, text):
        return list(self.sp.encode(text))

    def decode(self, ids):
        return self.sp.decode([i for i in ids if i < self.sp.get_piece_size()])
