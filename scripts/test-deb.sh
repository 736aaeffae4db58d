#!/usr/bin/env bash
# Installs the package that scripts/package-deb.sh built into a clean Debian 12 — a copy of a
# minimal system made by debootstrap from Debian's own packages — and starts the installed
# programs there: attnviz-cli decodes with a bundled model, and attnviz --screenshot draws the
# window with the default model (saved as build-deb/installed-screenshot.png). Needs root (chroot).
# usage: scripts/test-deb.sh [BUILD_DIR]    ATTNVIZ_CHROOT: where the pristine system is kept
#        ATTNVIZ_MIRROR: the package mirror debootstrap fetches from (unset: debootstrap's default)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-deb}
deb=$(ls -1 "$build"/attnviz_*.deb | tail -1)
pristine=${ATTNVIZ_CHROOT:-/var/tmp/attnviz-deb12}
[[ $(id -u) -eq 0 ]] || { echo "test-deb.sh: run as root (it uses chroot)" >&2; exit 1; }
if [[ ! -x $pristine/usr/bin/apt-get ]]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
  # The mirror is debootstrap's own default unless ATTNVIZ_MIRROR names one.
  debootstrap --variant=minbase bookworm "$pristine" ${ATTNVIZ_MIRROR:+"$ATTNVIZ_MIRROR"}
fi
# Every test starts from the pristine system: nothing of an earlier install is left.
root=$(mktemp -d /var/tmp/attnviz-deb12-test.XXXXXX)
cleanup() {
  umount "$root/proc" 2>/dev/null || true
  umount "$root/dev" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
cp -a "$pristine/." "$root/"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
cp "$deb" "$root/tmp/attnviz.deb"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
in_root apt-get update -qq
DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -qq --no-install-recommends /tmp/attnviz.deb
echo "== installed files"
in_root dpkg -L attnviz | grep -E 'bin/|\.desktop|icons/|models/reorder'
echo "== attnviz-cli, from PATH, with a bundled model"
in_root attnviz-cli models
in_root attnviz-cli decode reorder --src "my calm red sailor often visits that shy spider beside your bird"
echo "== attnviz --screenshot (offscreen: no display in the chroot)"
in_root attnviz --screenshot /tmp/installed-screenshot.png --size 1366x768
cp "$root/tmp/installed-screenshot.png" "$build/installed-screenshot.png"
echo "test-deb: the installed attnviz drew $build/installed-screenshot.png"
