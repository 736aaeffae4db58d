#!/usr/bin/env bash
# Builds attnviz (installing the Debian packages it needs) and starts it on its bundled default
# model. Extra arguments go to the application, e.g. scripts/run.sh --model reverse
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target attnviz attnviz-cli
exec build/app/gui/attnviz "$@"
