"""Writes the seed corpus of the loader fuzzer (tests/fuzz/corpus/): a few tiny valid models of each
family (made with the PyTorch reference models, so the tensor names are the real ones) and broken
variants of them, each a few KB, plus a few config JSON texts (the fuzzer also tries its input as a
config), nanoGPT meta.pkl files (good, and pickles that call os.system or build an object of the
script's class) and tokenizer.json files (byte-level, SentencePiece-style, an unsupported Split):
the fuzzer tries its input as those too. Deterministic: running it again gives the same bytes.

usage: /usr/bin/python3 tools/make_fuzz_corpus.py [OUT_DIR]   (default tests/fuzz/corpus)
"""
import json
import os
import struct
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_models as rm  # noqa: E402

SRC = ["P", "ich", "bier", "cola"]
TGT = ["P", "S", "E", "beer", "coke"]


def _models():
    torch.manual_seed(1234)
    yield "nlp_f32", "F32", rm.NlpTutorialTransformer(
        SRC, TGT, d_model=4, d_ff=8, d_k=2, d_v=2, n_heads=2, n_encoder_layers=1, n_decoder_layers=1,
        max_len=6, name="fuzz nlp")
    yield "nlp_variants_f16", "F16", rm.NlpTutorialTransformer(
        SRC, TGT, d_model=4, d_ff=6, d_k=3, d_v=1, n_heads=2, n_encoder_layers=1, n_decoder_layers=1,
        layer_norm=True, bias=True, projection_bias=True, activation="gelu", positional="learned",
        max_len=5, unk_id=0)
    yield "seed003_bf16", "BF16", rm.Seed003Translation(
        SRC, TGT, d_model=4, d_ff=4, d_k=2, d_v=2, n_heads=2, n_layers=1, src_pad_id=0, tgt_pad_id=0,
        max_len=4)
    yield "torch_pre_f32", "F32", rm.TorchSeq2Seq(
        SRC, TGT, d_model=4, n_heads=2, d_ff=4, n_encoder_layers=1, n_decoder_layers=1,
        pad_id=0, bos_id=1, eos_id=2, activation="gelu", norm_first=True, max_len=4)


def _split(data):
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def _join(header, buf, text=None, pad=True):
    h = (text if text is not None else json.dumps(header, separators=(",", ":"))).encode("utf-8")
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + buf


def _with_config(header, buf, change):
    header = json.loads(json.dumps(header))
    cfg = json.loads(header["__metadata__"]["attnviz_config"])
    change(cfg)
    header["__metadata__"]["attnviz_config"] = json.dumps(cfg, separators=(",", ":"))
    return _join(header, buf)


def _last_tensor(header):
    return max((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][0])


def _broken(name, data):
    header, buf = _split(data)
    last = _last_tensor(header)
    out = {}
    out["truncated"] = data[:-7]
    out["trailing"] = data + b"\0" * 4
    out["unaligned"] = _join(header, buf, pad=False) if len(json.dumps(header, separators=(",", ":"))) % 8 else \
        _join(header, buf, json.dumps(header, separators=(",", ":")) + " ", pad=False)
    h = json.loads(json.dumps(header))
    h[last]["dtype"] = "Q4"
    out["unknown_dtype"] = _join(h, buf)
    h = json.loads(json.dumps(header))
    h[last]["shape"] = [4294967296, 4294967296, 4]
    out["overflow"] = _join(h, buf)
    h = json.loads(json.dumps(header))
    b, e = h[last]["data_offsets"]
    h[last]["data_offsets"] = [b - 4, e - 4]
    out["overlap"] = _join(h, buf[:-4])
    text = json.dumps(header, separators=(",", ":"))
    out["duplicate"] = _join(None, buf, '{"%s":%s,%s' % (last, json.dumps(header[last]), text[1:]))
    out["bad_ids"] = _with_config(header, buf, lambda c: c.update(bos_id=99, pad_id=-1))
    out["bad_sizes"] = _with_config(header, buf, lambda c: c.update(d_model=0, n_encoder_layers=10 ** 9))
    nan = bytearray(buf)
    nan[0:4] = struct.pack("<f", float("nan"))
    out["nan"] = _join(header, bytes(nan))
    return {name + "." + k: v for k, v in out.items()}


class Stoi(dict):
    """A class of the script: pickling it writes GLOBAL __main__.Stoi (inert bytes here)."""


Stoi.__module__ = "__main__"  # the same bytes however the script is run


def _vocabulary_seeds():
    import pickle
    chars = sorted(set("First Citizen:\nBefore we proceed any further, hear me speak.\n"))
    meta = {"vocab_size": len(chars), "itos": dict(enumerate(chars)),
            "stoi": {c: i for i, c in enumerate(chars)}}
    out = {"meta_good.pkl": pickle.dumps(meta, protocol=4),
           "meta_good_p2.pkl": pickle.dumps(meta, protocol=2),
           # os.system("echo pwned"): GLOBAL + REDUCE, as a malicious pickle writes them
           "meta_os_system.pkl": b"\x80\x02cos\nsystem\nX\x0a\x00\x00\x00echo pwned\x85R.",
           "meta_class.pkl": pickle.dumps(dict(meta, stoi=Stoi(meta["stoi"])), protocol=4)}
    byte_chars = {}
    extra = 0
    for b in range(256):
        printable = 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE
        byte_chars[b] = chr(b) if printable else chr(256 + extra)
        extra += 0 if printable else 1
    vocab = {c: i for i, c in enumerate(byte_chars[b] for b in range(256))}
    for a, b in [("h", "e"), ("l", "l"), ("he", "ll"), ("\u0120", "w")]:
        vocab.setdefault(a + b, len(vocab))
    bytelevel = {"added_tokens": [{"id": len(vocab), "content": "<|endoftext|>", "special": True}],
                 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                     {"type": "Digits", "individual_digits": True},
                     {"type": "ByteLevel", "add_prefix_space": False}]},
                 "decoder": {"type": "ByteLevel"},
                 "model": {"type": "BPE", "vocab": vocab, "merges": ["h e", "l l", "he ll", "\u0120 w"]}}
    pieces = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        pieces["<0x%02X>" % b] = len(pieces)
    for t in ["\u2581", "a", "b", "ab", "\u2581a"]:
        pieces[t] = len(pieces)
    metaspace = {"added_tokens": [{"id": i, "content": t, "special": True} for t, i in list(pieces.items())[:3]],
                 "normalizer": {"type": "Sequence", "normalizers": [
                     {"type": "Prepend", "prepend": "\u2581"},
                     {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
                 "post_processor": {"type": "TemplateProcessing", "single": [
                     {"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                     "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
                 "decoder": {"type": "Sequence", "decoders": [
                     {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                     {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
                 "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True,
                           "vocab": pieces, "merges": [["a", "b"], ["\u2581", "a"]]}}
    split = dict(bytelevel, pre_tokenizer={"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Isolated"})
    dump = lambda t: json.dumps(t, ensure_ascii=False, sort_keys=True).encode("utf-8")
    out["tokenizer_bytelevel.json"] = dump(bytelevel)
    out["tokenizer_metaspace.json"] = dump(metaspace)
    out["tokenizer_split.json"] = dump(split)
    return out


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fuzz", "corpus")
    os.makedirs(out_dir, exist_ok=True)
    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, dtype, model) in enumerate(_models()):
            rm.init_for_reference_(model, 777 + i)
            path = os.path.join(tmp, name + ".safetensors")
            rm.save_model(model, path, dtype)
            with open(path, "rb") as f:
                data = f.read()
            files[name + ".safetensors"] = data
            if i < 2:  # broken variants of two of them keep the corpus small
                files.update({k + ".safetensors": v for k, v in _broken(name, data).items()})
            if i == 0:
                cfg = json.loads(_split(data)[0]["__metadata__"]["attnviz_config"])
                files["config_valid.json"] = json.dumps(cfg).encode()
                cfg.update(eos_id=5, src_vocab=["P", "ich", "ich"])
                files["config_bad.json"] = json.dumps(cfg).encode()
                # The modern parts' switches: rotary positions, grouped-query attention, RMSNorm,
                # a gated feed-forward; and the same with a rotary base of 0 and key/value heads
                # that do not divide the heads.
                modern = json.loads(files["config_valid.json"])
                modern.update(positional="rotary", rope_theta=10000.0, rope_layout="halves",
                              n_kv_heads=1, norm_kind="rmsnorm", gated_ffn=True, activation="silu")
                files["config_modern.json"] = json.dumps(modern).encode()
                modern.update(rope_theta=0, n_kv_heads=3)
                files["config_modern_bad.json"] = json.dumps(modern).encode()
    files.update(_vocabulary_seeds())
    files["header_deep.safetensors"] = _join(None, b"", "[" * 200)
    files["short.safetensors"] = b"\x08\0\0\0"
    for name, data in sorted(files.items()):
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
    print("wrote %d files, %d bytes, to %s" % (len(files), sum(map(len, files.values())), out_dir))


if __name__ == "__main__":
    main()
