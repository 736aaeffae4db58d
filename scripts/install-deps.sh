#!/usr/bin/env bash
# Installs the Debian packages attnviz needs to build, run and test (only those missing).
# usage: scripts/install-deps.sh [--tests]   (--tests adds PyTorch, Xvfb, the sanitizer runtime,
# node with the npm packages gpt-3-encoder, GPT-2's tokenizer in JavaScript, for gpt2_node_reference,
# and tokenizers, Hugging Face's Rust tokenizers, for hf_tokenizers_node_reference,
# chromium with chromium-driver and Selenium, the browser the exported lesson page is tested in,
# and the fonts imagemagick brings and a CJK font, which the GUI suites must not depend on)
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config
      qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev
      # lupdate/lrelease (the interface's translations), Qt's own zh_CN for the standard dialogs,
      # and a small CJK font (1.6 MB) so that the Chinese interface draws characters, not boxes
      qt6-tools-dev qt6-tools-dev-tools qt6-l10n-tools qt6-translations-l10n fonts-wqy-microhei
      libeigen3-dev nlohmann-json3-dev libzip-dev libopenblas-dev libsentencepiece-dev libcli11-dev
      libonig-dev)
if [[ "${1:-}" == "--tests" ]]; then
  pkgs+=(python3 python3-numpy python3-torch libopenblas0-pthread xvfb clang libclang-rt-dev
         python3-sentencepiece python3-regex chromium chromium-driver python3-selenium
         # More fonts than a fresh machine has (imagemagick's, a CJK font): the GUI suites must
         # draw the same pictures with them installed (tests/fonts.conf.in keeps them out).
         fonts-droid-fallback fonts-noto-mono fonts-urw-base35 gsfonts fonts-noto-cjk)
  # node and npm from Debian unless a node is already there (NodeSource's nodejs brings its npm)
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs npm)
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
if [[ "${1:-}" == "--tests" ]]; then
  # tests/gpt2_node_check.sh looks for it here; installed once, the suite runs offline.
  npm_prefix="${XDG_CACHE_HOME:-$HOME/.cache}/attnviz/npm"
  if [[ ! -f "$npm_prefix/node_modules/gpt-3-encoder/Encoder.js" ]]; then
    echo "attnviz: installing the npm package gpt-3-encoder into $npm_prefix"
    npm install --no-audit --no-fund --silent --prefix "$npm_prefix" gpt-3-encoder@1.1.4
  fi
  # tests/hf_tokenizers_node_check.sh: Hugging Face's Rust tokenizers through its Node binding (the
  # registry package carries its prebuilt native library), the reference for tokenizer.json.
  if [[ ! -f "$npm_prefix/node_modules/tokenizers/index.js" ]]; then
    echo "attnviz: installing the npm package tokenizers into $npm_prefix"
    npm install --no-audit --no-fund --silent --prefix "$npm_prefix" tokenizers@0.23.2
  fi
fi
