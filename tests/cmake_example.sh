#!/usr/bin/env bash
# Installs tilepipe into a fresh prefix, configures examples/cmake-project against the installed
# package, builds it (the kernel is rewritten at build time), checks that a second build does
# nothing and that editing an included header regenerates the rewrite, and runs the program where
# a GPU is present. Exit 77 (skipped) without nvcc.
#   tests/cmake_example.sh <tilepipe build dir> <source dir>
set -eu
build=$1 src=$2
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || { echo "nvcc not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cp -r "$src/examples/cmake-project" "$tmp/project"
cmake -S "$tmp/project" -B "$tmp/b" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCMAKE_CUDA_COMPILER="$nvcc" >/dev/null
cmake --build "$tmp/b"
grep -q "cuda::memcpy_async" "$tmp/b/tilepipe/stencil/stencil.cu" || { echo "not rewritten"; exit 1; }
grep -q '"transformed": true' "$tmp/b/stencil.tilepipe.json" || { echo "no report"; exit 1; }
grep -q '"stages": 4' "$tmp/b/stencil.tilepipe.json" || { echo "STAGES not passed"; exit 1; }
ninja -C "$tmp/b" -n | grep -q "no work to do" || { echo "a second build is not a no-op"; exit 1; }
sleep 1
touch "$tmp/project/tile.h"
ninja -C "$tmp/b" -n | grep -q "tilepipe: rewriting stencil.cu" || { echo "header edit did not regenerate"; exit 1; }
touch "$tmp/prefix/bin/tilepipe"
ninja -C "$tmp/b" -n | grep -q "tilepipe: rewriting stencil.cu" || { echo "a new tilepipe did not regenerate"; exit 1; }
cmake --build "$tmp/b" >/dev/null
set +e
"$tmp/b/stencil"
rc=$?
set -e
if [ $rc = 77 ]; then echo "built; no GPU to run it"; exit 0; fi
exit $rc
