#!/usr/bin/env bash
# Installs the Debian packages that building and testing PagedChat need, and the
# Python packages the reference tests use. Idempotent: installs only what is missing,
# and says what it installs. The CUDA toolkit is not installed here (the machine has nvcc).
set -euo pipefail

APT_PACKAGES=(
  cmake ninja-build g++ pkg-config unzip
  qt6-base-dev qt6-base-dev-tools libqt6sql6-sqlite qt6-httpserver-dev qt6-charts-dev
  qt6-svg-dev qcoro-qt6-dev libgl-dev
  libsentencepiece-dev libpcre2-dev
  xvfb xauth
)
# Python packages the reference tests need (pinned so the references do not drift).
PIP_PACKAGES=(numpy==2.2.6 gguf==0.19.0 tokenizers==0.22.1 sentencepiece==0.2.1 protobuf==6.33.0)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: Debian packages already present"
fi

if [ "${PAGEDCHAT_SKIP_PIP:-0}" != 1 ]; then
  need=()
  for spec in "${PIP_PACKAGES[@]}"; do
    name=${spec%%==*}; want=${spec##*==}
    have=$(python3 -m pip show "$name" 2>/dev/null | awk '/^Version:/{print $2}' || true)
    [ "$have" = "$want" ] || need+=("$spec")
  done
  if [ ${#need[@]} -gt 0 ]; then
    echo "install-deps: installing Python packages: ${need[*]}"
    python3 -m pip install -q "${need[@]}"
  else
    echo "install-deps: Python packages already present"
  fi
fi
