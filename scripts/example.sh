#!/usr/bin/env bash
# Builds tilepipe if needed and rewrites a bundled kernel (the classic tiled matrix multiply),
# printing the remark for each tiled loop and the unified diff of the rewrite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TILEPIPE_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" >/dev/null
cd "$root"
"$build/tool/tilepipe" --diff testdata/matmul_classic.cu
