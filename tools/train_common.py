"""Shared pieces of the scripts that train attnviz's bundled models (tools/train_*.py).

The models themselves are the reference modules of tools/reference_models.py, so a trained file has
exactly the tensor names and config the C++ loader reads. This module holds what the three training
scripts have in common: command line, seeding, padding, a family-independent forward for training,
the training loop, held-out evaluation with the model's own greedy_decode, and writing the model file,
the held-out JSON and the model card.

Always run with Debian's PyTorch: /usr/bin/python3.
"""
import argparse
import json
import math
import os
import random
import sys
import time

# One BLAS thread: on a small shared CPU, extra BLAS/OpenMP threads only contend (import this module
# before torch so that the setting reaches the BLAS library when it loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_models as rm  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO_ROOT, "resources", "models")


# --------------------------------------------------------------------------------------------------
# command line, seeds
# --------------------------------------------------------------------------------------------------
def parse_args(description, default_steps):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", default=DEFAULT_OUT, help="output folder (default: resources/models)")
    p.add_argument("--smoke", action="store_true",
                   help="a few training steps only, to prove the script runs (the result is not a usable model)")
    p.add_argument("--steps", type=int, default=None, help="training steps (default %d)" % default_steps)
    p.add_argument("--seed", type=int, default=1234, help="seed of data generation and initialisation")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1: fastest on a shared "
                   "2-core machine)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a model/training setting of the script (VALUE is JSON), for experiments")
    args = p.parse_args()
    args.overrides = {}
    for kv in args.set:
        k, _, v = kv.partition("=")
        try:
            args.overrides[k] = json.loads(v)
        except ValueError:
            args.overrides[k] = v
    if args.steps is None:
        args.steps = 5 if args.smoke else default_steps
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    return args


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def blas_library():
    """The BLAS library torch computes with (Debian's torch uses whatever libblas.so.3 resolves to:
    the reference BLAS by default, OpenBLAS when libopenblas0 is installed); named in the model cards
    because it sets the training speed and the last bits of the weights."""
    try:
        with open("/proc/self/maps") as f:
            libs = sorted(set(line.split()[-1] for line in f if "blas" in line.split()[-1].lower()))
    except OSError:
        return "unknown"
    real = sorted(set(os.path.basename(os.path.realpath(p)) for p in libs))
    kind = "OpenBLAS" if any("openblas" in r for r in real) else "reference BLAS" if real else "no BLAS found"
    return "%s (%s)" % (kind, ", ".join(real))


def reproduce_section():
    """The model card's "Reproduce" section: the command, and the BLAS it ran with."""
    blas = blas_library()
    note = ("Trained with %s. Debian's python3-torch computes with whatever `libblas.so.3` resolves to: "
            "the reference BLAS by default (about 10x slower here), OpenBLAS once `libopenblas0-pthread` is "
            "installed (or its directory is on `LD_LIBRARY_PATH`). Data and initialisation are seeded, so a "
            "run repeats exactly with the same BLAS; another BLAS rounds differently and gives slightly "
            "different weights." % blas)
    return "## Reproduce\n\n```\n%s\n```\n\n%s\n" % (command_line(), note)


def apply_overrides(settings, overrides):
    """settings: dict of the script's defaults; overrides from --set. Unknown keys are an error."""
    for k, v in overrides.items():
        if k not in settings:
            sys.exit("--set %s: unknown setting (known: %s)" % (k, ", ".join(sorted(settings))))
        settings[k] = v
    return settings


def init_embeddings_(model, std):
    """Token embeddings ~ N(0, std^2) instead of nn.Embedding's N(0, 1) (used where the family scales
    embeddings by sqrt(d_model), so that positions are not drowned by the scaled tokens at the start)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in ("encoder.src_emb.weight", "decoder.tgt_emb.weight", "src_tok_emb.embedding.weight",
                        "tgt_tok_emb.embedding.weight"):
                p.normal_(0.0, std)


def command_line():
    """The command that ran this script, as written into the model card."""
    script = os.path.relpath(os.path.abspath(sys.argv[0]), REPO_ROOT)
    args = []
    for a in sys.argv[1:]:
        args.append(a if a and all(c.isalnum() or c in "-_=./" for c in a) else json.dumps(a))
    return " ".join(["/usr/bin/python3", script] + args)


# --------------------------------------------------------------------------------------------------
# batches
# --------------------------------------------------------------------------------------------------
def pad_batch(seqs, pad_id):
    """list of id lists -> LongTensor [B, max_len], right-padded with pad_id."""
    n = max(len(s) for s in seqs)
    out = torch.full((len(seqs), n), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return out


def make_batch(pairs, src_pad_id, tgt_pad_id, bos_id, eos_id):
    """pairs of (src ids, tgt ids without bos/eos) -> src [B,S], dec_in [B,T] (bos + tgt),
    dec_out [B,T] (tgt + eos), all batch-first and padded."""
    src = pad_batch([s for s, _ in pairs], src_pad_id)
    dec_in = pad_batch([[bos_id] + list(t) for _, t in pairs], tgt_pad_id)
    dec_out = pad_batch([list(t) + [eos_id] for _, t in pairs], tgt_pad_id)
    return src, dec_in, dec_out


def encode(vocab_index, words):
    return [vocab_index[w] for w in words]


# --------------------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------------------
def train_logits(model, src, dec_in):
    """Training forward of any family: batch-first src [B,S], dec_in [B,T] -> logits [B,T,V],
    through the module's own forward() as its tutorial calls it."""
    if isinstance(model, rm.NlpTutorialTransformer):
        return model(src, dec_in)[0].view(src.size(0), dec_in.size(1), -1)
    if isinstance(model, rm.Seed003Translation):
        return model(src, dec_in)[0]
    if isinstance(model, rm.TorchSeq2Seq):
        s, t = src.transpose(0, 1), dec_in.transpose(0, 1)  # sequence-first, as the tutorial
        src_mask, tgt_mask, src_pad, tgt_pad = model.create_mask(s, t)
        return model(s, t, src_mask, tgt_mask, src_pad, tgt_pad, src_pad).transpose(0, 1)
    raise TypeError("unknown model class %s" % type(model).__name__)


def train(model, next_batch, steps, lr, tgt_pad_id, warmup=100, log_every=100, clip=1.0,
          extra_loss=None, label_smoothing=0.0):
    """Adam with linear warm-up then cosine decay to lr/20. ``next_batch(step)`` returns
    (src, dec_in, dec_out). ``extra_loss(model, src, dec_in, dec_out)`` may add a term (or return None).
    Returns a dict: steps, seconds, final_loss (mean cross-entropy of the last min(100, steps) steps)."""
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)

    def lr_at(step):
        if step < warmup:
            return lr * (step + 1) / warmup
        p = (step - warmup) / max(1, steps - warmup)
        return lr / 20 + (lr - lr / 20) * 0.5 * (1 + math.cos(math.pi * min(1.0, p)))

    model.train()
    t0 = time.time()
    recent = []
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        src, dec_in, dec_out = next_batch(step)
        logits = train_logits(model, src, dec_in)
        ce = F.cross_entropy(logits.reshape(-1, logits.size(-1)), dec_out.reshape(-1), ignore_index=tgt_pad_id,
                             label_smoothing=label_smoothing)
        loss = ce
        if extra_loss is not None:
            extra = extra_loss(model, src, dec_in, dec_out)
            if extra is not None:
                loss = loss + extra
        opt.zero_grad()
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        recent.append(ce.item())
        recent = recent[-100:]
        if (step + 1) % log_every == 0 or step + 1 == steps:
            print("step %5d/%d  loss %.3g  lr %.2e  %.0fs" % (step + 1, steps, sum(recent) / len(recent),
                                                           lr_at(step), time.time() - t0), flush=True)
    model.eval()
    return {"steps": steps, "seconds": time.time() - t0, "final_loss": sum(recent) / len(recent)}


def final_loss(model, pairs, src_pad_id, tgt_pad_id, bos_id, eos_id, batch_size=256):
    """Mean token cross-entropy (eval mode, no label smoothing) over ``pairs``."""
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(pairs), batch_size):
            src, dec_in, dec_out = make_batch(pairs[i:i + batch_size], src_pad_id, tgt_pad_id, bos_id, eos_id)
            logits = train_logits(model, src, dec_in)
            ce = F.cross_entropy(logits.reshape(-1, logits.size(-1)), dec_out.reshape(-1),
                                 ignore_index=tgt_pad_id, reduction="sum")
            total += ce.item()
            count += int((dec_out != tgt_pad_id).sum())
    return total / max(1, count)


# --------------------------------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------------------------------
def greedy_words(model, src_words, src_index, tgt_vocab, eos_id, max_len):
    """The model's own greedy_decode on a sentence; returns the output words without eos."""
    ids = model.greedy_decode(encode(src_index, src_words), max_len)
    if ids and ids[-1] == eos_id:
        ids = ids[:-1]
    return [tgt_vocab[i] for i in ids]


def exact_match(model, items, src_index, tgt_vocab, eos_id, max_extra=8, show=3):
    """items: [{"src": "...", "tgt": "..."}]. Fraction whose greedy output (ended by eos) equals tgt.
    A decode that runs out of length without eos counts as wrong."""
    ok = 0
    wrong = []
    for it in items:
        src, tgt = it["src"].split(), it["tgt"].split()
        ids = model.greedy_decode(encode(src_index, src), len(tgt) + max_extra)
        got = [tgt_vocab[i] for i in ids]
        if got == tgt + [tgt_vocab[eos_id]]:
            ok += 1
        elif len(wrong) < show:
            wrong.append((it["src"], it["tgt"], " ".join(got)))
    for s, t, g in wrong:
        print("  wrong: %s\n    want: %s\n    got:  %s" % (s, t, g))
    return ok / max(1, len(items))


# --------------------------------------------------------------------------------------------------
# output files
# --------------------------------------------------------------------------------------------------
def named_config(cfg):
    """The config with the family's current name (the reference classes write the old ones, which
    still load: seed003, torch-seq2seq) and the model class named right after it."""
    family, model_class = rm.family_and_model(cfg)
    out = {"family": family, "model": model_class}
    out.update((k, v) for k, v in cfg.items() if k not in ("family", "model"))
    return out


def save(model, path, extra_config, dtype="F32"):
    """save_model with extra config keys (name, description, examples, ...) merged into attnviz_config(),
    under the family names a user recognises (named_config)."""
    base = model.attnviz_config

    def config():
        cfg = base()
        cfg.update(extra_config)
        return named_config(cfg)

    model.attnviz_config = config
    try:
        rm.save_model(model, path, dtype)
    finally:
        del model.attnviz_config  # back to the class's method
    return path


def write_json(path, items):
    """A list of {"src": ..., "tgt": ...}: one object per line, UTF-8, stable key order."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("[\n")
        for i, it in enumerate(items):
            f.write("  " + json.dumps({"src": it["src"], "tgt": it["tgt"]}, ensure_ascii=False))
            f.write(",\n" if i + 1 < len(items) else "\n")
        f.write("]\n")


def describe_config(cfg):
    keys = ["family", "model", "d_model", "d_ff", "n_heads", "d_k", "d_v", "n_encoder_layers", "n_decoder_layers",
            "norm", "activation", "positional", "max_len", "pad_id", "bos_id", "eos_id", "unk_id"]
    lines = ["| key | value |", "|---|---|"]
    for k in keys:
        if k in cfg:
            lines.append("| `%s` | %s |" % (k, json.dumps(cfg[k])))
    lines.append("| `src_vocab` | %d tokens |" % len(cfg["src_vocab"]))
    lines.append("| `tgt_vocab` | %d tokens |" % len(cfg["tgt_vocab"]))
    return "\n".join(lines)


def param_count(model):
    return sum(p.numel() for p in model.parameters())


def verify_file(path, items, max_extra=8, show=3):
    """Reload the written file with reference_models.load_model and recompute the exact match, so the
    figure reported is the one of the file on disk."""
    model = rm.load_model(path)
    cfg = json.loads(rm.stio.read(path)[1]["attnviz_config"])
    src_index = {w: i for i, w in enumerate(cfg["src_vocab"])}
    return model, cfg, exact_match(model, items, src_index, cfg["tgt_vocab"], cfg["eos_id"], max_extra, show)
