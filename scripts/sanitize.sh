#!/usr/bin/env bash
# The sanitizer half of the test command (issues 6 and 14):
#  asan  builds the whole test suite with AddressSanitizer + UndefinedBehaviorSanitizer in a second
#        build folder (CUDA off) and runs CTest there; any report aborts the test that made it
#        (test_memory skips itself there: the sanitizer's own memory is not attnviz's).
#  fuzz  builds the libFuzzer targets (tests/fuzz) with clang and runs each from its committed seed
#        corpus: the loader for FUZZ_SECONDS (what loads is also run as `attnviz-cli run` runs it,
#        with random ids and lengths, and dumped to a temporary folder), PyTorch checkpoints for
#        FUZZ_CHECKPOINT_SECONDS; any
#        crash, sanitizer report, leak, timeout (-timeout) or allocation over the bound
#        (-malloc_limit_mb, -rss_limit_mb) fails.
# usage: scripts/sanitize.sh [all|asan|fuzz]            (default all)
# env:   FUZZ_SECONDS (60), FUZZ_CHECKPOINT_SECONDS (30), JOBS (nproc), ATTNVIZ_ASAN_DIR
#        (build-asan), ATTNVIZ_FUZZ_DIR (build-fuzz),
#        ATTNVIZ_ASAN_CTEST_ARGS (extra ctest arguments, e.g. "-R test_hostile")
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/install-deps.sh --tests

what=${1:-all}
jobs=${JOBS:-$(nproc)}
fuzz_seconds=${FUZZ_SECONDS:-60}
fuzz_checkpoint_seconds=${FUZZ_CHECKPOINT_SECONDS:-30}

# Every report is fatal (abort → the test crashes), and the messages carry stack traces.
export ASAN_OPTIONS="abort_on_error=1:halt_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="abort_on_error=1:halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"

run_asan() {
  local dir=${ATTNVIZ_ASAN_DIR:-build-asan}
  echo "== sanitize: ASan + UBSan build in $dir"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNVIZ_SANITIZE=ON \
    -DATTNVIZ_CUDA=OFF -DATTNVIZ_REQUIRE_TORCH=ON
  cmake --build "$dir" -j"$jobs"
  echo "== sanitize: CTest under ASan + UBSan"
  # shellcheck disable=SC2086
  (cd "$dir" && ctest --output-on-failure -j"$jobs" ${ATTNVIZ_ASAN_CTEST_ARGS:-})
  # Belt and braces: a report from a child process that a test did not notice still fails.
  if grep -lE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error: " \
      "$dir"/Testing/Temporary/LastTest*.log 2>/dev/null; then
    echo "sanitize: a sanitizer report appears in the CTest log above" >&2
    return 1
  fi
}

# fuzz_one TARGET SECONDS DICT CORPUS MAX_LEN: runs one libFuzzer target from its committed seeds.
fuzz_one() {
  local dir=$1 target=$2 seconds=$3 dict=$4 seeds=$5 max_len=$6
  # New inputs go to a corpus in the build folder (kept between runs); the committed seeds are
  # read only. Crashing inputs land in artifacts/.
  local work="$dir/fuzz-work/$target"
  rm -rf "$work/artifacts"
  mkdir -p "$work/corpus" "$work/artifacts"
  echo "== sanitize: fuzzing $target for ${seconds} s"
  local rc=0
  "$dir/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len="$max_len" -detect_leaks=1 \
    -dict="$dict" -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "$work/corpus" "$seeds" >"$work/fuzz.log" 2>&1 || rc=$?
  grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::|ERROR|SUMMARY" "$work/fuzz.log" || true
  if ((rc != 0)) || [[ -n "$(ls -A "$work/artifacts")" ]]; then
    tail -n 60 "$work/fuzz.log" >&2
    echo "sanitize: $target failed (exit $rc); inputs: $(ls "$work/artifacts" | tr '\n' ' ')" >&2
    echo "reproduce: $dir/tests/fuzz/$target $work/artifacts/FILE" >&2
    return 1
  fi
  echo "== sanitize: fuzzing $target passed (log: $work/fuzz.log)"
}

run_fuzz() {
  local dir=${ATTNVIZ_FUZZ_DIR:-build-fuzz}
  local cxx
  cxx=$(command -v clang++ || command -v clang++-14 || true)
  if [[ -z "$cxx" ]]; then
    echo "sanitize: clang++ not found (scripts/install-deps.sh --tests installs clang)" >&2
    return 1
  fi
  echo "== sanitize: libFuzzer build in $dir ($cxx)"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DATTNVIZ_FUZZ=ON -DATTNVIZ_GUI=OFF -DATTNVIZ_CUDA=OFF
  cmake --build "$dir" -j"$jobs" --target fuzz_loader fuzz_checkpoint
  fuzz_one "$dir" fuzz_loader "$fuzz_seconds" tests/fuzz/loader.dict tests/fuzz/corpus 16384
  fuzz_one "$dir" fuzz_checkpoint "$fuzz_checkpoint_seconds" tests/fuzz/checkpoint.dict \
    tests/fuzz/checkpoint_corpus 16384
}

case "$what" in
  all)  # not "run_asan && run_fuzz": set -e does not apply inside an && list
    run_asan
    run_fuzz
    ;;
  asan) run_asan ;;
  fuzz) run_fuzz ;;
  *) echo "usage: scripts/sanitize.sh [all|asan|fuzz]" >&2; exit 2 ;;
esac
