#!/usr/bin/env bash
# Builds the Debian package of attnviz: build-deb/attnviz_VERSION_ARCH.deb. A portable build (no
# -march=native, no CUDA), installed under /usr; the package's dependencies come from the binaries
# (dpkg-shlibdeps). Then scripts/test-deb.sh installs it into a clean Debian 12 and starts it.
# usage: scripts/package-deb.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-deb}
scripts/install-deps.sh
if ! command -v dpkg-shlibdeps >/dev/null; then
  sudo_cmd=(); [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends dpkg-dev file
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DATTNVIZ_NATIVE=OFF -DATTNVIZ_CUDA=OFF -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON
cmake --build "$build" -j"${ATTNVIZ_JOBS:-2}" --target attnviz attnviz-cli
(cd "$build" && cpack -G DEB)
ls -1 "$build"/*.deb
