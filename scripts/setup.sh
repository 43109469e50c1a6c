#!/usr/bin/env bash
# Installs what building and testing tilepipe needs, from Debian's packages, when it is missing.
# The CUDA toolkit itself is not a Debian package: it must be at $CUDA_PATH or /usr/local/cuda.
# Arguments name more packages to install the same way (tests/fuzz/libfuzzer.sh: libclang-rt-22-dev).
set -euo pipefail
packages=(cmake ninja-build g++ libgtest-dev clang-22 libclang-22-dev llvm-22-dev llvm-22-tools
          clang-tools-22 clang-tidy-22 python3-jsonschema patch git "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "tilepipe setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cuda=${CUDA_PATH:-/usr/local/cuda}
if [ ! -f "$cuda/include/cuda.h" ]; then
  echo "tilepipe setup: no CUDA toolkit at $cuda (set CUDA_PATH); tilepipe parses against its headers" >&2
  exit 1
fi
