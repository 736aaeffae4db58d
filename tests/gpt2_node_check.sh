#!/bin/sh
# GPT-2's tokenizer against the npm package gpt-3-encoder run by node, freshly (the committed
# tests/data/tokenizers/gpt2_node.json is its output at the time it was written).
# usage: gpt2_node_check.sh TEST_TOKENIZERS SOURCE_DIR OUT_DIR
# The package is looked for in $ATTNVIZ_GPT3_ENCODER_DIR, else in the npm prefix
# ${XDG_CACHE_HOME:-$HOME/.cache}/attnviz/npm (scripts/install-deps.sh --tests installs it there);
# when it is missing there this installs it (npm, from its cache or the registry). Exit 77 (skipped)
# when node or the package cannot be had.
set -eu
test_bin=$1 src=$2 out=$3
prefix=${XDG_CACHE_HOME:-$HOME/.cache}/attnviz/npm
pkg=${ATTNVIZ_GPT3_ENCODER_DIR:-$prefix/node_modules/gpt-3-encoder}
if ! command -v node >/dev/null 2>&1; then
  echo "node is not installed (scripts/install-deps.sh --tests installs nodejs): skipped"
  exit 77
fi
if [ ! -f "$pkg/Encoder.js" ] && command -v npm >/dev/null 2>&1; then
  npm install --prefer-offline --no-audit --no-fund --silent --prefix "$prefix" gpt-3-encoder@1.1.4 ||
    echo "npm could not install gpt-3-encoder"
fi
if [ ! -f "$pkg/Encoder.js" ]; then
  echo "gpt-3-encoder is not in $pkg (scripts/install-deps.sh --tests installs it): skipped"
  exit 77
fi
mkdir -p "$out"
node "$src/tools/gpt2_reference.js" "$pkg" "$src/tests/data/tokenizers/strings.json" > "$out/gpt2_node.json"
ATTNVIZ_GPT2_NODE_CASES="$out/gpt2_node.json" QT_QPA_PLATFORM=offscreen \
  "$test_bin" gpt2_equalsGpt3Encoder gpt2_otherSpellings
