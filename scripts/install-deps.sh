#!/usr/bin/env bash
# Installs the Debian packages attnviz needs to build, run and test (only those missing).
# usage: scripts/install-deps.sh [--tests]   (--tests adds PyTorch, Xvfb and the sanitizer runtime)
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config
      qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev
      libeigen3-dev nlohmann-json3-dev libzip-dev libopenblas-dev libsentencepiece-dev libcli11-dev)
if [[ "${1:-}" == "--tests" ]]; then
  pkgs+=(python3 python3-numpy python3-torch libopenblas0-pthread xvfb clang libclang-rt-dev
         python3-sentencepiece python3-regex)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "attnviz: installing missing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
