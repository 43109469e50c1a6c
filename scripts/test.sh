#!/usr/bin/env bash
# Builds tilepipe and runs every test (GoogleTest under CTest). Without nvcc the nvcc build tests
# are reported as skipped, not passed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TILEPIPE_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j "$(nproc)"
