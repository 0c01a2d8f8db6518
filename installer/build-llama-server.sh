#!/usr/bin/env bash
# Builds llama.cpp's llama-server, a peer for the remote-engine tests, from the llama-cpp-python
# 0.3.36 sdist (PyPI, the one source of llama.cpp this machine can reach) into
# ~/.cache/pagedchat/llama.cpp, never the repo. Prints the binary's path; a later run reuses it.
# The same tree gives the benchmarks' peers (tests/bench): llama-batched-bench, llama-bench,
# llama-quantize, llama-imatrix and llama-perplexity, built with it.
# Exits non-zero (the tests that need it then skip, saying why) when it cannot be built.
set -euo pipefail
CACHE="$HOME/.cache/pagedchat/llama.cpp"
BIN="$CACHE/build/bin/llama-server"
TARGETS=(llama-server llama-batched-bench llama-bench llama-quantize llama-perplexity llama-imatrix)
# AMX off: -march=native turns on ggml's AMX kernels where the CPU lists AMX, but the virtual
# machines we run on do not grant the tile state, and the first AMX matmul dies with SIGILL
# (seen on a Xeon with amx_tile in /proc/cpuinfo). A build made without this is made again.
NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
STAMP="$CACHE/build/pagedchat-build-flags"
built=1
for t in "${TARGETS[@]}"; do [ -x "$CACHE/build/bin/$t" ] || built=0; done
[ "$(cat "$STAMP" 2>/dev/null)" = "$NO_AMX" ] || built=0
if [ "$built" = 1 ]; then echo "$BIN"; exit 0; fi
PYTHON="$HOME/.cache/pagedchat/venv/bin/python"
[ -x "$PYTHON" ] || PYTHON=python3
mkdir -p "$CACHE"
cd "$CACHE"
if [ ! -f src/vendor/llama.cpp/CMakeLists.txt ]; then
  # The sdist (pip reads its metadata with scikit-build-core in an isolated environment; nothing is built).
  "$PYTHON" -m pip download --quiet --no-binary :all: --no-deps llama-cpp-python==0.3.36 -d sdist >&2
  rm -rf src && mkdir -p src
  tar -xzf sdist/llama_cpp_python-0.3.36.tar.gz -C src --strip-components=1
fi
# The server and the bench tools, for this CPU (GGML_NATIVE), without libcurl downloads or the examples.
cmake -S src/vendor/llama.cpp -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
  -DCMAKE_C_FLAGS="$NO_AMX" -DCMAKE_CXX_FLAGS="$NO_AMX" \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >&2
cmake --build build --target "${TARGETS[@]}" -j"$(nproc)" >&2
echo "$NO_AMX" > "$STAMP"
echo "$BIN"
