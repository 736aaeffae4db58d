#!/usr/bin/env bash
# The programs start, and run on the CPU, where CUDA cannot be used; `--backend cuda` then says why.
#   1. no program links a CUDA library (readelf: no NEEDED libcudart / libcublas / libcuda);
#   2. the plugin missing (ATTNVIZ_CUDA_PLUGIN names a file that does not exist);
#   3. the plugin there but CUDA's libraries broken (an empty libcublas.so.N and libcudart.so.N
#      first on LD_LIBRARY_PATH, as on a machine whose CUDA install is damaged or absent);
#   4. a file that is not an attnviz plugin.
# The application (a PROGRAM named attnviz) must start in each case too: offscreen, asked for
# CUDA, it falls back to the CPU and saves a screenshot.
# usage: cuda_plugin_absent.sh CLI BACKEND_CHECKS MODEL PLUGIN|none [PROGRAM...]
set -uo pipefail
cli=$1 checks=$2 model=$3 plugin=$4
shift 4
fails=0 passes=0
ok() { echo "ok   $*"; passes=$((passes + 1)); }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

gui=""
for program in "$cli" "$checks" "$@"; do
  [[ $(basename "$program") == attnviz ]] && gui=$program
  if readelf -d "$program" | grep -E 'NEEDED.*(libcudart|libcublas|libcuda\.)'; then
    bad "$(basename "$program") links a CUDA library"
  else
    ok "$(basename "$program") links no CUDA library"
  fi
done

run_args=(run "$model" --src-ids "1,2,3" --tgt-ids "1,2")
# expect_cuda_refused LABEL PATTERN [env...]: `--backend cuda` fails with PATTERN in its message,
# `--backend cpu` still runs, and the plain backend checks skip CUDA with the reason.
expect_cuda_refused() {
  local label=$1 pattern=$2
  shift 2
  local out rc
  out=$(env "$@" "$cli" "${run_args[@]}" --backend cuda 2>&1)
  rc=$?
  if [[ $rc -eq 1 && $out == *"CUDA backend unavailable"* && $out =~ $pattern ]]; then
    ok "$label: --backend cuda refused: ${out%%$'\n'*}"
  else
    bad "$label: --backend cuda gave rc $rc: $out"
  fi
  if env "$@" "$cli" "${run_args[@]}" --backend cpu >/dev/null 2>&1; then
    ok "$label: --backend cpu runs"
  else
    bad "$label: --backend cpu failed"
  fi
  out=$(env "$@" "$checks" --backend cuda 2>&1)
  rc=$?
  if [[ $rc -eq 77 && $out == *"cuda: unavailable"* ]]; then
    ok "$label: backend_checks --backend cuda skips (77)"
  else
    bad "$label: backend_checks --backend cuda gave rc $rc: $out"
  fi
  if [[ -n $gui ]]; then
    local shot
    shot=$(mktemp --suffix=.png)
    out=$(env "$@" QT_QPA_PLATFORM=offscreen timeout 120 "$gui" --backend cuda --screenshot "$shot" 2>&1)
    rc=$?
    if [[ $rc -eq 0 && -s $shot ]]; then
      ok "$label: the application starts, falls back to the CPU and draws"
    else
      bad "$label: the application gave rc $rc: $out"
    fi
    rm -f "$shot"
  fi
}

if [[ $plugin == none ]]; then
  expect_cuda_refused "built without CUDA" "no CUDA backend"
  echo "$passes passed, $fails failed"
  exit $((fails > 0))
fi

expect_cuda_refused "plugin missing" "plugin .*was not found" ATTNVIZ_CUDA_PLUGIN=/nonexistent/libattnviz_cuda.so

fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
for lib in $(readelf -d "$plugin" | sed -n 's/.*NEEDED.*\[\(libcu[a-z]*\.so\.[0-9]*\)\].*/\1/p'); do
  : >"$fake/$lib"
done
expect_cuda_refused "CUDA libraries broken" "cannot load the CUDA plugin.*libcu" LD_LIBRARY_PATH="$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# A shared library the CLI itself loads (libm), named as the plugin.
libm=$(ldd "$cli" | awk '/libm\.so/ {print $3; exit}')
expect_cuda_refused "not a plugin" "is not an attnviz CUDA plugin" ATTNVIZ_CUDA_PLUGIN="$libm"

echo "$passes passed, $fails failed"
exit $((fails > 0))
