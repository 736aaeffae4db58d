"""Writes the seed corpus of the loader fuzzer (tests/fuzz/corpus/): a few tiny valid models of each
family (made with the PyTorch reference models, so the tensor names are the real ones) and broken
variants of them, each a few KB, plus a few config JSON texts (the fuzzer also tries its input as a
config). Deterministic: running it again gives the same bytes.

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
    files["header_deep.safetensors"] = _join(None, b"", "[" * 200)
    files["short.safetensors"] = b"\x08\0\0\0"
    for name, data in sorted(files.items()):
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
    print("wrote %d files, %d bytes, to %s" % (len(files), sum(map(len, files.values())), out_dir))


if __name__ == "__main__":
    main()
