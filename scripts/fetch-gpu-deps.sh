#!/usr/bin/env bash
# Fetches the libraries attnviz builds with — Eigen 3.4 and nlohmann-json (headers), libzip (the
# zip reader of PyTorch checkpoints), Oniguruma (tokenizer.json's regular expressions) and pkgconf to find it, as Debian packages — into .deps/
# (git-ignored) and unpacks them there, for a machine that has none of them and cannot download
# them: the lent GPU machine (no Debian packages, no network). The device tool carries the folder
# along (carry [".deps"], about 12 MiB); scripts/gpu-check.sh points CMake and the loader at it.
# usage: scripts/fetch-gpu-deps.sh        (here, before calling the device tool)
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(libeigen3-dev nlohmann-json3-dev libzip-dev libzip4 libonig-dev libonig5 pkgconf-bin libpkgconf3)
deps=.deps
rm -rf "$deps/debs" "$deps/root"
mkdir -p "$deps/debs"
download() {
  (cd "$deps/debs" && apt-get download "${pkgs[@]}" 2>&1 | grep -v "unsandboxed") || true
}
download
if ! ls "$deps"/debs/*.deb >/dev/null 2>&1; then
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  download
fi
for p in "${pkgs[@]}"; do
  ls "$deps"/debs/"$p"_*.deb >/dev/null 2>&1 || { echo "fetch-gpu-deps: $p was not downloaded" >&2; exit 1; }
done
for deb in "$deps"/debs/*.deb; do dpkg -x "$deb" "$deps/root"; done
rm -rf "$deps/root/usr/share/doc" "$deps/debs"
# pkg-config files whose prefix is where they lie (…/usr/lib/<triplet>/pkgconfig/../../..), so that
# the unpacked libzip is found wherever the checkout is, without a PKG_CONFIG_SYSROOT_DIR that
# would move the machine's own packages too.
for pc in "$deps/root"/usr/lib/*/pkgconfig/*.pc; do
  sed -i 's|^prefix=/usr$|prefix=${pcfiledir}/../../..|' "$pc"
done
eigen=$deps/root/usr/share/eigen3/cmake
json=$deps/root/usr/share/cmake/nlohmann_json
[[ -f $eigen/Eigen3Config.cmake && -f $json/nlohmann_jsonConfig.cmake ]] || {
  echo "fetch-gpu-deps: the packages lack their CMake files" >&2
  exit 1
}
echo "fetch-gpu-deps: $(du -sh "$deps" | cut -f1) in $deps: Eigen3_DIR=$eigen nlohmann_json_DIR=$json"
