"""The machine's float32 matrix-product rate: numpy's sgemm (Debian's numpy calls the system BLAS,
OpenBLAS where libopenblas0 is installed) on 2048×2048×2048, on 1 thread and on every core.
This is the yardstick for `attnviz-cli bench`'s GFLOP/s (docs/performance.md).
usage: /usr/bin/python3 tools/sgemm_rate.py [--size 2048] [--threads 1,2] [--repeat 5] [--json]"""
import argparse
import json
import os
import subprocess
import sys

# One measurement in a child process: OpenBLAS reads its thread count when it loads.
CHILD = r"""
import sys, time, numpy as np
n, repeat = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n), dtype=np.float32)
b = rng.standard_normal((n, n), dtype=np.float32)
a @ b
ts = []
for _ in range(repeat):
    t0 = time.perf_counter()
    a @ b
    ts.append(time.perf_counter() - t0)
ts.sort()
print(ts[len(ts) // 2], ts[0])
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=2048)
    p.add_argument("--threads", default="1,%d" % len(os.sched_getaffinity(0)))
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    flops = 2.0 * a.size ** 3
    for t in sorted({int(x) for x in a.threads.split(",")}):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(t), OMP_NUM_THREADS=str(t))
        out = subprocess.run([sys.executable, "-c", CHILD, str(a.size), str(a.repeat)], env=env,
                             check=True, capture_output=True, text=True).stdout.split()
        median, best = float(out[0]), float(out[1])
        if a.json:
            print(json.dumps({"size": a.size, "threads": t, "median_s": median, "min_s": best,
                              "gflops": flops / median * 1e-9, "gflops_best": flops / best * 1e-9}),
                  flush=True)
        else:
            print("sgemm %d³, %d thread%s: %.1f GFLOP/s (median of %d; best %.1f)"
                  % (a.size, t, "" if t == 1 else "s", flops / median * 1e-9, a.repeat,
                     flops / best * 1e-9), flush=True)


if __name__ == "__main__":
    main()
