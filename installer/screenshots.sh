#!/usr/bin/env bash
# Builds the app, starts it under Xvfb on the default model and runs its scripted tour (two
# chats generating at once, a fork of the first, a compare round of 3 samples), saving
# main.png (the window after the fork), kv_pool.png (the KV block-pool panel), settings.png (the
# settings dialog), compare.png and compare_view.png, window-{light,dark}-{1024x700,1366x768,1600x1000}.png
# (a chat of code, thinking and math in both themes at three sizes), overlong-message-*.png (a message
# longer than the context, refused with its reason), base-model-reply-*.png (Gemma's tour only: a base
# model continuing the text typed), tool-call-*.png, tool-result-*.png and tool-servers.png (a tool
# call's card, its result opened, the Tool servers dialog) and lesson-<id>.png for each of the
# lessons (allocation, contiguous, fork, prefix, parallel, eviction, recompute, swap, prefill, batching, beams,
# speculative, window (it loads Gemma 3 from the models folder), kvtypes, disk, quantization (it
# quantizes the default model three ways first);
# each at its key event, 1366x768) into OUT_DIR. The tour's chats
# go to a throwaway data folder.
# Then a first run: the app in an empty home (with the models laid out as Hugging Face's cache
# and LM Studio keep theirs) saves welcome.png and model_library.png at 1366x768.
# Usage: installer/screenshots.sh [OUT_DIR]   (default: screenshots/ in the repo, git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
OUT_DIR="$(realpath -m "${1:-screenshots}")"

PAGEDCHAT_SKIP_PIP=1 PAGEDCHAT_APT_EXTRA="xvfb xauth" bash installer/install-deps.sh
MODEL=$(bash installer/fetch-models.sh | head -1)

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD_DIR" -j"$(nproc)" --target pagedchat

data="$(mktemp -d)"
trap 'rm -rf "$data"' EXIT
# The tools scene (tool-call-*.png, tool-result-*.png, tool-servers.png) needs an MCP server: the
# mcp SDK's test server from the test venv (installer/install-deps.sh makes it), as "files".
VENV_PY="$HOME/.cache/pagedchat/venv/bin/python"
if [ -x "$VENV_PY" ] && "$VENV_PY" -c 'import mcp' 2>/dev/null; then
  mkdir -p "$data/PagedChat/PagedChat"
  printf '{"mcpServers": {"files": {"command": "%s", "args": ["%s"]}}}\n' \
    "$VENV_PY" "$PWD/tests/mcp/servers/tool_server.py" > "$data/PagedChat/PagedChat/mcp.json"
else
  echo "note: no venv with the mcp SDK ($VENV_PY): the tour leaves out its tools scene" >&2
fi
# Its own cache folder too: the KV disk tier would otherwise serve blocks an earlier tour wrote.
XDG_DATA_HOME="$data" XDG_CONFIG_HOME="$data" XDG_CACHE_HOME="$data/cache" \
  xvfb-run -a -s "-screen 0 1600x1000x24" \
  "$BUILD_DIR/app/gui/pagedchat" --model "$MODEL" --screenshots "$OUT_DIR"
# Gemma 3 (sliding-window attention): the same tour, plus a chat that outgrows the window,
# saving kv_pool_sliding_window.png (and its own main.png and others, into gemma/).
GEMMA="$HOME/.cache/pagedchat/models/gemma-3-270m-q4_k_m.gguf"
if [ -f "$GEMMA" ]; then
  gemma_data="$data/gemma"
  mkdir -p "$gemma_data"
  XDG_DATA_HOME="$gemma_data" XDG_CONFIG_HOME="$gemma_data" XDG_CACHE_HOME="$gemma_data/cache" \
    xvfb-run -a -s "-screen 0 1600x1000x24" \
    "$BUILD_DIR/app/gui/pagedchat" --model "$GEMMA" --screenshots "$OUT_DIR/gemma" ||
    echo "note: the Gemma tour stopped early (see above); its pictures so far are in $OUT_DIR/gemma" >&2
fi
# The first run: no default model in this home, so the window opens on the welcome page.
home="$data/home"
mkdir -p "$home/.cache/huggingface/hub/models--HuggingFaceTB--SmolLM2-135M-Instruct-GGUF/snapshots/main" \
  "$home/.lmstudio/models/google/gemma-3-270m-GGUF"
ln -sf "$MODEL" "$home/.cache/huggingface/hub/models--HuggingFaceTB--SmolLM2-135M-Instruct-GGUF/snapshots/main/smollm2-135m-instruct-q4_1.gguf"
[ -f "$GEMMA" ] && ln -sf "$GEMMA" "$home/.lmstudio/models/google/gemma-3-270m-GGUF/gemma-3-270m-Q4_K_M.gguf"
HOME="$home" XDG_DATA_HOME="$data/first" XDG_CONFIG_HOME="$data/first" \
  xvfb-run -a -s "-screen 0 1366x768x24" \
  "$BUILD_DIR/app/gui/pagedchat" --screenshots "$OUT_DIR"
echo "screenshots in $OUT_DIR"
