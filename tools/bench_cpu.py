"""attnviz's CPU forward pass against PyTorch's, alternated so that both see the same machine:
each round runs `attnviz-cli bench` and tools/bench_torch.py once per thread count and length,
and the table gives the median over rounds of each one's median. --busy keeps one core busy with
another process (a Python loop) the whole time, as a user's machine often is.
On a shared machine: every run also measures the CPU time that processes other than itself (and
the busy loop) took meanwhile, from /proc/stat; a run during which they took more than
--max-foreign of a core is repeated (up to --tries times; the quietest is kept) and the table says
how much foreign load remained.
usage: /usr/bin/python3 tools/bench_cpu.py [--cli build/app/attnviz-cli] [--lengths 32,128,512]
           [--threads 1,2] [--rounds 3] [--repeat 5] [--busy] [--no-torch] [--no-sgemm]
           [--no-pass-shapes] [--model tutorial|gpt2-small|smollm-135m] [--models-dir DIR]
           [--json FILE]
--model gpt2-small or smollm-135m: a decoder of that shape instead of the tutorial's model
(tools/make_tutorial_checkpoints.py's BENCH_SIZES): its Hugging Face folder, random weights, is
written first (into a temporary folder, or --models-dir, where a folder already written is reused)
and opened by `attnviz-cli bench FOLDER`; PyTorch runs the same model with the same weights
(tools/bench_torch.py --model), returning the logits and every layer's attention probabilities.
On a machine shared with other work, `nice -n -20` (as root) before it gives both programs, and
the busy loop, the cores first; the foreign-load line then says how quiet it was.
Each round also measures the machine's sgemm rate at each thread count (tools/sgemm_rate.py:
numpy on OpenBLAS, 2048³; Debian's python3-numpy, which python3-torch brings), so the pass's share
of it comes from the same run (--no-sgemm: not), and OpenBLAS's own rate on three of the
pass's linear layers at each length (n×512×1536, n×512×2048, n×2048×512: the shapes of the bench's
model: self-attention QKV, FFN1 and FFN2, about 64 % of its flops), on the same threads: how fast the
BLAS itself multiplies at shapes of the pass, which on a shared virtual machine can drop about
twice as much as the 2048³ rate does (--no-pass-shapes: not)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_busy_seconds():
    """CPU time all processes have used since boot (every core), from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait


def process_cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def wait_quiet(allowed_cores, limit_s=120):
    """Waits (at most limit_s) until the machine has 2 s in which at most allowed_cores are busy."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        b0 = cpu_busy_seconds()
        time.sleep(2)
        if (cpu_busy_seconds() - b0) / 2 <= allowed_cores:
            return


def run_json(cmd, busy_pid, env=None):
    """Runs cmd; returns its JSON lines and how many cores other processes kept busy meanwhile."""
    t0, b0 = time.monotonic(), cpu_busy_seconds()
    k0 = process_cpu_seconds(busy_pid) if busy_pid else 0.0
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit("%s failed (status %d)" % (" ".join(cmd), status))
    wall, busy = time.monotonic() - t0, cpu_busy_seconds() - b0
    mine = usage.ru_utime + usage.ru_stime
    loop = (process_cpu_seconds(busy_pid) - k0) if busy_pid else 0.0
    foreign = max(0.0, busy - mine - loop) / wall
    return [json.loads(line) for line in out.splitlines() if line.strip().startswith("{")], foreign


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cli", default=os.path.join(HERE, "..", "build", "app", "attnviz-cli"))
    p.add_argument("--lengths", default="32,128,512")
    p.add_argument("--threads", default="1,%d" % len(os.sched_getaffinity(0)))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--busy", action="store_true", help="keep one core busy meanwhile")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--no-sgemm", action="store_true",
                   help="do not measure the machine's sgemm rate in each round")
    p.add_argument("--no-pass-shapes", action="store_true",
                   help="do not measure OpenBLAS on the pass's linear-layer shapes in each round")
    p.add_argument("--model", default="tutorial",
                   choices=["tutorial", "gpt2-small", "smollm-135m"],
                   help="the tutorial's full size (the default), or a decoder of that shape")
    p.add_argument("--models-dir",
                   help="where --model's folder is written (reused when there); default: a "
                        "temporary folder, removed afterwards")
    p.add_argument("--json", help="also write every measurement here")
    p.add_argument("--max-foreign", type=float, default=0.1,
                   help="repeat a run when other processes kept more than this many cores busy")
    p.add_argument("--tries", type=int, default=4)
    p.add_argument("--wait", type=float, default=120,
                   help="seconds to wait for a quiet machine before each run (0: do not wait)")
    a = p.parse_args()
    threads = list(dict.fromkeys(int(x) for x in a.threads.split(",")))  # each once, in order
    lengths = [int(x) for x in a.lengths.split(",")]
    folder, shapes_of = None, lambda n: "%dx512x1536,%dx512x2048,%dx2048x512" % (n, n, n)
    if a.model != "tutorial":
        tmp = None if a.models_dir else tempfile.TemporaryDirectory(prefix="attnviz-bench-")
        out = a.models_dir or tmp.name
        folder = os.path.join(out, a.model)
        if not os.path.exists(os.path.join(folder, "model.safetensors")):
            subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make_tutorial_checkpoints.py"),
                            "--out", out, "--bench", a.model], check=True)
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        if "n_embd" in cfg:  # GPT-2: c_attn [d → 3d], c_fc [d → 4d], c_proj [4d → d]
            dm, qkv, ff1, ff2 = cfg["n_embd"], 3 * cfg["n_embd"], 4 * cfg["n_embd"], 4 * cfg["n_embd"]
        else:  # Llama: q, k, v [d → (H + 2·KV)·hd] and gate | up [d → 2·ff] as attnviz runs them
            dm, ff2 = cfg["hidden_size"], cfg["intermediate_size"]
            hd = dm // cfg["num_attention_heads"]
            qkv = (cfg["num_attention_heads"] + 2 * cfg["num_key_value_heads"]) * hd
            ff1 = 2 * ff2
        shapes_of = lambda n: "%dx%dx%d,%dx%dx%d,%dx%dx%d" % (  # noqa: E731
            n, dm, qkv, n, dm, ff1, n, ff2, dm)
    busy = None
    if a.busy:
        busy = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
        time.sleep(0.5)
    results = {}  # (who, threads, tokens) -> [median_ms per round]
    foreign_load = {}  # (who, threads, tokens) -> [foreign cores per round]
    cpu_time = {}  # (who, threads, tokens) -> [median process CPU ms per pass, per round]
    flops = {}
    sgemm = {}  # threads -> [GFLOP/s per round]
    shaped = {}  # (threads, tokens) -> [GFLOP/s of OpenBLAS on the pass's linear shapes per round]

    def quietest_run(cmd, env=None):
        """cmd's JSON rows and foreign load: repeated (up to --tries) while other processes were
        busy, the quietest run kept."""
        best = None
        for _ in range(a.tries):
            wait_quiet(a.max_foreign + (1.0 if busy else 0.0), a.wait)
            rows, foreign = run_json(cmd, busy.pid if busy else None, env)
            if best is None or foreign < best[1]:
                best = (rows, foreign)
            if foreign <= a.max_foreign:
                break
        return best

    def sgemm_gflops(t, *args):
        """sgemm_rate.py's rate on t threads (2048³, or what args ask for)."""
        cmd = ["/usr/bin/python3", os.path.join(HERE, "sgemm_rate.py"), "--json", "--threads",
               str(t), *args]
        best = quietest_run(cmd)
        if len(best[0]) != 1:
            raise SystemExit("sgemm_rate.py printed %d rows for %d threads" % (len(best[0]), t))
        return best[0][0]["gflops"]

    def measure_pass_shapes(t, n):
        # Three linear layers of the benched model (by default `attnviz-cli bench`'s own, the
        # tutorial's full size, d_model 512, d_ff 2048): QKV, FFN1, FFN2.
        shapes = shapes_of(n)
        shaped.setdefault((t, n), []).append(sgemm_gflops(t, "--shapes", shapes))

    def measure(who, t, n):
        if who == "attnviz":
            cmd = [a.cli, "bench", "--json", "--forward-only", "--threads", str(t), "--lengths",
                   str(n), "--repeat", str(a.repeat)] + ([folder] if folder else [])
        else:
            cmd = ["/usr/bin/python3", os.path.join(HERE, "bench_torch.py"), "--json",
                   "--threads", str(t), "--lengths", str(n), "--repeat", str(a.repeat),
                   "--model", a.model]
        # torch.set_num_threads does not reach the OpenBLAS under Debian's PyTorch, which otherwise
        # runs its matrix products on every core: "1 thread" took two cores' CPU time on a 2-core
        # machine. Both programs get exactly t threads.
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(t), OMP_NUM_THREADS=str(t))
        best = quietest_run(cmd, env)
        for row in best[0]:
            if who == "torch" or row.get("what") == "forward_full_trace":
                results.setdefault((who, t, n), []).append(row["median_ms"])
                foreign_load.setdefault((who, t, n), []).append(best[1])
                if "gflop" in row:
                    flops[n] = row["gflop"]
            if who == "torch" or row.get("what") == "forward_full_trace":
                cpu_time.setdefault((who, t, n), []).append(row["cpu_median_ms"])

    try:
        for r in range(a.rounds):
            if not a.no_sgemm:
                for t in threads:
                    sgemm.setdefault(t, []).append(sgemm_gflops(t))
            for n in lengths:
                for t in threads:
                    if not a.no_pass_shapes:
                        measure_pass_shapes(t, n)
                    measure("attnviz", t, n)
                    if not a.no_torch:
                        measure("torch", t, n)
            print("round %d of %d done" % (r + 1, a.rounds), file=sys.stderr, flush=True)
    finally:
        if busy:
            busy.kill()
    med = {k: statistics.median(v) for k, v in results.items()}

    def shares(t, n, rates):
        """attnviz's t-thread rate at n tokens as a percentage of rates (a yardstick's GFLOP/s, one
        per round, measured beside the passes): of the medians, and the median of each round's
        own ratio (a drift of the machine's speed between rounds cancels)."""
        passes = results[("attnviz", t, n)]
        assert len(passes) == len(rates), "one of each per round"
        per_round = [flops[n] / ms * 1e3 / g * 100 for ms, g in zip(passes, rates)]
        return (flops[n] / med[("attnviz", t, n)] * 1e3 / statistics.median(rates) * 100,
                statistics.median(per_round))
    print("%s: forward pass, full trace, ms (median over %d rounds of the median of %d)%s"
          % (a.model, a.rounds, a.repeat,
             ", one core busy with another process" if a.busy else ""))
    head = "| tokens |" + "".join(" attnviz %dt |" % t for t in threads)
    if not a.no_torch:
        head += "".join(" PyTorch %dt |" % t for t in threads)
        head += "".join(" PyTorch %dt / attnviz %dt |" % (t, t) for t in threads)
    head += "".join(" attnviz 1t / %dt |" % t for t in threads if t != 1 and 1 in threads)
    head += " attnviz GFLOP/s (%s) |" % ", ".join("%dt" % t for t in threads)
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for n in lengths:
        line = "| %d |" % n
        line += "".join(" %.1f |" % med[("attnviz", t, n)] for t in threads)
        if not a.no_torch:
            line += "".join(" %.1f |" % med[("torch", t, n)] for t in threads)
            line += "".join(" %.2f× |" % (med[("torch", t, n)] / med[("attnviz", t, n)])
                            for t in threads)
        line += "".join(" %.2f× |" % (med[("attnviz", 1, n)] / med[("attnviz", t, n)])
                        for t in threads if t != 1 and 1 in threads)
        line += " %s |" % ", ".join("%.0f" % (flops[n] / med[("attnviz", t, n)] * 1e3)
                                    for t in threads)
        print(line, flush=True)
    if not a.no_torch:
        # Each round's PyTorch and attnviz ran one after the other: their ratio round by round
        # cancels a drift of the machine's speed between rounds.
        print("\nPyTorch / attnviz round by round (the median of these ratios):")
        for n in lengths:
            for t in threads:
                r = [p / q for p, q in zip(results[("torch", t, n)], results[("attnviz", t, n)])]
                print("  %d tokens, %d thread%s: %s (median %.2f×)"
                      % (n, t, "" if t == 1 else "s", " ".join("%.2f" % x for x in r),
                         statistics.median(r)))
    if sgemm:
        rate = {t: statistics.median(v) for t, v in sgemm.items()}
        print("\nsgemm 2048³ (numpy on OpenBLAS) measured in each round, GFLOP/s: %s (median over"
              " rounds; per round: %s)"
              % (", ".join("%.1f at %dt" % (rate[t], t) for t in threads),
                 "; ".join("%dt %s" % (t, " ".join("%.1f" % x for x in sgemm[t]))
                           for t in threads)))
        print("| tokens |" + "".join(" attnviz %dt / sgemm %dt (of medians; median per round) |"
                                     % (t, t) for t in threads))
        print("|---|" + "---|" * len(threads))
        for n in lengths:
            print("| %d |" % n + "".join(" %.0f %%; %.0f %% |" % shares(t, n, sgemm[t])
                                         for t in threads))
    if shaped:
        # Measured just before the pass at the same length and thread count, in every round.
        print("\nOpenBLAS's own threads on three of the pass's linear-layer products (%s at the"
              " first length), GFLOP/s, median over rounds (per round), and the whole pass's rate"
              " as a share of it (of medians; median per round)"
              % shapes_of(lengths[0]).replace(",", " + "))
        print("| tokens |" + "".join(" OpenBLAS %dt |" % t for t in threads)
              + "".join(" attnviz %dt / OpenBLAS %dt |" % (t, t) for t in threads))
        print("|---|" + "---|" * (2 * len(threads)))
        for n in lengths:
            line = "| %d |" % n
            line += "".join(" %.1f (%s) |" % (statistics.median(shaped[(t, n)]),
                                               " ".join("%.0f" % x for x in shaped[(t, n)]))
                            for t in threads)
            line += "".join(" %.0f %%; %.0f %% |" % shares(t, n, shaped[(t, n)]) for t in threads)
            print(line)
    if 1 in threads and not a.no_torch:
        cpu = {k: statistics.median(v) for k, v in cpu_time.items()}
        print("\nCPU time per pass on 1 thread, ms (less sensitive to other processes than the"
              " wall time)")
        print("| tokens | attnviz 1t | PyTorch 1t | PyTorch / attnviz |\n|---|---|---|---|")
        for n in lengths:
            print("| %d | %.1f | %.1f | %.2f× |" % (n, cpu[("attnviz", 1, n)], cpu[("torch", 1, n)],
                                                  cpu[("torch", 1, n)] / cpu[("attnviz", 1, n)]))
    worst = max(max(v) for v in foreign_load.values())
    print("other processes kept at most %.2f cores busy during a kept run (median %.2f)"
          % (worst, statistics.median(x for v in foreign_load.values() for x in v)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"busy": a.busy, "rounds": a.rounds, "repeat": a.repeat,
                       "results": [{"who": k[0], "threads": k[1], "tokens": k[2], "median_ms": v,
                                    "foreign_cores": foreign_load[k],
                                    "cpu_ms": cpu_time.get(k, [])}
                                   for k, v in results.items()],
                       "gflop_per_pass": {str(n): v for n, v in flops.items()},
                       "sgemm_gflops": {str(t): v for t, v in sgemm.items()},
                       "pass_shapes_gflops": [{"threads": k[0], "tokens": k[1], "gflops": v}
                                              for k, v in shaped.items()]}, f, indent=1)


if __name__ == "__main__":
    main()
