#!/usr/bin/env bash
# Baseline for PagedChat's CPU speed: single-stream prompt and decode tok/s of
# llama.cpp (through llama-cpp-python, built from source for this CPU, no GPU).
# Usage: tests/bench/llamacpp_baseline.sh [model.gguf]
# Prints one JSON line per thread count (1, then 2). Nothing from llama.cpp
# enters the repository: it lives in a virtualenv under ~/.cache.
set -euo pipefail

model="${1:-$HOME/.cache/pagedchat/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
venv="$HOME/.cache/pagedchat/bench/llamacpp-venv"
# Pinned so that numbers from different days compare the same llama.cpp.
version="${LLAMACPP_PYTHON_VERSION:-0.3.36}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ ! -f "$model" ]]; then
    echo "llamacpp_baseline: model not found: $model" >&2
    exit 1
fi

# Idempotent: the source build takes minutes on 2 cores, so skip it when the
# pinned version already imports.
if ! "$venv/bin/python" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$version')" 2>/dev/null; then
    echo "llamacpp_baseline: building llama-cpp-python $version into $venv (several minutes)" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip >&2
    # GGML_NATIVE: compile for this CPU's SIMD, the fair baseline for our own
    # native build. Every GPU backend off, so the numbers are CPU-only.
    CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_HIP=OFF -DGGML_SYCL=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
        "$venv/bin/pip" install --no-cache-dir --no-binary llama-cpp-python \
        "llama-cpp-python==$version" >&2
fi

for threads in 1 2; do
    "$venv/bin/python" "$here/llamacpp_baseline.py" --model "$model" --threads "$threads"
done
