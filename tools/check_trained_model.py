"""Check a model that attnviz trained and saved (attnviz-cli train, the Train view) against PyTorch.

The file must load into the tutorial's own class -- PyTorch's translation tutorial Seq2SeqTransformer,
tools/reference_models.py's TorchSeq2Seq -- with load_state_dict(strict=True): every tensor name and
shape as the tutorial's state_dict has them, the positional buffer included. Then the model's greedy
decoding of the config's examples in PyTorch must give the tokens `attnviz-cli decode` gives.

usage: /usr/bin/python3 tools/check_trained_model.py MODEL.safetensors --cli build/app/attnviz-cli
       [--log TRAIN_LOG.json]   (also checks the training log's structure)
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_models as rm  # noqa: E402
import stio  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--cli", required=True)
    ap.add_argument("--log")
    args = ap.parse_args()
    torch.set_num_threads(1)

    tensors, meta = stio.read(args.model)
    cfg = json.loads(meta["attnviz_config"])
    family, model_name = rm.family_and_model(cfg)
    assert (family, model_name) == ("pytorch-nn-transformer", "Seq2SeqTransformer"), (family, model_name)
    model = rm.model_from_config(cfg, dropout=0.0)
    sd = {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in tensors.items()}
    model.load_state_dict(sd, strict=True)  # raises on any missing, unexpected or mis-shaped tensor
    model.eval()
    print("%s: loads into the tutorial's Seq2SeqTransformer with load_state_dict(strict=True) "
          "(%d tensors)" % (args.model, len(sd)))

    vocab = cfg["src_vocab"]
    index = {w: i for i, w in enumerate(vocab)}
    examples = [e["src"] for e in cfg.get("examples", [])]
    assert examples, "the trained model's config has no examples"
    for src in examples:
        ids = [index[w] for w in src.split()]
        # the tutorial's greedy_decode(max_len=num_tokens + 5) loops max_len - 1 times: at most the
        # source's length (with its <bos> and <eos>) + 4 tokens, the rule attnviz-cli decode follows
        torch_ids = model.greedy_decode(ids, len(ids) + 2 + 4)
        torch_words = [cfg["tgt_vocab"][i] for i in torch_ids]
        out = subprocess.run([args.cli, "decode", args.model, "--src", src], capture_output=True,
                             text=True, check=True).stdout.split()
        want = [w for w in torch_words if w != "<eos>"]
        got = [w for w in out if w != "<eos>"]
        assert got == want, "greedy decoding of %r: attnviz %r, PyTorch %r" % (src, got, want)
    print("greedy decoding of %d examples: attnviz and PyTorch agree" % len(examples))

    if args.log:
        with open(args.log) as f:
            log = json.load(f)
        steps = log["steps"]
        assert len(steps) == log["steps_planned"] or log["final"]["exact_match"] >= 0, "steps"
        assert [s["step"] for s in steps] == list(range(1, len(steps) + 1)), "steps numbered 1..n"
        for key in ("loss", "token_accuracy", "sequence_accuracy", "lr", "grad_norm", "seconds"):
            assert all(key in s for s in steps), key
        assert steps[-1]["loss"] < steps[0]["loss"], "the loss did not fall"
        assert log["final"]["total"] > 0 and "exact_match" in log["final"]
        print("training log: %d steps, loss %.3f -> %.3f, held-out exact match %.1f%%" % (
            len(steps), steps[0]["loss"], steps[-1]["loss"], 100 * log["final"]["exact_match"]))


if __name__ == "__main__":
    main()
