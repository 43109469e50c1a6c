#!/usr/bin/env bash
# Installs tilepipe into a fresh prefix, configures examples/cmake-project against the installed
# package with the given CMake generator, builds it (the kernel is rewritten at build time), checks
# that a second build does nothing and that editing an included header or a new tilepipe
# regenerates the rewrite, and runs the program where a GPU is present. The example's second kernel
# takes bulk copies, so its rewrite includes the installed runtime header (tilepipe/runtime.cuh),
# built for sm_80 and sm_90. Prefix, project and build folder lie under a path with a space. Exit
# 77 (skipped) without nvcc or the build tool.
#   tests/cmake_example.sh <tilepipe build dir> <source dir> [Ninja | "Unix Makefiles"]
set -eu
build=$1 src=$2 generator=${3:-Ninja}
case $generator in
  Ninja) tool=ninja ;;
  "Unix Makefiles") tool=make ;;
  *) echo "unknown generator: $generator"; exit 2 ;;
esac
command -v "$tool" >/dev/null || { echo "$tool not found"; exit 77; }
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || { echo "nvcc not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
top="$tmp/with space"
mkdir "$top"
cmake --install "$build" --prefix "$top/prefix" >/dev/null
[ -f "$top/prefix/include/tilepipe/runtime.cuh" ] || { echo "the runtime header is not installed"; exit 1; }
[ "$("$top/prefix/bin/tilepipe" --print-runtime-dir)" = "$top/prefix/include" ] ||
  { echo "the installed tilepipe does not find its runtime header"; exit 1; }
cp -r "$src/examples/cmake-project" "$top/project"
b="$top/b"
cmake -S "$top/project" -B "$b" -G "$generator" -DCMAKE_PREFIX_PATH="$top/prefix" \
      -DCMAKE_CUDA_COMPILER="$nvcc" "-DCMAKE_CUDA_ARCHITECTURES=80;90" >/dev/null
cmake --build "$b"
grep -q "cuda::memcpy_async" "$b/tilepipe/stencil/stencil.cu" || { echo "not rewritten"; exit 1; }
grep -q "^#include <tilepipe/runtime.cuh>" "$b/tilepipe/stencil/stencil.cu" &&
  grep -q "::tilepipe_rt::bulk_copy(" "$b/tilepipe/stencil/stencil.cu" ||
  { echo "the rewrite has no bulk copies through the runtime header"; exit 1; }
grep -q '"transformed": true' "$b/stencil.tilepipe.json" || { echo "no report"; exit 1; }
grep -q '"stages": 4' "$b/stencil.tilepipe.json" || { echo "STAGES not passed"; exit 1; }
# The launch check keeps its nvcc builds in the build folder.
ls "$b/tilepipe-cache" | grep -q "^llvmcache-tilepipe-" || { echo "no launch-check cache in the build folder"; exit 1; }
# What the next build would run (a dry run of the build tool).
plan() { cmake --build "$b" -- -n 2>&1; }
if plan | grep -E "tilepipe: rewriting|Building CUDA object"; then
  echo "a second build is not a no-op"; exit 1
fi
sleep 1
touch "$top/project/tile.h"
plan | grep -q "tilepipe: rewriting stencil.cu" || { echo "header edit did not regenerate"; exit 1; }
touch "$top/prefix/bin/tilepipe"
plan | grep -q "tilepipe: rewriting stencil.cu" || { echo "a new tilepipe did not regenerate"; exit 1; }
# The output folder is made by the build itself, so a build after it was removed works too.
rm -rf "$b/tilepipe"
cmake --build "$b" >/dev/null
[ -s "$b/tilepipe/stencil/stencil.cu" ] || { echo "the removed output folder was not made again"; exit 1; }
set +e
"$b/stencil"
rc=$?
set -e
if [ $rc = 77 ]; then echo "built; no GPU to run it"; exit 0; fi
exit $rc
