"""Running out of GPU memory for real, mid-request, and the request redone on the CPU
(core/model/cpu_fallback.h): scripts/gpu-check.sh's `oom-fallback` check.

This process fills the GPU with a PyTorch allocation, leaving --keep-gib free, and holds it while
`attnviz-cli run --backend cuda` runs a one-layer, 32-head decoder-only model (written here with
tools/reference_models.py, random weights) on --tokens tokens: the model's weights and the CUDA
context fit in what is left, the pass's working set (its attention scores and probabilities on the
GPU, 2 · heads · tokens² floats: 1.4 GiB at 2,400 tokens) does not. Checked:
  - the run exits 0 and says on stderr that the GPU ran out of memory and the run was redone on the
    CPU; its timing line names the CPU;
  - its dump (--dump: every probability, score, logit) is byte for byte that of `--backend cpu`;
  - a short run with the GPU still full runs on CUDA, without the note (the backend stays usable).
The host trace of the long run is 0.7 GiB of probabilities (its scores are recomputed from q and
k), under the CLI's 4 GiB limit; each dump is 1.5 GB. About 30 s on an H100 (estimated: the
rehearsal below took 80 s on a busy 2-core machine, most of it writing and hashing the dumps).

usage: gpu_oom_check.py --cli build-gpu/app/attnviz-cli [--work DIR] [--tokens N] [--keep-gib G]
       gpu_oom_check.py --cli build/app/cli/attnviz-cli --rehearse BYTES [--tokens 600]
           without a GPU: the CPU backend limited to BYTES by the test hook
           ATTNVIZ_TEST_MEMORY_LIMIT stands in for the full GPU (this script's own logic, on the
           host; nothing about the GPU)
exit: 0 passed; 1 failed; 77 skipped (no PyTorch, or no CUDA device PyTorch can use), with the
reason on the last line.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time

SKIP = 77
NOTE = "the GPU ran out of memory ("
REDONE = "): this run was redone on the CPU"


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


def fail(why):
    print("FAIL: " + why)
    sys.exit(1)


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def dump_digests(folder):
    return {name: digest(os.path.join(folder, name)) for name in sorted(os.listdir(folder))}


def run_cli(cli, args, env=None):
    t0 = time.time()
    p = subprocess.run([cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=env)
    return p, time.time() - t0


def fill_gpu(torch, keep_bytes):
    """Allocates device memory until about keep_bytes are free; returns the tensors (hold them)."""
    held = []
    chunk = 1 << 30
    while chunk >= (16 << 20):
        free, _ = torch.cuda.mem_get_info()
        if free - chunk < keep_bytes:
            chunk //= 2
            continue
        held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
    torch.cuda.synchronize()
    return held


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True, help="attnviz-cli built with the CUDA plugin")
    ap.add_argument("--work", help="folder for the model and the dumps (default: a temporary one)")
    ap.add_argument("--tokens", type=int, default=2400)
    ap.add_argument("--keep-gib", type=float, default=1.25,
                    help="GPU memory left free for attnviz's CUDA context and weights")
    ap.add_argument("--rehearse", type=int, metavar="BYTES",
                    help="no GPU: the CPU backend limited to BYTES stands in for the full GPU")
    a = ap.parse_args()
    if not os.access(a.cli, os.X_OK):
        fail("no attnviz-cli at " + a.cli)
    try:
        import torch
    except ImportError as e:
        skip("PyTorch is not installed here (%s): it fills the GPU" % e)
    if a.rehearse is None and not torch.cuda.is_available():
        skip("PyTorch sees no CUDA device (torch %s, built for CUDA %s)"
             % (torch.__version__, torch.version.cuda))
    # The backend under test and the environment of its runs with the GPU full.
    backend, shown, full_env = "cuda", " on CUDA", None
    if a.rehearse is not None:
        backend, shown = "cpu", " on CPU"
        full_env = dict(os.environ, ATTNVIZ_TEST_MEMORY_LIMIT=str(a.rehearse))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import reference_models as rm

    work = a.work or tempfile.mkdtemp(prefix="gpu-oom-")
    os.makedirs(work, exist_ok=True)
    n, heads = a.tokens, 32
    torch.manual_seed(27)
    vocab = ["P", "S", "E"] + ["w%d" % i for i in range(29)]
    model = rm.S3GPTModel(vocab, d_model=128, d_ff=256, d_k=8, d_v=8, n_heads=heads, n_layers=1,
                          pad_id=0, bos_id=1, eos_id=2, max_len=n + 8, name="oom-check",
                          description="gpu_oom_check.py: one layer, 32 heads, random weights")
    model_path = os.path.join(work, "oom_model.safetensors")
    rm.save_model(model, model_path)
    ids = [1] + [3 + (7 * i) % (len(vocab) - 3) for i in range(n - 1)]
    long_args = ["run", model_path, "--tgt-ids", ",".join(map(str, ids))]
    short_args = ["run", model_path, "--tgt-ids", "1,3,4,5"]
    print("model: %s (%d tokens, %d heads: %.1f GiB of scores and probabilities on the GPU)"
          % (model_path, n, heads, 2 * heads * n * n * 4 / 2**30))

    # The GPU as it is: the short run on CUDA (else attnviz cannot use this GPU at all).
    p, _ = run_cli(a.cli, short_args + ["--backend", backend])
    if p.returncode != 0:
        fail("attnviz-cli run --backend %s on 4 tokens, with the GPU free: exit %d: %s"
             % (backend, p.returncode, p.stderr.strip()[-400:]))

    held = []
    if a.rehearse is None:
        held = fill_gpu(torch, int(a.keep_gib * 2**30))
        left, total = torch.cuda.mem_get_info()
        print("GPU: %s, %.1f GiB; %.1f GiB held by PyTorch, %.2f GiB left free"
              % (torch.cuda.get_device_name(0), total / 2**30,
                 sum(t.numel() for t in held) / 2**30, left / 2**30))
    else:
        print("rehearsal: the CPU backend limited to %d bytes stands in for the full GPU" % a.rehearse)

    cuda_dump, cpu_dump = os.path.join(work, "cuda"), os.path.join(work, "cpu")
    p, took = run_cli(a.cli, long_args + ["--backend", backend, "--dump", cuda_dump], full_env)
    print("attnviz-cli run --backend %s (%d tokens, GPU full): exit %d in %.1f s"
          % (backend, n, p.returncode, took))
    print("  stderr: " + p.stderr.strip()[-600:])
    if p.returncode != 0:
        fail("the run that ran out of GPU memory exited %d: %s"
             % (p.returncode, p.stderr.strip()[-400:]))
    if NOTE not in p.stderr or REDONE not in p.stderr:
        fail("no note that the run was redone on the CPU on stderr: " + p.stderr.strip()[-400:])
    timing = [line for line in p.stdout.splitlines() if line.startswith("forward pass:")]
    if not timing or " on CPU" not in timing[0]:
        fail("the timing line does not name the CPU: %s" % timing)

    # With the GPU still full, a short run fits: CUDA, no note.
    p, _ = run_cli(a.cli, short_args + ["--backend", backend], full_env)
    if p.returncode != 0 or NOTE in p.stderr or shown not in p.stdout:
        fail("the short run with the GPU full: exit %d, stdout %s, stderr %s"
             % (p.returncode, p.stdout.strip()[-300:], p.stderr.strip()[-300:]))
    del held
    if a.rehearse is None:
        torch.cuda.empty_cache()

    p, took = run_cli(a.cli, long_args + ["--backend", "cpu", "--dump", cpu_dump])
    print("attnviz-cli run --backend cpu: exit %d in %.1f s" % (p.returncode, took))
    if p.returncode != 0:
        fail("the CPU run exited %d: %s" % (p.returncode, p.stderr.strip()[-400:]))
    got, want = dump_digests(cuda_dump), dump_digests(cpu_dump)
    if sorted(got) != sorted(want):
        fail("the dumps hold different files: %s vs %s" % (sorted(got), sorted(want)))
    differ = [name for name in want if got[name] != want[name]]
    if differ:
        fail("the redone run's dump differs from --backend cpu's in %s" % differ)
    print("oom-fallback: ran out of %s memory, redone on the CPU, the note given, %d dump files "
          "identical to --backend cpu's; a short run with the memory full ran on %s"
          % ("GPU" if a.rehearse is None else "(rehearsal) limited", len(want), backend))


if __name__ == "__main__":
    main()
