#!/usr/bin/env bash
# Installs every Debian package lazytrain needs to build and test.
# Usage: bash scripts/install_deps.sh   (as root, or with sudo available)
set -euo pipefail
packages=(cmake make ninja-build g++ pkg-config ccache
          libdnnl-dev libsleef-dev nlohmann-json3-dev libcli11-dev libutf8proc-dev libgtest-dev
          libprotobuf-dev protobuf-compiler libsentencepiece-dev python3-protobuf
          libopenmpi-dev openmpi-bin)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo_cmd=()
if [ "$(id -u)" != 0 ]; then sudo_cmd=(sudo); fi
echo "installing: ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
