"""Compare two `attnviz-cli train --log` files of the same run on two backends (the CPU and CUDA in
scripts/gpu-check.sh), step by step: the loss and the gradients' global norm to a relative
tolerance, the token and sequence accuracy to 0.005 (an argmax at a near-tie may flip), and every
held-out evaluation's exact match. Float32 sums in another order differ in their last bits, which a few
dozen Adam steps amplify a little; a wrong gradient moves the loss at once.

usage: compare_train_logs.py A.json B.json [--loss-rtol 1e-5] [--grad-rtol 1e-4]
exit: 0 the runs agree; 1 they differ (the first differences are printed); 2 usage.
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--loss-rtol", type=float, default=1e-5)
    p.add_argument("--grad-rtol", type=float, default=1e-4)
    args = p.parse_args()
    runs = []
    for path in (args.a, args.b):
        with open(path) as f:
            runs.append(json.load(f))
    a, b = runs
    problems = []
    if len(a["steps"]) != len(b["steps"]) or not a["steps"]:
        problems.append("step counts differ or are zero: %d and %d" % (len(a["steps"]), len(b["steps"])))
    worst = {"loss": 0.0, "grad_norm": 0.0}
    for sa, sb in zip(a["steps"], b["steps"]):
        for key, tol in (("loss", args.loss_rtol), ("grad_norm", args.grad_rtol)):
            rel = abs(sa[key] - sb[key]) / max(abs(sa[key]), 1e-30)
            worst[key] = max(worst[key], rel)
            if rel > tol:
                problems.append("step %d: %s %.9g vs %.9g (relative %.2e > %.0e)"
                                % (sa["step"], key, sa[key], sb[key], rel, tol))
        for key in ("token_accuracy", "sequence_accuracy"):
            if abs(sa.get(key, 0) - sb.get(key, 0)) > 0.005:
                problems.append("step %d: %s %s vs %s" % (sa["step"], key, sa.get(key), sb.get(key)))
    ea = [(e["step"], e["correct"], e["total"]) for e in a.get("evaluations", [])]
    eb = [(e["step"], e["correct"], e["total"]) for e in b.get("evaluations", [])]
    if ea != eb:
        problems.append("held-out evaluations differ: %s vs %s" % (ea, eb))
    print("%s vs %s" % (a.get("backend", "?"), b.get("backend", "?")))
    print("%d steps; largest relative difference: loss %.2e, gradient norm %.2e; evaluations %s"
          % (len(a["steps"]), worst["loss"], worst["grad_norm"], ea))
    for line in problems[:10]:
        print("DIFFERS:", line)
    if problems:
        print("0 passed, 1 failed")
        return 1
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
