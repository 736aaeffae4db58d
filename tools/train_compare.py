"""Train the same task with attnviz and with PyTorch, in one run, and compare the time each needs.

Both train PyTorch's translation-tutorial Seq2SeqTransformer (attnviz: its pytorch-nn-transformer
family; PyTorch: tools/reference_models.py's TorchSeq2Seq on nn.Transformer) of the same size, from the
tutorial's initialisation (Xavier-uniform matrices), with the same training: Adam (betas 0.9/0.98,
eps 1e-9), lr 1e-3 with 100 warm-up steps then a cosine decay to lr/20 over the planned steps,
gradient clipping 1.0, batches of 64 fresh random pairs drawn 16 batches at a time and bucketed by
length, no dropout. Both measure greedy-decoding exact match on the same held-out set (the bundled
reverse model's reverse.heldout.json) every --eval-every steps and stop once it reaches --target.
The runs alternate (attnviz, PyTorch, attnviz, ...) so that both see the same machine load; the table
reports wall-clock seconds of training to the target (evaluation excluded) and the CPU seconds of the
process (attnviz: the whole run; PyTorch: its training steps), which a loaded machine inflates less.

The task here is "reverse" (3-12 digits and letters), the README's figure; the model presets are
attnviz's (core/train/trainer.cpp): small = 2+2 layers, d_model 64, 4 heads, d_ff 256.

usage: /usr/bin/python3 tools/train_compare.py [--cli build/app/attnviz-cli] [--steps 1500]
       [--target 0.99] [--eval-every 125] [--threads 1] [--rounds 1] [--seed 1] [--json FILE]
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_common as tc  # noqa: E402  (first: it sets the BLAS threads before torch loads)
import reference_models as rm  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECIALS = ["<unk>", "<pad>", "<bos>", "<eos>"]  # attnviz's tasks number them as the tutorial
SYMBOLS = list("0123456789abcdefghijklmnopqrstuvwxyz")
VOCAB = SPECIALS + SYMBOLS
UNK, PAD, BOS, EOS = 0, 1, 2, 3
PRESETS = {"tiny": (32, 2, 64, 1, 1), "small": (64, 4, 256, 2, 2), "medium": (128, 4, 512, 3, 3)}


def heldout():
    with open(os.path.join(ROOT, "resources", "models", "reverse.heldout.json"), encoding="utf-8") as f:
        return [it["src"].split() for it in json.load(f)]


def greedy_exact_match(model, items):
    """Batched greedy decoding of every held-out source; exact match of output + <eos>."""
    model.eval()
    index = {w: i for i, w in enumerate(VOCAB)}
    src = tc.pad_batch([[index[w] for w in s] for s in items], PAD).transpose(0, 1)  # [S, B]
    want = [[index[w] for w in reversed(s)] + [EOS] for s in items]
    S, B = src.shape
    with torch.no_grad():
        memory = model.transformer.encoder(model._pos(model.src_tok_emb(src), "src"),
                                           src_key_padding_mask=(src == PAD).transpose(0, 1))
        ys = torch.full((1, B), BOS, dtype=torch.long)
        done = torch.zeros(B, dtype=torch.bool)
        limit = max(len(w) for w in want) + 5
        for _ in range(limit):
            T = ys.size(0)
            mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
            out = model.transformer.decoder(model._pos(model.tgt_tok_emb(ys), "tgt"), memory, tgt_mask=mask,
                                            memory_key_padding_mask=(src == PAD).transpose(0, 1))
            nxt = model.generator(out[-1]).argmax(-1)
            nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
            ys = torch.cat([ys, nxt.unsqueeze(0)], 0)
            done |= nxt == EOS
            if bool(done.all()):
                break
    got = ys[1:].transpose(0, 1).tolist()
    ok = 0
    for g, w in zip(got, want):
        g = g[:g.index(EOS) + 1] if EOS in g else g
        ok += g == w
    model.train()
    return ok / len(items)


def train_pytorch(args):
    d, h, ff, le, ld = PRESETS[args.size]
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    held = heldout()
    held_set = set(" ".join(s) for s in held)
    model = rm.TorchSeq2Seq(VOCAB, VOCAB, d_model=d, n_heads=h, d_ff=ff, n_encoder_layers=le, n_decoder_layers=ld,
                            pad_id=PAD, bos_id=BOS, eos_id=EOS, unk_id=UNK, norm_first=True, dropout=0.0, max_len=64)
    for p in model.parameters():  # the tutorial's initialisation
        if p.dim() > 1:
            torch.nn.init.xavier_uniform_(p)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)
    warmup, steps = 100, args.steps

    def lr_at(k):
        if k < warmup:
            return args.lr * (k + 1) / warmup
        p = min(1.0, (k - warmup) / max(1, steps - warmup))
        return args.lr / 20 + (args.lr - args.lr / 20) * 0.5 * (1 + math.cos(math.pi * p))

    pending = []

    def next_batch():
        if not pending:
            pool = []
            while len(pool) < 16 * args.batch:
                s = [rng.choice(SYMBOLS) for _ in range(rng.randint(3, 12))]
                if " ".join(s) not in held_set:
                    pool.append(s)
            pool.sort(key=len)
            batches = [pool[k * args.batch:(k + 1) * args.batch] for k in range(16)]
            rng.shuffle(batches)
            pending.extend(batches)
        batch = pending.pop()
        pairs = [([VOCAB.index(w) for w in s], [VOCAB.index(w) for w in reversed(s)]) for s in batch]
        return tc.make_batch(pairs, PAD, PAD, BOS, EOS)

    model.train()
    wall = cpu = 0.0
    evals = []
    reached = None
    for k in range(steps):
        w0, c0 = time.perf_counter(), time.process_time()
        for g in opt.param_groups:
            g["lr"] = lr_at(k)
        src, dec_in, dec_out = next_batch()
        logits = tc.train_logits(model, src, dec_in)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), dec_out.reshape(-1), ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        wall += time.perf_counter() - w0
        cpu += time.process_time() - c0
        if (k + 1) % args.eval_every == 0 or k + 1 == steps:
            acc = greedy_exact_match(model, held)
            evals.append({"step": k + 1, "exact_match": acc, "train_seconds": wall})
            print("  pytorch step %5d  loss %.4f  held-out exact match %.1f%%  %.1f s" %
                  (k + 1, loss.item(), 100 * acc, wall), file=sys.stderr, flush=True)
            if acc >= args.target:
                reached = k + 1
                break
    return {"steps": reached, "train_seconds": wall, "cpu_seconds": cpu, "exact_match": evals[-1]["exact_match"],
            "evaluations": evals}


def train_attnviz(args):
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log.json")
        cmd = [args.cli, "train", "--task", "reverse", "--size", args.size, "--steps", str(args.steps),
               "--batch", str(args.batch), "--seed", str(args.seed), "--lr", str(args.lr),
               "--eval-every", str(args.eval_every), "--target-accuracy", str(args.target),
               "--out", os.path.join(tmp, "model.safetensors"), "--log", log]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, stderr=subprocess.PIPE, text=True)
        for line in r.stderr.splitlines():
            if "held-out" in line or "trained" in line:
                print("  attnviz " + line.strip(), file=sys.stderr, flush=True)
        if r.returncode not in (0, 3):
            sys.exit("attnviz-cli train failed:\n" + r.stderr)
        with open(log) as f:
            data = json.load(f)
        evals = data["evaluations"]
        reached = next((e["step"] for e in evals if e["exact_match"] >= args.target), None)
        wall = data["train_seconds"]
        return {"steps": reached, "train_seconds": wall, "total_seconds": time.perf_counter() - t0,
                "exact_match": data["final"]["exact_match"], "evaluations": evals,
                "cpu_seconds": data["cpu_seconds"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "attnviz-cli"))
    ap.add_argument("--size", default="small", choices=sorted(PRESETS))
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--target", type=float, default=0.99)
    ap.add_argument("--eval-every", type=int, default=125)
    ap.add_argument("--threads", type=int, default=1, help="threads of both (torch.set_num_threads, --threads)")
    ap.add_argument("--rounds", type=int, default=1, help="alternating runs of each")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    results = []
    for r in range(args.rounds):
        for who, fn in (("attnviz", train_attnviz), ("pytorch", train_pytorch)):
            print("round %d: %s" % (r + 1, who), file=sys.stderr, flush=True)
            res = fn(args)
            res.update({"who": who, "round": r + 1})
            results.append(res)
    print("\n| run | steps to %.0f%% | training s (wall) | CPU s | final exact match |" % (100 * args.target))
    print("|---|---|---|---|---|")
    for res in results:
        print("| %s %d | %s | %.1f | %.1f | %.1f%% |" % (
            res["who"], res["round"], res["steps"] or "not reached", res["train_seconds"], res["cpu_seconds"],
            100 * res["exact_match"]))
    print("\nmachine: %d CPUs, load average %.1f; torch %s (%s), %d thread(s)" % (
        os.cpu_count(), os.getloadavg()[0], torch.__version__, tc.blas_library(), args.threads))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
