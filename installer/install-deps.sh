#!/usr/bin/env bash
# Installs what building and testing PagedChat need: Debian packages, and the Python packages
# of the reference tests in a virtual environment (~/.cache/pagedchat/venv; Debian's own
# Python refuses system-wide pip installs). Idempotent: installs only what is missing, and says
# what it installs. The CUDA toolkit is not installed here (the machine has nvcc, or not).
set -euo pipefail

APT_PACKAGES=(
  cmake ninja-build g++ pkg-config unzip
  python3 python3-venv python3-pip
  qt6-base-dev qt6-base-dev-tools libgl-dev
  libqt6sql6-sqlite
  qt6-httpserver-dev
  qcoro-qt6-dev
  libsentencepiece-dev libpcre2-dev
  libcurl4-openssl-dev libssl-dev zlib1g-dev nlohmann-json3-dev
  libzmq3-dev libmsgpack-cxx-dev  # vLLM's KV cache events: ZeroMQ and msgpack (remote/vllm_kv_subscriber.h)
)
# Extra packages a caller needs (installer/screenshots.sh: xvfb xauth).
read -r -a EXTRA <<< "${PAGEDCHAT_APT_EXTRA:-}"
APT_PACKAGES+=("${EXTRA[@]}")
# Pinned so that the references do not drift. openai: the official client the server's tests
# drive pagedchat-server with (tests/server/). jinja2: the oracle the chat-template data is checked
# against on every run (tests/reference/chat_template_reference.py). jsonschema: the validator
# structured output's replies are checked with (tests/server/test_structured_output.py). mcp: the
# SDK the MCP client's test servers are written with (tests/mcp/servers).
PIP_PACKAGES=(numpy==2.2.6 gguf==0.19.0 tokenizers==0.22.1 sentencepiece==0.2.1 protobuf==6.33.0 openai==3.57.0 jinja2==3.1.6 jsonschema==4.26.0 mcp==2.3.0)
# xgrammar: the independent oracle of the grammar masks (tests/reference/make_grammar_masks.py).
# Its wheel declares torch, transformers and triton, which its grammar matcher never uses
# (gigabytes): installed without its dependencies, with the one it needs beside numpy and
# pydantic (which openai brings).
PIP_NO_DEPS_PACKAGES=(xgrammar==0.2.9 apache-tvm-ffi==0.1.15.post2)
VENV="${PAGEDCHAT_VENV:-$HOME/.cache/pagedchat/venv}"

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: Debian packages already present"
fi

if [ "${PAGEDCHAT_SKIP_PIP:-0}" != 1 ]; then
  if [ ! -x "$VENV/bin/python" ]; then
    echo "install-deps: creating the Python environment $VENV"
    python3 -m venv "$VENV"
  fi
  # need=(the pins of "$@" whose version the venv does not have)
  missing_pins() {
    need=()
    local spec name want have
    for spec in "$@"; do
      name=${spec%%==*}; want=${spec##*==}
      have=$("$VENV/bin/python" -m pip show "$name" 2>/dev/null | awk '/^Version:/{print $2}' || true)
      [ "$have" = "$want" ] || need+=("$spec")
    done
  }
  missing_pins "${PIP_PACKAGES[@]}"
  if [ ${#need[@]} -gt 0 ]; then
    echo "install-deps: installing Python packages into $VENV: ${need[*]}"
    "$VENV/bin/python" -m pip install -q "${need[@]}"
  else
    echo "install-deps: Python packages already present"
  fi
  missing_pins "${PIP_NO_DEPS_PACKAGES[@]}"
  if [ ${#need[@]} -gt 0 ]; then
    echo "install-deps: installing into $VENV without their dependencies: ${need[*]}"
    "$VENV/bin/python" -m pip install -q --no-deps "${need[@]}"
  fi
fi
