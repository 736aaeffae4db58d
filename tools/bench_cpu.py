"""attnviz's CPU forward pass against PyTorch's, alternated so that both see the same machine:
each round runs `attnviz-cli bench` and tools/bench_torch.py once per thread count, and the table
gives the median over rounds of each one's median. --busy keeps one core busy with another
process (a Python loop) the whole time, as a user's machine often is.
usage: /usr/bin/python3 tools/bench_cpu.py [--cli build/app/attnviz-cli] [--lengths 32,128,512]
           [--threads 1,2] [--rounds 3] [--repeat 5] [--busy] [--no-torch] [--json FILE]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip().startswith("{")]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cli", default=os.path.join(HERE, "..", "build", "app", "attnviz-cli"))
    p.add_argument("--lengths", default="32,128,512")
    p.add_argument("--threads", default="1,%d" % len(os.sched_getaffinity(0)))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--busy", action="store_true", help="keep one core busy meanwhile")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--json", help="also write every measurement here")
    a = p.parse_args()
    threads = [int(x) for x in a.threads.split(",")]
    lengths = [int(x) for x in a.lengths.split(",")]
    busy = None
    if a.busy:
        busy = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
        time.sleep(0.5)
    results = {}  # (who, threads, tokens) -> [median_ms per round]
    flops = {}
    try:
        for r in range(a.rounds):
            for t in threads:
                rows = run_json([a.cli, "bench", "--json", "--threads", str(t), "--lengths",
                                 a.lengths, "--repeat", str(a.repeat)])
                for row in rows:
                    if row.get("what") == "forward_full_trace":
                        results.setdefault(("attnviz", t, row["tokens"]), []).append(
                            row["median_ms"])
                        flops[row["tokens"]] = row["gflop"]
                if not a.no_torch:
                    for row in run_json(["/usr/bin/python3", os.path.join(HERE, "bench_torch.py"),
                                         "--json", "--threads", str(t), "--lengths", a.lengths,
                                         "--repeat", str(a.repeat)]):
                        results.setdefault(("torch", t, row["tokens"]), []).append(
                            row["median_ms"])
            print("round %d of %d done" % (r + 1, a.rounds), file=sys.stderr, flush=True)
    finally:
        if busy:
            busy.kill()
    med = {k: statistics.median(v) for k, v in results.items()}
    print("forward pass, full trace, ms (median over %d rounds of the median of %d)%s"
          % (a.rounds, a.repeat, ", one core busy with another process" if a.busy else ""))
    head = "| tokens |" + "".join(" attnviz %dt |" % t for t in threads)
    if not a.no_torch:
        head += "".join(" PyTorch %dt |" % t for t in threads)
        head += "".join(" PyTorch %dt / attnviz %dt |" % (t, t) for t in threads)
    head += "".join(" attnviz 1t / %dt |" % t for t in threads if t != 1)
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
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"busy": a.busy, "rounds": a.rounds, "repeat": a.repeat,
                       "results": [{"who": k[0], "threads": k[1], "tokens": k[2], "median_ms": v}
                                   for k, v in results.items()]}, f, indent=1)


if __name__ == "__main__":
    main()
