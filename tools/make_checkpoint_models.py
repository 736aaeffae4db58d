"""Write the reference cases' models as the tutorials' training loops save them: torch.save of the
state_dict (and the other shapes people save), with no attnviz config — for tests/test_pt_models.cpp,
which opens each with only what the tensors cannot tell (the number of heads, the special ids) and
compares what it computes with the case's PyTorch reference (tests/data/CASE.ref.safetensors).

For every case whose model is built with its tutorial's defaults (activation, norm placement, mask
fill: what a state_dict cannot show) this writes DIR/CASE.pt and a line of DIR/cases.json:
{"case": CASE, "file": "CASE.pt", "how": "...", "supplied": {"n_heads": H, "pad_id": P, ...}}.
The files vary how they were saved: the zip format (PyTorch >= 1.6), the legacy format, a checkpoint
dict {"model": ..., "optimizer": ..., "epoch": ...}, DataParallel's "module." prefix, and a whole
pickled model (torch.save(model)).

usage: /usr/bin/python3 tools/make_checkpoint_models.py --out DIR [--data tests/data]
"""
import argparse
import json
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_models as rm  # noqa: E402

# Cases built with their tutorial's defaults, and how each is saved.
CASES = [
    ("nlp_tiny", "state_dict"),                 # nlp-tutorial's 5-1.Transformer
    ("seed003_ref", "legacy"),                  # the WQ tutorial's Translation (F16 weights)
    ("seed003_pad3", "checkpoint_dict"),        # ... with pad id 3
    ("torch_post", "state_dict"),               # PyTorch's nn.Transformer tutorial, Seq2SeqTransformer
    ("encoder001", "whole_model"),              # the step-by-step TransformerEncoder
    ("bert003", "state_dict"),                  # the WQ tutorial's BertModel
    ("classifier003", "data_parallel"),         # ... Classifier, saved from nn.DataParallel
    ("gpt003", "state_dict"),                   # ... GPTModel
    ("mytransformer004", "state_dict"),         # MyTransformer's TranslationModel (q_proj_weight)
    ("mytransformer004_linear", "checkpoint_dict"),
    ("mytransformer004_fused", "legacy"),       # ... on torch.nn.Transformer (in_proj_weight)
]


def supplied(cfg):
    """What the tensors cannot tell, from the case's config."""
    s = {"n_heads": cfg["n_heads"]}
    for key in ("pad_id", "src_pad_id", "tgt_pad_id"):
        if key in cfg:
            s["pad_id"] = cfg[key]
            break
    for key in ("bos_id", "eos_id"):
        if cfg.get(key, -1) is not None and cfg.get(key, -1) >= 0:
            s[key] = cfg[key]
    return s


def save(model, path, how):
    sd = model.state_dict()
    if how == "state_dict":
        torch.save(sd, path)
    elif how == "legacy":
        torch.save(sd, path, _use_new_zipfile_serialization=False)
    elif how == "checkpoint_dict":
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        torch.save({"model": sd, "optimizer": opt.state_dict(), "epoch": 3}, path)
    elif how == "data_parallel":
        torch.save(nn.DataParallel(model).state_dict(), path)  # every name under "module."
    elif how == "whole_model":
        torch.save(model, path)
    else:
        raise ValueError(how)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", default=os.path.join(root, "tests", "data"))
    args = ap.parse_args()
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)
    lines = []
    for case, how in CASES:
        model = rm.load_model(os.path.join(args.data, case + ".safetensors"))
        model.eval()
        path = os.path.join(args.out, case + ".pt")
        save(model, path, how)
        lines.append({"case": case, "file": case + ".pt", "how": how,
                      "supplied": supplied(model.attnviz_config())})
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(lines, f, indent=1)
    print("wrote %d checkpoints to %s" % (len(lines), args.out))


if __name__ == "__main__":
    main()
