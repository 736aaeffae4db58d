"""Minimal safetensors reader/writer for attnviz's tools (Debian ships no safetensors module).

write(path, tensors: dict[str, torch.Tensor | numpy.ndarray], metadata: dict[str, str])
read(path) -> (dict[str, numpy.ndarray], metadata dict)
rewrite_metadata(path, metadata: dict[str, str])  new __metadata__, the tensors' bytes untouched
"""
import json
import struct

import numpy as np

_DTYPES = {
    np.dtype("float32"): "F32",
    np.dtype("float16"): "F16",
    np.dtype("float64"): "F64",
    np.dtype("int64"): "I64",
    np.dtype("int32"): "I32",
    np.dtype("uint8"): "U8",
    np.dtype("bool"): "BOOL",
}
_NP = {v: k for k, v in _DTYPES.items()}


def _to_numpy(t):
    try:
        import torch

        if isinstance(t, torch.Tensor):
            t = t.detach().cpu()
            if t.dtype == torch.bfloat16:
                # keep the raw bf16 bits; numpy has no bfloat16
                return t.view(torch.int16).numpy().view(np.uint16), "BF16"
            return t.contiguous().numpy(), None
    except ImportError:
        pass
    return np.ascontiguousarray(t), None


def write(path, tensors, metadata=None):
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        arr, forced = _to_numpy(tensors[name])
        arr = np.ascontiguousarray(arr)
        dtype = forced or _DTYPES[arr.dtype]
        data = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)  # align the data start to 8 bytes, as the reference writer does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        if info["dtype"] == "BF16":
            bits = np.frombuffer(raw[base + b : base + e], dtype="<u2").astype(np.uint32) << 16
            arr = bits.view(np.float32)
        else:
            arr = np.frombuffer(raw[base + b : base + e], dtype=_NP[info["dtype"]].newbyteorder("<"))
        out[name] = arr.reshape(info["shape"])
    return out, meta


def rewrite_metadata(path, metadata):
    """Replace the file's __metadata__ and keep every tensor byte as it is: the header is written
    again (tensor entries in their order, offsets unchanged), the data after it copied verbatim."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    header.pop("__metadata__", None)
    header["__metadata__"] = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        f.write(data)
