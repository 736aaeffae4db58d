"""Compare what `attnviz-cli run --dump DIR` wrote with the PyTorch references in tests/data, with the
tolerances of tests/test_parity.cpp: probabilities to 1e-5 absolute; scores, logits, class logits
and hidden states to 1e-4 relative to max(|reference|, 1); masks exactly. Needs numpy only (tools/stio.py reads the files), so
it runs where the C++ Qt tests cannot (a bare GPU machine: scripts/gpu-check.sh).

usage:
  compare_dump.py DUMP_DIR CASE.ref.safetensors [--batch B]
      one dump against batch item B (default 0) of a reference
  compare_dump.py --cli PATH/attnviz-cli --backend cpu|cuda [--data tests/data] [--cases a,b]
                  [--work DIR]
      every case and batch item of DATA through `attnviz-cli run --backend … --src-ids …
      --tgt-ids … --dump`, plus `decode --backend … --ids` against the reference greedy ids
  compare_dump.py --print-ids CASE.ref.safetensors
      prints `--src-ids … --tgt-ids …` of batch item 0 (for running one case by hand)

exit: 0 everything matched; 1 a mismatch or a CLI failure; 77 the backend is unavailable here (the
CLI said "CUDA backend unavailable"); 2 usage.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402

PROB_TOL = 1e-5  # absolute
REL_TOL = 1e-4   # relative to max(|reference|, 1)
KINDS = ("enc_self", "dec_self", "cross")
OUTPUTS = ("logits", "class_logits", "hidden")
UNAVAILABLE = 77


def worst_relative(got, ref):
    """Largest |got - ref| / max(|ref|, 1) and its flat index; NaN counts as infinitely wrong."""
    err = np.abs(got.astype(np.float64) - ref.astype(np.float64)) / np.maximum(np.abs(ref.astype(np.float64)), 1.0)
    err = np.where(np.isnan(err), np.inf, err)
    i = int(np.argmax(err)) if err.size else 0
    return (float(err.flat[i]) if err.size else 0.0), i


def worst_absolute(got, ref):
    """Largest |got - ref| and its flat index; NaN counts as infinitely wrong."""
    err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    err = np.where(np.isnan(err), np.inf, err)
    i = int(np.argmax(err)) if err.size else 0
    return (float(err.flat[i]) if err.size else 0.0), i


def compare_dump(dump_dir, ref, batch):
    """Problems found comparing DUMP_DIR with batch item `batch` of the reference tensors `ref` (a
    reference without KIND.scores or KIND.mask, as Hugging Face's attentions, is compared on what
    it has)."""
    problems = []

    def load(name):
        path = os.path.join(dump_dir, name)
        if not os.path.exists(path):
            problems.append("%s is missing" % name)
            return None
        return np.load(path)

    for kind in KINDS:
        if kind + ".probs" not in ref:
            if os.path.exists(os.path.join(dump_dir, kind + "_probs.npy")):
                problems.append("%s_probs.npy was written, but the reference has no %s blocks" % (kind, kind))
            continue
        want_shape = ref[kind + ".probs"].shape[1:]  # [L, H, Tq, Tk]
        for what in ("probs", "scores", "mask"):
            if "%s.%s" % (kind, what) not in ref:
                continue
            got = load("%s_%s.npy" % (kind, what))
            if got is None:
                continue
            want = ref["%s.%s" % (kind, what)][batch]
            if got.shape != want_shape:
                problems.append("%s_%s.npy has shape %s, the reference %s" % (kind, what, got.shape, want_shape))
                continue
            if what == "mask":
                diff = np.argwhere((got != 0) != (want != 0))
                if len(diff):
                    problems.append("%s mask differs at %d cells, first [L, H, q, k] = %s"
                                    % (kind, len(diff), diff[0].tolist()))
            elif what == "probs":
                worst, i = worst_absolute(got, want)
                if worst > PROB_TOL:
                    at = np.unravel_index(i, got.shape)
                    problems.append("%s probs differ by %.3g (> %g absolute) at [L, H, q, k] = %s"
                                    % (kind, worst, PROB_TOL, list(map(int, at))))
            else:
                worst, i = worst_relative(got, want)
                if worst > REL_TOL:
                    at = np.unravel_index(i, got.shape)
                    problems.append("%s scores differ by %.3g (> %g relative) at [L, H, q, k] = %s"
                                    % (kind, worst, REL_TOL, list(map(int, at))))
    # The outputs the reference has: token logits [T, V], class logits [C], hidden states [len, d].
    for name in OUTPUTS:
        if name not in ref:
            continue
        got = load(name + ".npy")
        if got is None:
            continue
        want = ref[name][batch]
        if got.shape != want.shape:
            problems.append("%s.npy has shape %s, the reference %s" % (name, got.shape, want.shape))
            continue
        worst, i = worst_relative(got, want)
        if worst > REL_TOL:
            problems.append("%s differ by %.3g (> %g relative) at %s"
                            % (name, worst, REL_TOL, list(map(int, np.unravel_index(i, got.shape)))))
    return problems


def ids_arg(ids):
    return ",".join(str(int(i)) for i in ids)


def run_cli(cmd, timeout=300):
    """(returncode, stdout + stderr) of one CLI call."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        return 124, "timed out after %d s: %s" % (timeout, e)


def check_all(cli, backend, data, cases, work):
    """Runs every case; prints one line per check and returns the exit code."""
    refs = sorted(glob.glob(os.path.join(data, "*.ref.safetensors")))
    if cases:
        refs = [r for r in refs if os.path.basename(r)[: -len(".ref.safetensors")] in cases]
    if not refs:
        print("no reference cases found in %s" % data)
        return 1
    passed = failed = 0
    for ref_path in refs:
        case = os.path.basename(ref_path)[: -len(".ref.safetensors")]
        model = os.path.join(data, case + ".safetensors")
        ref, meta = stio.read(ref_path)
        inputs = json.loads(meta["inputs"])
        checks = []  # (name, cmd, compare(output) -> problems)
        # The encoder's input as --src-ids (and --segment-ids), the decoder's as --tgt-ids; only
        # those the architecture has (docs/formats.md, "Reference files").
        rows = len(inputs.get("src_ids") or inputs.get("tgt_ids"))
        for b in range(rows):
            out = os.path.join(work, "%s-%s-b%d" % (backend, case, b))
            cmd = [cli, "run", model, "--backend", backend, "--dump", out]
            for key, option in (("src_ids", "--src-ids"), ("segment_ids", "--segment-ids"), ("tgt_ids", "--tgt-ids")):
                if key in inputs:
                    cmd += [option, ids_arg(inputs[key][b])]
            checks.append(("%s/trace/b%d" % (case, b), cmd, lambda _o, out=out, b=b: compare_dump(out, ref, b)))
        g = inputs.get("greedy")
        if g:
            cmd = [cli, "decode", model, "--backend", backend, "--max-len", str(g["max_len"]), "--ids"]
            if "src_ids" in g:
                cmd += ["--src-ids", ids_arg(g["src_ids"])]
            if "tgt_ids" in g:
                cmd += ["--tgt-ids", ids_arg(g["tgt_ids"])]

            def greedy(output, want=g["out_ids"]):
                lines = [l for l in output.strip().splitlines() if l and l[0].isdigit()]
                got = [int(x) for x in lines[-1].split(",")] if lines else None
                return [] if got == want else ["greedy ids %s, the reference %s" % (got, want)]

            checks.append(("%s/greedy" % case, cmd, greedy))
        for name, cmd, compare in checks:
            rc, output = run_cli(cmd)
            if rc != 0 and "CUDA backend unavailable" in output:
                print("SKIP %s %s: %s" % (backend, name, output.strip().splitlines()[-1]))
                return UNAVAILABLE
            problems = ["%s exited with %d: %s" % (" ".join(cmd[:2]), rc, output.strip()[-2000:])] if rc else compare(output)
            if problems:
                failed += 1
                print("FAIL %s %s: %s" % (backend, name, "; ".join(problems)))
            else:
                passed += 1
                print("PASS %s %s" % (backend, name))
            sys.stdout.flush()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dump", nargs="?")
    p.add_argument("ref", nargs="?")
    p.add_argument("--batch", type=int, default=0)
    p.add_argument("--cli")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--data", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data"))
    p.add_argument("--cases", default="")
    p.add_argument("--work")
    p.add_argument("--print-ids")
    a = p.parse_args()
    if a.print_ids:
        inputs = json.loads(stio.read(a.print_ids)[1]["inputs"])
        print(" ".join("%s %s" % (option, ids_arg(inputs[key][0]))
                       for key, option in (("src_ids", "--src-ids"), ("segment_ids", "--segment-ids"),
                                           ("tgt_ids", "--tgt-ids")) if key in inputs))
        return 0
    if a.cli:
        cases = [c for c in a.cases.split(",") if c]
        if a.work:
            os.makedirs(a.work, exist_ok=True)
            return check_all(a.cli, a.backend, a.data, cases, a.work)
        with tempfile.TemporaryDirectory(prefix="attnviz-parity-") as work:
            return check_all(a.cli, a.backend, a.data, cases, work)
    if not (a.dump and a.ref):
        p.print_usage()
        return 2
    problems = compare_dump(a.dump, stio.read(a.ref)[0], a.batch)
    for pr in problems:
        print("FAIL " + pr)
    print("match" if not problems else "%d problems" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
