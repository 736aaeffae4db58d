#!/usr/bin/env bash
# Renders the user's guide's pictures (docs/images/*.png) from the application itself and writes
# them into docs/images: test_tour sets the window up as each picture needs (the tour's steps, the
# views) and, with ATTNVIZ_UPDATE_GUIDE_IMAGES=1, saves instead of comparing. The test command
# (scripts/test.sh) runs the same test without it and fails when a committed picture is stale. Both
# draw with the bundled fonts (resources/fonts, app/gui/widgets/fonts.h): any machine renders the same.
# Look at the pictures before committing them.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f build/build.ninja && ! -f build/Makefile ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build --target test_tour -j"$(nproc)"
(cd build && ATTNVIZ_UPDATE_GUIDE_IMAGES=1 QT_QPA_PLATFORM=offscreen ./tests/test_tour guideImagesAreCurrent)
git status --short docs/images
