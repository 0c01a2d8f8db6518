#!/usr/bin/env bash
# Builds PagedChat and starts the desktop app on the default model: README's run command.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"

PAGEDCHAT_SKIP_PIP=1 bash installer/install-deps.sh
MODEL=$(bash installer/fetch-models.sh | head -1)

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD_DIR" -j"$(nproc)" --target pagedchat
exec "$BUILD_DIR/app/gui/pagedchat" --model "$MODEL" "$@"
