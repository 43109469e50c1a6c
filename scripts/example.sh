#!/usr/bin/env bash
# Builds tilepipe if needed (the program alone, not the tests; its progress on stderr) and rewrites
# a bundled kernel (the classic tiled matrix multiply), printing the remark for each tiled loop and
# the unified diff of the rewrite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TILEPIPE_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" tilepipe
cd "$root"
"$build/tool/tilepipe" --diff testdata/matmul_classic.cu
