#!/usr/bin/env bash
# Builds PagedChat and runs every test suite: README's test command and what CI runs.
# Installs what is missing first (Debian packages, Python reference packages, the models).
# Then builds the suites again under AddressSanitizer and UndefinedBehaviorSanitizer in a second
# folder (CUDA off) and runs them there, as llama.cpp's CI does; any report fails it.
# PAGEDCHAT_SANITIZE_TESTS=0 skips that second pass.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
SANITIZE_DIR="${SANITIZE_DIR:-${BUILD_DIR}-sanitize}"
PYTHON="$HOME/.cache/pagedchat/venv/bin/python"

bash installer/install-deps.sh
bash installer/fetch-models.sh --gemma >/dev/null
# llama.cpp's server for the remote-engine tests, built once into ~/.cache/pagedchat (about ten
# minutes on two cores); without it test_remote_llama_server skips and says why.
bash installer/build-llama-server.sh >/dev/null || echo "run-tests: llama-server could not be built; its test skips"

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPAGEDCHAT_TESTS=ON -DPython3_EXECUTABLE="$PYTHON"
cmake --build "$BUILD_DIR" -j"$(nproc)"
ctest --test-dir "$BUILD_DIR" --output-on-failure "$@"

# The GPU kit (tests/bench/gpu_proof.sh): the build and the steps a GPU machine runs, each of
# which must refuse cleanly here, so a commit that breaks the kit fails this command.
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  # Without the packages (no mirror reachable), the dry run builds against this machine's own.
  bash installer/prepare-gpu-kit.sh || { rm -rf .gpu-kit/deps; echo "run-tests: the GPU kit's packages could not be fetched"; }
  PATH="$PATH:/usr/local/cuda/bin" bash tests/bench/gpu_proof.sh --dry-run --build "${BUILD_DIR}-gpu-proof"
else
  echo "run-tests: no nvcc here: the GPU kit's dry run is skipped"
fi

if [ "${PAGEDCHAT_SANITIZE_TESTS:-1}" != 0 ]; then
  # -O1: the level sanitizer builds usually take (the checks stay meaningful, runs stay bearable).
  # Everything but CUDA: the engine, the server, the model library, the app's session and widgets.
  # Suites whose inputs take minutes there run smaller ones (tests/support/test_env.h sanitized()).
  # PAGEDCHAT_SANITIZE_GUI=0 leaves the app's suites out (about 15 minutes less on 2 cores).
  gui=ON
  if [ "${PAGEDCHAT_SANITIZE_GUI:-1}" = 0 ]; then gui=OFF; fi
  cmake -S . -B "$SANITIZE_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
    -DPAGEDCHAT_CUDA=OFF -DPAGEDCHAT_GUI="$gui" -DPAGEDCHAT_SANITIZE=address,undefined \
    -DPAGEDCHAT_TESTS=ON -DPython3_EXECUTABLE="$PYTHON"
  cmake --build "$SANITIZE_DIR" -j"$(nproc)"
  # Every suite built here runs, the forward passes by the hundred included (4-7x slower under
  # ASan at -O1), but the two load runs, whose point is timing under load
  # (server_test_slow_readers, server_test_server_load). Two at a time, the longest first
  # (tests/CMakeLists.txt's COST).
  ctest --test-dir "$SANITIZE_DIR" --output-on-failure -j2 \
    -E "^(server_test_slow_readers|server_test_server_load)\$"
fi
