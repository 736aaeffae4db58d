"""Write PyTorch checkpoints with torch.save, and what they hold, for tests/test_checkpoint.cpp.

For every case NAME this writes NAME.pt (a torch.save file) and NAME.expected.safetensors: for each
tensor the C++ reader must find, its values as raw little-endian bytes in its own dtype (tensor
"NAME", U8, flattened) and, for float dtypes, as float32 computed by PyTorch (tensor "NAME::float");
__metadata__["expected"] is JSON: {"layout", "key_path", "model_class", "tensors": [[name, dtype,
shape, stride, storage_offset, storage_group], ...]} in state_dict order, where tensors with the same
storage_group share one storage in the file.

With --corpus it writes instead the fuzzer's seed corpus: tiny checkpoints of every format and
shape, and their data.pkl alone (the fuzzer also reads its input as a bare pickle), and hostile_*.pt:
files torch.load refuses, which attnviz must refuse too.

usage: /usr/bin/python3 tools/make_checkpoints.py --out DIR
       /usr/bin/python3 tools/make_checkpoints.py --corpus --out tests/fuzz/checkpoint_corpus
           [--only namespace_args,...]
"""
import argparse
import collections
import json
import os
import sys
import zipfile

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402

# safetensors spellings, as attnviz's DType names them
DTYPE_NAMES = {
    torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}
FLOATS = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


# ---- a small module tree: nested modules, a ModuleList, buffers (float, int64, non-persistent),
# a parameter shared by two modules, a bias=False parameter (None in _parameters) ----

class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.W_Q = nn.Linear(d, d)
        self.W_K = nn.Linear(d, d, bias=False)


class EncoderLayer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.enc_self_attn = Attention(d)
        self.norm = nn.LayerNorm(d)
        self.register_buffer("scale", torch.tensor([0.5, 2.0]))
        self.register_buffer("scratch", torch.zeros(3), persistent=False)  # not in the state_dict


class Encoder(nn.Module):
    def __init__(self, vocab, d, layers):
        super().__init__()
        self.src_emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([EncoderLayer(d) for _ in range(layers)])
        self.register_buffer("position_ids", torch.arange(5))  # int64


class TinyModel(nn.Module):
    def __init__(self, vocab=7, d=4, layers=2):
        super().__init__()
        self.encoder = Encoder(vocab, d, layers)
        self.bn = nn.BatchNorm1d(d)  # running stats and an int64 num_batches_tracked
        self.projection = nn.Linear(d, vocab, bias=False)
        self.projection.weight = self.encoder.src_emb.weight  # tied
        self.activation = nn.GELU()  # a module without parameters

    def forward(self, x):
        return self.projection(self.bn(self.encoder.src_emb(x).mean(1)))


def make_model(**kw):
    torch.manual_seed(7)
    m = TinyModel(**kw)
    with torch.no_grad():
        m.bn.running_mean.uniform_(-1, 1)
        m.bn.running_var.uniform_(0.5, 2)
        m.bn.num_batches_tracked.fill_(11)
    return m


def trained_optimizer(model):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss = model(torch.tensor([[1, 2, 3], [4, 5, 6]])).square().mean()
    loss.backward()
    opt.step()
    return opt


def dtype_tensors():
    torch.manual_seed(3)
    f = torch.tensor([[1.0, -2.5, 0.1, 65504.0], [1e-7, -0.0, 3.14159, -1e4]])
    return collections.OrderedDict([
        ("f32", torch.randn(3, 5)),
        ("f16", torch.tensor([1.0, -2.0, 0.333, 65504.0, 6e-8, -0.0, float("inf"), -float("inf")],
                             dtype=torch.float16)),
        ("bf16", f.to(torch.bfloat16)),
        ("f64", torch.tensor([[1.0 / 3, -1e300], [2.5e-310, 7.0]], dtype=torch.float64)),
        ("i64", torch.tensor([0, -1, 2**40, -(2**62), 2**63 - 1])),
        ("i32", torch.tensor([[7, -8], [2**31 - 1, -(2**31)]], dtype=torch.int32)),
        ("i16", torch.tensor([-32768, 32767, 5], dtype=torch.int16)),
        ("i8", torch.tensor([-128, 127, 0, 1], dtype=torch.int8)),
        ("u8", torch.tensor([0, 255, 17], dtype=torch.uint8)),
        ("bool", torch.tensor([True, False, True])),
        ("f32_scalar", torch.tensor(2.5)),
    ])


def view_tensors():
    torch.manual_seed(5)
    base = torch.randn(4, 6)
    shared = torch.arange(10, dtype=torch.float32) * 0.5
    cube = torch.randn(2, 3, 4)
    return collections.OrderedDict([
        ("base", base),
        ("transposed", base.t()),                  # stride (1, 6), same storage as base
        ("slice", base[1:3, 2:]),                  # storage offset 8, stride (6, 1)
        ("every_other", base[::2, ::3]),           # stride (12, 3)
        ("shared_a", shared),
        ("shared_b", shared[2:5]),                 # offset 2 in shared_a's storage
        ("expanded", torch.arange(3.0).expand(4, 3)),  # stride (0, 1)
        ("permuted", cube.permute(2, 0, 1)),       # stride (1, 12, 4)
        ("row", cube[1, 2]),                       # offset 20, one row
        ("empty", torch.zeros(0, 3)),
        ("half_view", torch.randn(3, 4).half().t()),  # a non-contiguous F16 view
    ])


# ---- writing ----

def expected(path, tensors, layout, key_path=(), model_class=""):
    """tensors: ordered name → tensor, as the reader must report them."""
    groups = {}
    rows, out = [], {}
    for name, t in tensors.items():
        t = t.detach()
        ptr = t.storage().data_ptr()
        group = groups.setdefault(ptr, len(groups))
        rows.append([name, DTYPE_NAMES[t.dtype], list(t.shape), list(t.stride()), t.storage_offset(),
                     group])
        flat = t.contiguous().reshape(-1)
        out[name] = flat.view(torch.uint8) if t.dtype != torch.bool else flat.to(torch.uint8)
        if t.dtype in FLOATS:
            out[name + "::float"] = t.float().contiguous()
    meta = {"layout": layout, "key_path": list(key_path), "model_class": model_class, "tensors": rows}
    stio.write(path, out, {"expected": json.dumps(meta)})


def save(out, name, obj, legacy=False, protocol=2):
    path = os.path.join(out, name + ".pt")
    torch.save(obj, path, _use_new_zipfile_serialization=not legacy, pickle_protocol=protocol)
    return path


def write_cases(out):
    model = make_model()
    sd = model.state_dict()
    cases = []

    def case(name, obj, exp, layout, key_path=(), model_class="", **kw):
        save(out, name, obj, **kw)
        expected(os.path.join(out, name + ".expected.safetensors"), exp, layout, key_path,
                 model_class)
        cases.append(name)

    case("state_dict", sd, sd, "state_dict")
    case("state_dict_legacy", sd, sd, "state_dict", legacy=True)
    case("state_dict_protocol4", sd, sd, "state_dict", protocol=4)
    case("state_dict_protocol5", sd, sd, "state_dict", protocol=5)
    opt = trained_optimizer(make_model())
    case("checkpoint_model", {"model": sd, "optimizer": opt.state_dict(), "epoch": 3}, sd,
         "checkpoint dict", ["model"])
    case("checkpoint_model_state_dict",
         {"epoch": 3, "model_state_dict": sd, "optimizer_state_dict": opt.state_dict(),
          "loss": 0.25, "history": [1.5, 0.75, None, (1, "a")]},
         sd, "checkpoint dict", ["model_state_dict"])
    case("checkpoint_nested", {"hparams": {"lr": 0.1}, "state": {"net": sd, "steps": 100}}, sd,
         "checkpoint dict", ["state", "net"])
    case("checkpoint_legacy", {"state_dict": sd, "epoch": 1}, sd, "checkpoint dict", ["state_dict"],
         legacy=True)
    cls = "__main__.TinyModel"
    case("whole_model", model, sd, "whole model", model_class=cls)
    case("whole_model_legacy", model, sd, "whole model", model_class=cls, legacy=True)
    case("whole_model_protocol4", model, sd, "whole model", model_class=cls, protocol=4)
    case("whole_model_in_dict", {"epoch": 2, "model": model}, sd, "whole model", ["model"], cls)
    dt = dtype_tensors()
    case("dtypes", dt, dt, "state_dict")
    case("dtypes_legacy", dt, dt, "state_dict", legacy=True)
    views = view_tensors()
    case("views", views, views, "state_dict")
    case("views_legacy", views, views, "state_dict", legacy=True)
    case("views_protocol4", views, views, "state_dict", protocol=4)
    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("\n".join(cases) + "\n")


def write_corpus(out, only=None):
    """Tiny files for the fuzzer: every format and shape, plus each zip's data.pkl alone (only the
    seeds named in `only`, when given)."""
    model = make_model(vocab=3, d=2, layers=1)
    sd = model.state_dict()
    small = collections.OrderedDict(
        [("w", torch.tensor([[1.0, 2.0], [3.0, 4.0]])), ("b", torch.tensor([0.5], dtype=torch.float16))])
    views = view_tensors()
    items = [
        ("state_dict", small, {}), ("state_dict_legacy", small, {"legacy": True}),
        ("state_dict_p4", small, {"protocol": 4}), ("model_sd", sd, {}),
        ("checkpoint", {"model": small, "optimizer": {"state": {}, "param_groups": [{"lr": 0.1}]},
                        "epoch": 3}, {}),
        ("whole_model", model, {}),
        ("views", collections.OrderedDict([(k, views[k]) for k in ("transposed", "shared_b",
                                                                   "expanded", "empty")]), {}),
        ("dtypes", dtype_tensors(), {}),
    ]
    # train.py checkpoints of nanoGPT and llama2.c (a dict with model_args), and model_args of the
    # wrong types, for the arch layer's reading of them.
    nano = collections.OrderedDict(
        [("_orig_mod.transformer.wte.weight", torch.ones(3, 2)),
         ("_orig_mod.transformer.h.0.attn.c_attn.weight", torch.ones(6, 2)),
         ("_orig_mod.transformer.h.0.attn.bias", torch.ones(1, 1, 2, 2))])
    nano_args = {"n_layer": 1, "n_head": 2, "n_embd": 2, "block_size": 2, "bias": False,
                 "vocab_size": 3, "dropout": 0.0}
    items.append(("nanogpt_ckpt", {"model": nano, "model_args": nano_args, "iter_num": 5,
                                   "best_val_loss": torch.tensor(1.5), "config": {"compile": True}}, {}))
    items.append(("nanogpt_bad_args", {"model": nano, "model_args": dict(nano_args, n_head="2", bias=None,
                                                                         block_size=2.5)}, {}))
    llama = collections.OrderedDict(
        [("tok_embeddings.weight", torch.ones(3, 4)), ("layers.0.attention.wq.weight", torch.ones(4, 4)),
         ("layers.0.attention.wk.weight", torch.ones(2, 4))])
    items.append(("llama2c_ckpt", {"model": llama, "model_args": {
        "dim": 4, "n_layers": 1, "n_heads": 2, "n_kv_heads": 1, "vocab_size": 3, "multiple_of": 4,
        "max_seq_len": 8, "norm_eps": float("nan")}}, {}))
    # A training script's settings as argparse.Namespace beside the state_dict: read as a dict.
    items.append(("namespace_args", {"model": small, "args": argparse.Namespace(
        lr=0.001, batch_size=32, name="tiny", layers=[2, 2], compile=False, seed=None), "epoch": 3},
        {}))
    for name, obj, kw in items:
        if only and name not in only:
            continue
        path = save(out, name, obj, **kw)
        if not kw.get("legacy"):
            with zipfile.ZipFile(path) as z:
                pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
                with open(os.path.join(out, name + ".data.pkl"), "wb") as f:
                    f.write(z.read(pkl))
    if not only:
        write_hostile_seeds(out)


def _rewrite_zip(src, dst, change):
    """Copies the zip `src` to `dst`, each entry's bytes passed through change(name, data)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            zout.writestr(info, change(info.filename, zin.read(info.filename)))


def _replace_once(data, old, new):
    assert data.count(old) == 1, (old, data.count(old))
    return data.replace(old, new)


def _binunicode(text):
    return b"X" + len(text).to_bytes(4, "little") + text


def write_hostile_seeds(out):
    """What torch.load refuses and attnviz must refuse too (tests/test_hostile_checkpoint.cpp):
    a dict key that is a list, a storage key that is a path, a format version newer than PyTorch's.
    Made from the state_dict seed, byte for byte."""
    src = os.path.join(out, "state_dict.pt")
    seeds = {
        "hostile_list_key": lambda n, d: _replace_once(d, _binunicode(b"w"), b"]")
        if n.endswith("/data.pkl") else d,
        "hostile_path_key": lambda n, d: _replace_once(
            d, _binunicode(b"0"), _binunicode(b"../" * 2 + b"passwd")) if n.endswith("/data.pkl") else d,
        "hostile_version": lambda n, d: b"99\n" if n.endswith("/version") else d,
    }
    for name, change in seeds.items():
        path = os.path.join(out, name + ".pt")
        _rewrite_zip(src, path, change)
        with zipfile.ZipFile(path) as z:
            pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
            if name != "hostile_version":
                with open(os.path.join(out, name + ".data.pkl"), "wb") as f:
                    f.write(z.read(pkl))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--corpus", action="store_true")
    ap.add_argument("--only", help="with --corpus: the seeds to write, by name (comma-separated)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.corpus:
        write_corpus(args.out, args.only.split(",") if args.only else None)
    else:
        write_cases(args.out)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
