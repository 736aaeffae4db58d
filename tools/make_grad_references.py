"""Write the gradient references of attnviz's training parity tests (tests/test_training.cpp).

For every reference case of make_references.py (the same model, weights and padded batch) this runs
PyTorch autograd on a loss attnviz can compute too, and writes into --out:

  CASE.safetensors        the model (as make_references.py writes it)
  CASE.grad.safetensors   d loss / d parameter for every parameter, under the state_dict names (so the
                          C++ loader maps them onto attnviz's one layout exactly as it maps weights);
                          tied parameters (BertModel's decoder.weight = tok_embed.weight) under both names
  CASE.steps.safetensors  the parameters after STEPS optimizer steps on that batch (Adam or AdamW with
                          linear warm-up and gradient clipping, as the tutorials train)
  CASE.train.safetensors  the probe weights of models without a head, and in __metadata__["train"] the
                          targets, the loss settings, the optimizer settings and the losses PyTorch saw

The loss: cross-entropy (label smoothing ε, ignored positions) of the token logits against random
targets, plus the class logits' cross-entropy against random classes, plus Σ hidden ⊙ W for a model
without any head (the step-by-step encoder). Dropout is off (eval mode with autograd on), as attnviz's
parity run; its dropout is tested on its own. Deterministic: byte-identical from run to run.

usage: /usr/bin/python3 tools/make_grad_references.py [--out DIR] [--only CASE ...]
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_references as mr  # noqa: E402
import stio  # noqa: E402

STEPS = 3            # optimizer steps for the *.steps references
LR = 1e-3            # peak learning rate
WARMUP = 4           # linear warm-up steps: lr_k = LR * (k + 1) / WARMUP for k < WARMUP
BETAS = (0.9, 0.98)  # the tutorials' Adam (PyTorch's translation tutorial, the Annotated Transformer)
EPS = 1e-9
CLIP = 1.0           # clip_grad_norm_(max_norm)
SMOOTHING = 0.1
IGNORE = -100        # F.cross_entropy's ignore_index; attnviz: any negative target


def _targets(model, inputs, n_out, vocab, gen):
    """Random token targets [B, n_out] with ignored positions: padding of the input, and some at random
    (most of them for the masked LM, which predicts only a few positions)."""
    cfg = model.attnviz_config()
    if "tgt_ids" in inputs:
        ids = np.asarray(inputs["tgt_ids"])
        pad = cfg.get("tgt_pad_id", cfg.get("pad_id", 0))
    else:
        ids = np.asarray(inputs["src_ids"])
        pad = cfg.get("src_pad_id", cfg.get("pad_id", 0))
    B = ids.shape[0]
    t = torch.randint(0, vocab, (B, n_out), generator=gen)
    keep = 0.3 if model.model_name == "BertModel" else 0.85
    drop = torch.rand((B, n_out), generator=gen) > keep
    t[drop] = IGNORE
    t[torch.as_tensor(ids == pad)] = IGNORE
    return t


def _outputs(model, inputs):
    src = None if "src_ids" not in inputs else mr.rm._ids(inputs["src_ids"])
    tgt = None if "tgt_ids" not in inputs else mr.rm._ids(inputs["tgt_ids"])
    seg = None if "segment_ids" not in inputs else mr.rm._ids(inputs["segment_ids"])
    return model._outputs(src, tgt, seg)


def _loss(model, inputs, spec):
    """The loss of one step; spec holds the targets (tensors)."""
    out = _outputs(model, inputs)
    loss = torch.zeros(())
    parts = {}
    if "tokens" in spec:
        logits = out["logits"]
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), spec["tokens"].reshape(-1),
                             ignore_index=IGNORE, label_smoothing=SMOOTHING)
        loss = loss + ce
        parts["token_loss"] = ce.item()
    if "classes" in spec:
        ce = F.cross_entropy(out["class_logits"], spec["classes"], label_smoothing=SMOOTHING)
        loss = loss + ce
        parts["class_loss"] = ce.item()
    if "probe" in spec:
        loss = loss + (out["hidden"] * spec["probe"]).sum()
    parts["loss"] = loss.item()
    return loss, parts


def _named_state(model, values):
    """{state_dict name: values(param)} for every state_dict entry that is a parameter (a tied parameter
    under each of its names)."""
    out = {}
    for name, t in model.state_dict(keep_vars=True).items():
        if isinstance(t, torch.nn.Parameter):
            out[name] = values(t).detach().clone().float().contiguous()
    return out


def make_case(name, out_dir):
    model, dtype, inputs, _ = mr._build(name)
    model.eval()  # dropout off; autograd stays on
    cfg = model.attnviz_config()
    mr.rm.save_model(model, os.path.join(out_dir, name + ".safetensors"), dtype)  # as make_references
    gen = torch.Generator().manual_seed(90000 + sorted(mr.CASES).index(name))
    with torch.no_grad():
        out = _outputs(model, inputs)
    spec, meta = {}, {"smoothing": SMOOTHING, "inputs": inputs}
    if "logits" in out:
        B, n_out, V = out["logits"].shape
        spec["tokens"] = _targets(model, inputs, n_out, V, gen)
        meta["tokens"] = [[int(v) if v >= 0 else -1 for v in row] for row in spec["tokens"].tolist()]
    if "class_logits" in out:
        B, C = out["class_logits"].shape
        spec["classes"] = torch.randint(0, C, (B,), generator=gen)
        meta["classes"] = [int(v) for v in spec["classes"]]
    extra = {}
    if "logits" not in out and "class_logits" not in out:
        h = out["hidden"]
        spec["probe"] = torch.randn(h.shape, generator=gen) / math.sqrt(h.numel())
        extra["probe"] = spec["probe"]

    # one backward: the gradients
    model.zero_grad(set_to_none=False)
    loss, parts = _loss(model, inputs, spec)
    loss.backward()
    meta["first"] = parts
    grads = _named_state(model, lambda p: p.grad if p.grad is not None else torch.zeros_like(p))
    config = json.dumps(cfg, ensure_ascii=False)
    stio.write(os.path.join(out_dir, name + ".grad.safetensors"), grads, {"attnviz_config": config})

    # STEPS optimizer steps on the same batch
    decoupled = sorted(mr.CASES).index(name) % 2 == 1  # AdamW on every other case, Adam on the rest
    wd = 0.01 if decoupled else 0.0
    opt_cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    opt = opt_cls(model.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=wd)
    meta["optimizer"] = {"kind": "adamw" if decoupled else "adam", "lr": LR, "beta1": BETAS[0],
                         "beta2": BETAS[1], "eps": EPS, "weight_decay": wd, "warmup": WARMUP,
                         "clip": CLIP, "steps": STEPS}
    norms, losses = [], []
    for k in range(STEPS):
        for g in opt.param_groups:
            g["lr"] = LR * min(1.0, (k + 1) / WARMUP)
        opt.zero_grad(set_to_none=False)
        loss, parts = _loss(model, inputs, spec)
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)))
        opt.step()
        losses.append(parts["loss"])
    meta["losses"] = losses
    meta["grad_norms"] = norms
    after = _named_state(model, lambda p: p)
    stio.write(os.path.join(out_dir, name + ".steps.safetensors"), after, {"attnviz_config": config})
    stio.write(os.path.join(out_dir, name + ".train.safetensors"),
               extra or {"none": np.zeros(1, np.float32)}, {"train": json.dumps(meta)})
    print("%-23s loss %.5f  %s, %d steps: losses %s" % (
        name, meta["first"]["loss"], meta["optimizer"]["kind"], STEPS,
        " ".join("%.5f" % v for v in losses)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out", default=os.path.join(root, "build", "grad-references"), help="output directory")
    ap.add_argument("--only", nargs="*", choices=sorted(mr.CASES), help="write only these cases")
    args = ap.parse_args()
    torch.set_num_threads(1)  # one reduction order, for reproducible bits
    os.makedirs(args.out, exist_ok=True)
    for name in args.only or mr.CASES:
        make_case(name, args.out)


if __name__ == "__main__":
    main()
