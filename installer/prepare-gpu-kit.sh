#!/usr/bin/env bash
# Prepares, on this machine, what the GPU kit (tests/bench/gpu_proof.sh) carries to a GPU machine
# that has nvcc, CMake and ninja but not sentencepiece, PCRE2 or nlohmann-json, and no network:
#   .gpu-kit/deps   Debian's packages of those, unpacked with dpkg -x (CMake reads them through
#                   -DPAGEDCHAT_DEPS_DIR; installer/vendored_deps.cmake)
#   .gpu-kit/models/default-6-layers.gguf   the default model's first 6 layers (real weights in
#                   Q4_1, its tokenizer; the whole file is too big to travel)
# .gpu-kit is git-ignored; name it in the device call's `carry`. The .debs are cached under
# ~/.cache/pagedchat/debs. Prints the folder's size: a device call carries 64 MiB in all.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KIT=$ROOT/.gpu-kit
DEBS=$HOME/.cache/pagedchat/debs
PACKAGES=(libsentencepiece0 libsentencepiece-dev libpcre2-dev nlohmann-json3-dev)
LAYERS=6

mkdir -p "$DEBS" "$KIT"
missing=()
for p in "${PACKAGES[@]}"; do
  compgen -G "$DEBS/${p}_*.deb" >/dev/null || missing+=("$p")
done
download() {  # apt-get download writes into the current folder; as root it warns that _apt cannot reach it
  (cd "$DEBS" && apt-get download "$@" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true)
}
if [ ${#missing[@]} -gt 0 ]; then
  download "${missing[@]}"
  # A fresh machine may have no package lists yet: read them once and try again.
  for p in "${missing[@]}"; do
    if ! compgen -G "$DEBS/${p}_*.deb" >/dev/null; then
      apt-get update -q >/dev/null 2>&1 || true
      download "${missing[@]}"
      break
    fi
  done
fi
rm -rf "$KIT/deps"
mkdir -p "$KIT/deps"
for p in "${PACKAGES[@]}"; do
  deb=$(compgen -G "$DEBS/${p}_*.deb" | sort | tail -1) || { echo "prepare-gpu-kit: no .deb for $p" >&2; exit 1; }
  dpkg -x "$deb" "$KIT/deps"
done
# Only what the build reads: the 8-bit PCRE2 archive, sentencepiece's runtime library, headers.
lib=$KIT/deps/usr/lib/x86_64-linux-gnu
rm -rf "$KIT/deps/usr/share/doc" "$KIT/deps/usr/share/man" "$lib/pkgconfig" "$lib"/libpcre2-{16,32,posix}* \
  "$lib"/libpcre2-8.so "$lib"/libsentencepiece_train* "$KIT/deps/usr/bin"

model=$("$ROOT/installer/fetch-models.sh" | tail -1)
PY=python3
[ -x "$HOME/.cache/pagedchat/venv/bin/python" ] && PY="$HOME/.cache/pagedchat/venv/bin/python"
out="$KIT/models/default-$LAYERS-layers.gguf"
if [ ! -f "$out" ] || [ "$out" -ot "$model" ]; then
  "$PY" "$ROOT/tests/bench/make_truncated_model.py" --layers "$LAYERS" "$model" "$out" >/dev/null
fi
tree=$(git -C "$ROOT" ls-files -z | (cd "$ROOT" && xargs -0 du -cb 2>/dev/null) | tail -1 | cut -f1)
echo "prepare-gpu-kit: $KIT, $(du -sm "$KIT" | cut -f1) MiB (the tree adds $((tree >> 20)) MiB; a call carries 64)"
