"""The machine's float32 matrix-product rate: numpy's sgemm (Debian's numpy calls the system BLAS,
OpenBLAS where libopenblas0 is installed), on 1 thread and on every core. By default on
2048×2048×2048, the yardstick for `attnviz-cli bench`'s GFLOP/s (docs/performance.md); --shapes
times other products instead (M×K×N: an M×K matrix times a K×N one) and gives their rate together
(their flops over the sum of their median times), e.g. the shapes of a pass's linear layers.
usage: /usr/bin/python3 tools/sgemm_rate.py [--size 2048 | --shapes 512x512x1536,512x2048x512]
           [--threads 1,2] [--repeat 5] [--json]
(a shape may be written with x or ×). --json prints one object per thread count: the shapes, the
sums of their median and best seconds per call, the rate together and each shape's own rate."""
import argparse
import json
import os
import subprocess
import sys

# One measurement in a child process: OpenBLAS reads its thread count when it loads. Each shape
# is timed over batches of calls of at least ~0.1 s (small products are short); it prints the
# median and the best seconds per call, one line per shape.
CHILD = r"""
import sys, time, numpy as np
repeat = int(sys.argv[1])
rng = np.random.default_rng(0)
for spec in sys.argv[2:]:
    m, k, n = (int(x) for x in spec.split("x"))
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = a @ b
    calls = max(1, int(2e10 / (2.0 * m * k * n)))
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            np.matmul(a, b, out=c)
        ts.append((time.perf_counter() - t0) / calls)
    ts.sort()
    print(ts[len(ts) // 2], ts[0])
"""


def parse_shapes(text):
    shapes = []
    for spec in text.split(","):
        parts = spec.strip().lower().replace("×", "x").split("x")
        try:
            dims = tuple(int(p) for p in parts)
        except ValueError:
            dims = ()
        if len(dims) != 3 or min(dims) <= 0:
            raise SystemExit("sgemm_rate.py: a shape is MxKxN in positive integers, e.g. "
                             "512x512x1536 (got %r)" % spec)
        shapes.append(dims)
    return shapes


def main():
    p = argparse.ArgumentParser()
    what = p.add_mutually_exclusive_group()
    what.add_argument("--size", type=int, default=2048)
    what.add_argument("--shapes", help="products to time instead of size³: MxKxN,MxKxN,...")
    p.add_argument("--threads", default="1,%d" % len(os.sched_getaffinity(0)))
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    if a.size <= 0:
        raise SystemExit("sgemm_rate.py: --size must be positive")
    shapes = parse_shapes(a.shapes) if a.shapes is not None else [(a.size, a.size, a.size)]
    flops = [2.0 * m * k * n for m, k, n in shapes]
    label = ("%d³" % a.size if a.shapes is None
             else " + ".join("%d×%d×%d" % s for s in shapes))
    for t in sorted({int(x) for x in a.threads.split(",")}):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(t), OMP_NUM_THREADS=str(t))
        lines = subprocess.run([sys.executable, "-c", CHILD, str(a.repeat)]
                               + ["%dx%dx%d" % s for s in shapes], env=env, check=True,
                               capture_output=True, text=True).stdout.splitlines()
        times = [tuple(float(x) for x in line.split()) for line in lines]
        median = sum(t_[0] for t_ in times)
        best = sum(t_[1] for t_ in times)
        rate, rate_best = sum(flops) / median * 1e-9, sum(flops) / best * 1e-9
        each = [f / m[0] * 1e-9 for f, m in zip(flops, times)]
        if a.json:
            print(json.dumps({"shapes": ["%dx%dx%d" % s for s in shapes], "threads": t,
                              "median_s": median, "min_s": best, "gflops": rate,
                              "gflops_best": rate_best,
                              "gflops_each": each}),
                  flush=True)
        else:
            print("sgemm %s, %d thread%s: %.1f GFLOP/s (median of %d; best %.1f)%s"
                  % (label, t, "" if t == 1 else "s", rate, a.repeat, rate_best,
                     "" if len(shapes) == 1 else " (each: %s)" % ", ".join("%.1f" % x for x in each)),
                  flush=True)


if __name__ == "__main__":
    main()
