#!/usr/bin/env bash
# Builds PagedChat and runs every test suite: README's test command and what CI runs.
# Installs what is missing first (Debian packages, Python reference packages, the models).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"

bash installer/install-deps.sh
bash installer/fetch-models.sh --gemma >/dev/null

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPAGEDCHAT_TESTS=ON -DPython3_EXECUTABLE="$HOME/.cache/pagedchat/venv/bin/python"
cmake --build "$BUILD_DIR" -j"$(nproc)"
ctest --test-dir "$BUILD_DIR" --output-on-failure "$@"
