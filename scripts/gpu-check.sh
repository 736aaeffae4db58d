#!/usr/bin/env bash
# The CUDA backend on a bare GPU machine, in one command (docs/gpu.md gives the device-tool call):
#   build      the CLI, the CUDA plugin and the plain backend checks, for the GPU found here only
#              (nvidia-smi's compute capability, e.g. 90-real on an H100/H200), without Qt, with the
#              Eigen and nlohmann-json headers carried in .deps/ (scripts/fetch-gpu-deps.sh)
#   ops        every backend op on CUDA against the CPU backend and a double reference
#              (backend_checks --large: also score buffers past 2³¹ floats, out of memory mid-way
#              then the same results again); and on the CPU, as the control. The summary counts
#              the cases of the modern parts (the norms, rotary embeddings, grouped-query
#              attention, gated feed-forward) that passed on CUDA, per op
#   memcheck-modern  those cases under compute-sanitizer memcheck, early (they are few and small)
#   fault      a kernel fault on purpose: the backend reports itself unusable, with and without
#              ATTNVIZ_CUDA_SYNC=1 (which must name the op)
#   parity     every case of tests/data through `attnviz-cli run --dump` and `decode`, compared
#              with the PyTorch references (tools/compare_dump.py), on CUDA and on the CPU
#   sync-mode  one case again under ATTNVIZ_CUDA_SYNC=1
#   memcheck, racecheck, initcheck   a forward pass and a greedy decode on a small model under
#              compute-sanitizer; memcheck-ops: the op checks under memcheck (last, if time is left)
#   eager      a forward pass with CUDA_MODULE_LOADING=EAGER (every kernel loaded at start)
#   no-plugin  the programs without the plugin or with broken CUDA libraries (tests/…absent.sh)
#   train-cuda a short training run on the CPU and on CUDA, compared step by step
#              (tools/compare_train_logs.py: loss, gradient norm, accuracy, the final evaluation)
#   bench      attnviz-cli bench --backend cuda at 32 … 2048 tokens (tutorial size; 4096 needs a
#              10.9 GiB trace, over the CLI's 4 GiB limit)
#   torch      the same model in PyTorch on the same GPU (tools/bench_torch_cuda.py)
#   gpt2-bench a GPT-2-small-sized decoder (random weights) in attnviz and in PyTorch, 32 … 1024
# Every check runs whatever failed before. Writes OUTDIR/gpu-check-summary.txt (device, driver,
# versions, PASS/FAIL/SKIPPED per check, the timings) and OUTDIR/gpu-check-logs.tar.gz (a log per
# check), and prints the summary. Without a GPU (a dry run) the CUDA checks are SKIPPED with the
# reason and the CPU checks still run.
# exit: 0 when no check failed, timed out or was left out for time; 1 otherwise; 2 usage.
# usage: scripts/gpu-check.sh OUTDIR
# env:   GPU_CHECK_BUDGET (seconds for the whole run, default 540), GPU_CHECK_ARCH (e.g. 90-real;
#        default: the GPU's, or 90-real without one), GPU_CHECK_BUILD (build folder, build-gpu),
#        GPU_CHECK_LENGTHS (bench lengths, 32,128,512,1024,2048), GPU_CHECK_SKIP (names of
#        checks to leave out, space-separated, e.g. those an earlier run of the same tree passed:
#        recorded SKIPPED with that reason), GPU_CHECK_REPEAT (timed runs of the long lengths and
#        of gpt2-bench, 3), JOBS (nproc)
set -uo pipefail # not -e: a failed check must not stop the others

if [[ $# -ne 1 ]]; then
  echo "usage: scripts/gpu-check.sh OUTDIR" >&2
  exit 2
fi
out=$(mkdir -p "$1" && cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
start=$SECONDS
budget=${GPU_CHECK_BUDGET:-540}
jobs=${JOBS:-$(nproc)}
build=$root/${GPU_CHECK_BUILD:-build-gpu}
lengths=${GPU_CHECK_LENGTHS:-32,128,512,1024,2048}
gpt2_lengths=32,128,512,1024 # GPT-2 small has 1,024 positions
repeat=${GPU_CHECK_REPEAT:-3} # timed runs of each long length and of gpt2-bench
skip_list=" ${GPU_CHECK_SKIP:-} "
work=$(mktemp -d /tmp/gpu-check.XXXXXX)
logs=$work/logs
mkdir -p "$logs"
summary=$out/gpu-check-summary.txt
cli=$build/app/attnviz-cli
checks=$build/tests/backend_checks
plugin=$build/gpu/libattnviz_cuda.so
small_model=tests/data/nlp_tiny.safetensors

# ---- results ----
names=() results=() times=() details=()
record() { # NAME RESULT SECONDS DETAIL
  names+=("$1") results+=("$2") times+=("$3") details+=("$4")
  printf '== %-18s %-8s %4s s  %s\n' "$1" "$2" "$3" "$4"
}
elapsed() { echo $((SECONDS - start)); }

# The last line of a log that reads like a result ("N passed, N failed", SKIP …, FAIL …).
log_detail() {
  local line
  line=$(grep -E '([0-9]+ passed|^SKIP|^FAIL|error:|ERROR SUMMARY|unavailable:)' "$1" | tail -1)
  [[ -z $line ]] && line=$(grep -v '^[[:space:]]*$' "$1" | tail -1)
  echo "${line:0:300}"
}

# run_check NAME TIMEOUT CUDA(0|1) COMMAND...: runs COMMAND — a program or one of the step
# functions below (exported, run by a child bash, so that `timeout` can stop it and all it started)
# — with its output in logs/NAME.log, and records PASS (exit 0), SKIPPED (77, or a CUDA check whose
# CLI said "CUDA backend unavailable"), TIMEOUT (124/137) or FAIL. A CUDA check that skips although
# nvidia-smi sees a GPU is a FAIL: attnviz should be able to use that GPU. A check that would start
# past the time budget is recorded NOT RUN.
run_check() {
  local name=$1 limit=$2 cuda=$3
  shift 3
  local log=$logs/$name.log
  if [[ $skip_list == *" $name "* ]]; then
    record "$name" SKIPPED 0 "left out by GPU_CHECK_SKIP"
    return
  fi
  if (($(elapsed) + 10 > budget)); then
    record "$name" "NOT RUN" 0 "the time budget of ${budget} s was spent"
    return
  fi
  local left=$((budget - $(elapsed)))
  ((limit > left)) && limit=$left
  local t0=$SECONDS rc
  {
    echo "\$ $*"
    timeout --kill-after=10 "$limit" bash -c '"$@"' "$name" "$@"
  } >"$log" 2>&1
  rc=$?
  local took=$((SECONDS - t0)) detail result
  detail=$(log_detail "$log")
  if [[ $rc -ne 0 && $cuda == 1 ]] && grep -q "CUDA backend unavailable" "$log"; then
    rc=77
    detail=$(grep -m1 -o "CUDA backend unavailable.*" "$log")
  elif [[ $rc -eq 77 ]] && grep -q "unavailable: " "$log"; then
    detail=$(grep -m1 -o "unavailable: .*" "$log")
  fi
  case $rc in
    0) result=PASS ;;
    77) result=SKIPPED ;;
    124 | 137) result=TIMEOUT detail="after ${limit} s; $detail" ;;
    *) result=FAIL detail="exit $rc: $detail" ;;
  esac
  if [[ $result == SKIPPED && $cuda == 1 && $have_gpu == 1 ]]; then
    result=FAIL detail="a GPU is present but: $detail"
  fi
  record "$name" "$result" "$took" "${detail:0:400}"
}

# skip_check NAME WHY: a check that cannot run here at all.
skip_check() { record "$1" SKIPPED 0 "$2"; }

# ---- the machine ----
have_gpu=0
gpu_info="none"
no_gpu_reason="nvidia-smi is not installed"
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu_info=$(nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)
  if [[ $gpu_info =~ ^[^,]+,\ *[0-9]+\.[0-9]+, ]]; then
    have_gpu=1
  else
    no_gpu_reason="nvidia-smi: $gpu_info"
  fi
fi
arch=${GPU_CHECK_ARCH:-}
if [[ -z $arch ]]; then
  if ((have_gpu)); then
    cc=$(echo "$gpu_info" | cut -d, -f2 | tr -d ' .')
    arch=${cc}-real
  else
    arch=90-real # as on the lent H100 / H200, so that a dry run builds what the device builds
  fi
fi
python=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c "import numpy" >/dev/null 2>&1; then
    python=$(command -v "$p")
    break
  fi
done
# first_of NAME PATH...: NAME on the PATH, else the first PATH that is executable.
first_of() {
  command -v "$1" && return
  shift
  local p
  for p in "$@"; do [[ -x $p ]] && echo "$p" && return; done
}
sanitizer=$(first_of compute-sanitizer /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer)
nvcc=$(first_of nvcc /usr/local/cuda/bin/nvcc)

{
  echo "date:      $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host:      $(uname -srm), $(nproc) cores"
  echo "gpu:       $gpu_info"
  ((have_gpu)) || echo "no GPU:    $no_gpu_reason"
  echo "nvcc:      $([[ -n $nvcc ]] && "$nvcc" --version | tail -2 | head -1 || echo "not found")"
  echo "cmake:     $(cmake --version | head -1)"
  echo "c++:       $(c++ --version | head -1)"
  echo "python:    ${python:-none with numpy} $([[ -n $python ]] && "$python" -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)')"
  echo "torch:     $([[ -n $python ]] && "$python" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1)"
  echo "sanitizer: ${sanitizer:-not found} $([[ -n $sanitizer ]] && "$sanitizer" --version 2>&1 | grep -i version | head -1)"
  echo "source:    $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo "no git metadata"), built for CUDA architecture $arch"
  ((have_gpu)) && nvidia-smi
} >"$logs/machine.log" 2>&1

# ---- build ----
# The step functions run in a child bash (run_check): they see exported variables only.
deps=""
[[ -d .deps/root ]] && deps=$root/.deps/root/usr/share
if [[ -n $deps ]]; then
  # libzip from .deps: its pkg-config file (its prefix relative to the file, written so by
  # fetch-gpu-deps.sh; no PKG_CONFIG_SYSROOT_DIR, which would also move the machine's own packages,
  # OpenBLAS's include folder among them) for the build, its library for every program run.
  droot=$root/.deps/root
  export PKG_CONFIG_PATH=$droot/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=$droot/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
export root build jobs arch nvcc deps cli checks plugin small_model python sanitizer
build_it() {
  local found=()
  if [[ -n $deps ]]; then
    found=(-DEigen3_DIR="$deps/eigen3/cmake" -Dnlohmann_json_DIR="$deps/cmake/nlohmann_json")
    command -v pkg-config >/dev/null || found+=(-DPKG_CONFIG_EXECUTABLE="$root/.deps/root/usr/bin/pkgconf")
  elif [[ ! -f /usr/share/eigen3/cmake/Eigen3Config.cmake ]]; then
    echo "no Eigen here and no .deps/: run scripts/fetch-gpu-deps.sh before the device call and carry .deps"
    return 1
  fi
  [[ -n $nvcc ]] || { echo "nvcc not found"; return 1; }
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNVIZ_GUI=OFF \
    -DCMAKE_DISABLE_FIND_PACKAGE_Qt6=ON -DATTNVIZ_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" "${found[@]}" || return 1
  cmake --build "$build" -j"$jobs" --target attnviz-cli backend_checks attnviz_cuda || return 1
  [[ -x $cli && -x $checks && -f $plugin ]] || { echo "a built file is missing"; return 1; }
  echo "built: $(du -h "$cli" "$checks" "$plugin" | tr '\t\n' '  ')"
}
export -f build_it
run_check build 360 0 build_it
built=0
[[ ${results[0]} == PASS ]] && built=1

# needs_build NAME: records NAME as FAIL when there is nothing to run; returns non-zero then.
needs_build() {
  ((built)) && return 0
  record "$1" FAIL 0 "not run: the build failed"
  return 1
}
needs_python() {
  [[ -n $python ]] && return 0
  record "$1" SKIPPED 0 "no python3 with numpy here"
  return 1
}

# ---- correctness ----
needs_build ops-cpu && run_check ops-cpu 180 0 "$checks" --backend cpu
needs_build ops-cuda && run_check ops-cuda 300 1 "$checks" --backend cuda --large
# The modern parts' cases: every norm, rope and gated case, and the attention cases whose names
# say 1 to 4 key/value heads (every grouped one, and a few multi-head ones with as few heads).
modern_filters=(--filter "norm" --filter "rope" --filter "gated_activation")
for kv in 1 2 3 4; do modern_filters+=(--filter "kv_heads=$kv "); done
# memcheck_ops NAME LIMIT ARGS...: backend_checks --backend cuda ARGS under memcheck, where there
# is a GPU and a compute-sanitizer.
memcheck_ops() {
  local name=$1 limit=$2
  shift 2
  needs_build "$name" || return
  if ((!have_gpu)); then
    skip_check "$name" "no GPU: $no_gpu_reason"
  elif [[ -z $sanitizer ]]; then
    skip_check "$name" "compute-sanitizer not found"
  else
    run_check "$name" "$limit" 1 "$sanitizer" --tool memcheck --error-exitcode 86 "$checks" \
      --backend cuda "$@"
  fi
}
memcheck_ops memcheck-modern 150 "${modern_filters[@]}"
if needs_build fault; then
  fault() {
    "$checks" --backend cuda --fault || return $?
    ATTNVIZ_CUDA_SYNC=1 "$checks" --backend cuda --fault
  }
  export -f fault
  run_check fault 90 1 fault
fi
# oom-fallback: with PyTorch holding all but ~1.25 GiB of the GPU, `attnviz-cli run --backend cuda`
# on an input whose working set needs 1.4 GiB runs out, is redone on the CPU (exit 0, a note on
# stderr) and dumps what --backend cpu dumps; a short run still fits on CUDA. SKIPPED without torch.
if needs_build oom-fallback && needs_python oom-fallback; then
  run_check oom-fallback 90 0 "$python" tools/gpu_oom_check.py --cli "$cli" --work "$work/oom"
fi
if needs_build parity-cpu && needs_python parity-cpu; then
  run_check parity-cpu 180 0 "$python" tools/compare_dump.py --cli "$cli" --backend cpu --work "$work/parity-cpu"
fi
if needs_build parity-cuda && needs_python parity-cuda; then
  run_check parity-cuda 240 1 "$python" tools/compare_dump.py --cli "$cli" --backend cuda --work "$work/parity-cuda"
fi
# transformers as the judge (tools/hf_judge.py): its models saved and compared with attnviz on the
# CPU and, with a GPU, on CUDA; SKIPPED (77) where transformers is not installed.
if needs_build hf-judge && needs_python hf-judge; then
  hf_backends=cpu
  ((have_gpu)) && hf_backends=cpu,cuda
  run_check hf-judge 120 0 "$python" tools/hf_judge.py --cli "$cli" --backends "$hf_backends" \
    --out "$out/hf-judge" --work "$work/hf-judge"
fi
if needs_build sync-mode && needs_python sync-mode; then
  run_check sync-mode 120 1 env ATTNVIZ_CUDA_SYNC=1 "$python" tools/compare_dump.py --cli "$cli" \
    --backend cuda --cases torch_pre --work "$work/parity-sync"
fi
if needs_build train-cuda && needs_python train-cuda; then
  # The same seed, batches and schedule on both backends; no dropout (its draws are the backend's).
  train_cuda() {
    local b
    for b in cpu cuda; do
      echo "\$ attnviz-cli train --backend $b …"
      "$cli" train --backend "$b" --task reverse --size small --steps 40 --batch 32 --seed 3 \
        --eval-every 20 --eval-size 16 --out "$work/train-$b.safetensors" \
        --log "$work/train-$b.json" || return $?
    done
    "$python" tools/compare_train_logs.py "$work/train-cpu.json" "$work/train-cuda.json"
  }
  export -f train_cuda
  export work
  run_check train-cuda 120 1 train_cuda
fi
if needs_build no-plugin; then
  run_check no-plugin 120 0 bash tests/cuda_plugin_absent.sh "$cli" "$checks" "$small_model" "$plugin"
fi

# ---- compute-sanitizer on a small model ----
# "--src-ids … --tgt-ids …" of the small model's first reference sentence (word-split on use).
small_ids=""
if [[ -n $python ]]; then
  small_ids=$("$python" tools/compare_dump.py --print-ids tests/data/nlp_tiny.ref.safetensors)
fi
export small_ids
for tool in memcheck racecheck initcheck; do
  needs_build "$tool" || continue
  if ((!have_gpu)); then
    skip_check "$tool" "no GPU: $no_gpu_reason"
  elif [[ -z $sanitizer ]]; then
    skip_check "$tool" "compute-sanitizer not found"
  elif [[ -z $small_ids ]]; then
    skip_check "$tool" "no python3 with numpy to read the small model's inputs"
  else
    # A forward pass; under memcheck also a greedy decode (the decode step's kernels and copies).
    sanitize() {
      local tool=$1
      # shellcheck disable=SC2086 # small_ids is "--src-ids … --tgt-ids …"
      "$sanitizer" --tool "$tool" --error-exitcode 86 "$cli" run "$small_model" --backend cuda \
        $small_ids || return $?
      [[ $tool != memcheck ]] && return 0
      "$sanitizer" --tool "$tool" --error-exitcode 86 "$cli" decode "$small_model" --backend cuda \
        --src-ids 1,2,5 --max-len 8 --ids
    }
    export -f sanitize
    run_check "$tool" 120 1 sanitize "$tool"
  fi
done

# ---- module loading ----
if needs_build eager; then
  # shellcheck disable=SC2086 # small_ids is "--src-ids … --tgt-ids …"
  eager() {
    local t0 t1 t2
    t0=$(date +%s%N)
    "$cli" run "$small_model" --backend cuda $small_ids || return $?
    t1=$(date +%s%N)
    CUDA_MODULE_LOADING=EAGER "$cli" run "$small_model" --backend cuda $small_ids || return $?
    t2=$(date +%s%N)
    echo "process wall time: lazy loading $(((t1 - t0) / 1000000)) ms, CUDA_MODULE_LOADING=EAGER $(((t2 - t1) / 1000000)) ms"
  }
  export -f eager
  if [[ -z $small_ids ]]; then
    skip_check eager "no python3 with numpy to read the small model's inputs"
  else
    run_check eager 60 1 eager
  fi
fi

# ---- timings ----
if needs_build bench; then
  # Short lengths in one process (one model build and upload), the long ones one each.
  # Does bench know --uncached (the no-cache decode as an opt-in)? Its parser stops at the first
  # unknown option, so this runs nothing.
  uncached_opt_in=0
  probe=$("$cli" bench --uncached --gpu-check-probe 2>&1)
  [[ $probe == *"unknown option --gpu-check-probe"* || $probe == *"not expected: --gpu-check-probe"* ]] &&
    uncached_opt_in=1
  short="" long=""
  for n in ${lengths//,/ }; do
    if ((n < 1024)); then short+=${short:+,}$n; else long+=" $n"; fi
  done
  [[ -n $short ]] && run_check "bench-$short" 180 1 "$cli" bench --backend cuda --lengths "$short" --repeat 5
  for n in $long; do
    if ((!uncached_opt_in)); then
      record "bench-$n" SKIPPED 0 "this attnviz-cli bench always times uncached decoding (n full passes, O(n³) copies): needs bench --uncached as an opt-in"
      continue
    fi
    run_check "bench-$n" 180 1 "$cli" bench --backend cuda --lengths "$n" --repeat "$repeat"
  done
fi
if needs_python torch; then
  run_check torch 300 1 "$python" tools/bench_torch_cuda.py --lengths "$lengths" --repeat 3
fi
if needs_build gpt2-bench && needs_python gpt2-bench; then
  # A GPT-2-small-sized folder (random weights, written as save_pretrained writes it), then the
  # same lengths in attnviz and in PyTorch, one after the other on the same GPU.
  gpt2_bench() {
    "$python" tools/make_tutorial_checkpoints.py --out "$work/models" --bench gpt2-small || return 1
    "$cli" bench "$work/models/gpt2-small" --backend cuda --lengths "$gpt2_lengths" \
      --repeat "$repeat" || return $?
    "$python" tools/bench_torch_cuda.py --model gpt2-small --lengths "$gpt2_lengths" --repeat "$repeat"
  }
  export -f gpt2_bench
  export gpt2_lengths work repeat
  run_check gpt2-bench 200 1 gpt2_bench
fi

# ---- the op checks under memcheck, with what time is left ----
memcheck_ops memcheck-ops 240

# ---- summary ----
# modern_parts: per op of the modern parts, how many of its cases passed on CUDA (ops-cuda.log);
# the attention ops count their grouped-query cases only (fewer key/value heads than heads).
modern_parts() {
  local log=$logs/ops-cuda.log
  [[ -f $log ]] && grep -q '^[A-Z]* cuda/[a-z]' "$log" || {
    echo "  none ran on CUDA (see ops-cuda)"
    return
  }
  awk '$2 ~ /^cuda\// {
      op = substr($2, 6)
      if (op ~ /^attention_/ && match($0, / H=[0-9]+ kv_heads=[0-9]+ /)) {
        split(substr($0, RSTART + 1, RLENGTH - 2), f, /[ =]/)
        if (f[2] == f[4]) next
        op = op " (grouped-query)"
      } else if (op !~ /^(norm|rope|gated_activation)/) next
      total[op]++
      if ($1 == "PASS") passed[op]++
    }
    END { for (op in total) printf "  %-44s %d of %d cases passed\n", op, passed[op], total[op] }' "$log" |
    sort
}
# bench_figure N LABEL [LOG...]: the first number after LABEL in the block "n = N tokens" of the
# bench logs (the tutorial's, or the LOGs named).
bench_figure() {
  local n=$1 label=$2
  shift 2
  (($# > 0)) || set -- "$logs"/bench-*.log
  cat "$@" 2>/dev/null |
    awk -v n="$n" -v label="$label" '
      /^n = [0-9]+ tokens/ { inside = ($3 == n) }
      inside && index($0, label) { sub(".*" label "[^0-9]*", ""); sub("[^0-9.].*", ""); print; exit }'
}
# timing_table LENGTHS TORCH_LOG BENCH_LOG...: attnviz's figures beside PyTorch's, one row a length.
timing_table() {
  local lens=$1 torch_log=$2 n t
  shift 2
  printf '%6s | %12s | %12s | %12s | %12s | %12s | %12s\n' tokens "full trace" "probs only" \
    "decode step" "torch full" "torch probs" "torch fwd"
  for n in ${lens//,/ }; do
    t=$(grep "^n = $n:" "$torch_log" 2>/dev/null)
    printf '%6s | %12s | %12s | %12s | %12s | %12s | %12s\n' "$n" \
      "$(bench_figure "$n" "full trace:" "$@")" "$(bench_figure "$n" "probabilities only:" "$@")" \
      "$(bench_figure "$n" "KV cache:" "$@")" "$(sed -nE 's/.*full trace ([0-9.]+).*/\1/p' <<<"$t")" \
      "$(sed -nE 's/.*probabilities only ([0-9.]+).*/\1/p' <<<"$t")" \
      "$(sed -nE 's/.*forward only ([0-9.]+).*/\1/p' <<<"$t")"
  done
}
passed=0 failed=0 skipped=0
for r in "${results[@]}"; do
  case $r in
    PASS) passed=$((passed + 1)) ;;
    SKIPPED) skipped=$((skipped + 1)) ;;
    *) failed=$((failed + 1)) ;;
  esac
done
{
  echo "attnviz GPU check (scripts/gpu-check.sh), $(elapsed) s"
  sed -n '1,/^source:/p' "$logs/machine.log"
  [[ -f $logs/ops-cuda.log ]] && grep -m1 '^cuda: ' "$logs/ops-cuda.log"
  echo
  printf '%-18s %-8s %6s  %s\n' check result time detail
  for i in "${!names[@]}"; do
    printf '%-18s %-8s %4s s  %s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}" "${details[$i]}"
  done
  echo
  echo "timings in ms (median; attnviz: attnviz-cli bench --backend cuda; torch: tools/bench_torch_cuda.py)"
  echo "the tutorial's size (6+6 layers, d_model 512, 8 heads):"
  timing_table "$lengths" "$logs/torch.log" "$logs"/bench-*.log
  echo "(decode step: attnviz's per-step time with the key/value cache; the tutorial's PyTorch model has none)"
  echo "GPT-2 small's size (12 layers, d_model 768, 12 heads, 50,257 tokens; gpt2-bench):"
  timing_table "$gpt2_lengths" "$logs/gpt2-bench.log" "$logs/gpt2-bench.log"
  echo
  echo "the modern parts on CUDA (backend_checks --backend cuda):"
  modern_parts
  echo
  echo "logs: gpu-check-logs.tar.gz (one log per check; machine.log has nvidia-smi)"
  echo "$passed passed, $failed failed, $skipped skipped"
} >"$summary"
tar -C "$work" -czf "$out/gpu-check-logs.tar.gz" logs
cat "$summary"
rm -rf "$work"
((failed == 0))
