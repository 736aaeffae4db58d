#!/bin/sh
# tokenizer.json's Split pre-tokenizer (Llama 3's and Qwen2's patterns, every behaviour) against
# Hugging Face's own Rust tokenizers through its Node binding, the npm package tokenizers, run by
# node now: tools/hf_tokenizers_reference.js writes the tokenizer.json files and the package's ids,
# then test_tokenizers reads the same files (the committed tests/data/tokenizers/split/ is its
# output at the time it was written).
# usage: hf_tokenizers_node_check.sh TEST_TOKENIZERS SOURCE_DIR OUT_DIR
# The package is looked for in $ATTNVIZ_HF_TOKENIZERS_DIR, else in the npm prefix
# ${XDG_CACHE_HOME:-$HOME/.cache}/attnviz/npm (scripts/install-deps.sh --tests installs it there);
# when it is missing there this installs it (npm, from its cache or the registry). Exit 77 (skipped)
# when node or the package cannot be had.
set -eu
test_bin=$1 src=$2 out=$3
prefix=${XDG_CACHE_HOME:-$HOME/.cache}/attnviz/npm
pkg=${ATTNVIZ_HF_TOKENIZERS_DIR:-$prefix/node_modules/tokenizers}
if ! command -v node >/dev/null 2>&1; then
  echo "node is not installed (scripts/install-deps.sh --tests installs nodejs): skipped"
  exit 77
fi
if [ ! -f "$pkg/index.js" ] && command -v npm >/dev/null 2>&1; then
  npm install --prefer-offline --no-audit --no-fund --silent --prefix "$prefix" tokenizers@0.23.2 ||
    echo "npm could not install tokenizers"
fi
if [ ! -f "$pkg/index.js" ]; then
  echo "the npm package tokenizers is not in $pkg (scripts/install-deps.sh --tests installs it): skipped"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out"
node "$src/tools/hf_tokenizers_reference.js" "$pkg" "$src/tests/data/tokenizers/strings.json" "$out"
ATTNVIZ_HF_SPLIT_DIR="$out" QT_QPA_PLATFORM=offscreen "$test_bin" splitPreTokenizer
