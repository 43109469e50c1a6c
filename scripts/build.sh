#!/usr/bin/env bash
# Configures and builds tilepipe into build/ (or $TILEPIPE_BUILD_DIR): the targets named as
# arguments (scripts/example.sh: tilepipe), else everything, the tests too. Each step says what it
# does on stderr, and the build's own progress follows it there, so stdout stays the caller's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TILEPIPE_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh" >&2
echo "tilepipe build: configuring $build" >&2
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
echo "tilepipe build: building ${*:-everything, the tests too} ($(nproc) jobs)" >&2
cmake --build "$build" -j "$(nproc)" "${targets[@]}" >&2
