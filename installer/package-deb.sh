#!/usr/bin/env bash
# Builds a portable release (no -march=native: the AVX2 kernels are picked at run time) and
# packs it with CPack into a .deb: the app, the CLI, the server, the .desktop entry and the
# icon (installer/packaging.cmake). Usage: installer/package-deb.sh [OUT_DIR] (default: build-deb)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build-deb}"

PAGEDCHAT_SKIP_PIP=1 bash installer/install-deps.sh
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGEDCHAT_NATIVE=OFF -DPAGEDCHAT_TESTS=OFF \
  -DPAGEDCHAT_CUDA=OFF
cmake --build "$BUILD_DIR" -j"$(nproc)"
(cd "$BUILD_DIR" && cpack -G DEB)
deb=$(ls "$BUILD_DIR"/pagedchat_*.deb)
if [ -n "${1:-}" ]; then mkdir -p "$1" && cp "$deb" "$1/" && deb="$1/$(basename "$deb")"; fi
dpkg-deb --info "$deb" | grep -E "Package|Version|Depends"
echo "package: $deb"
