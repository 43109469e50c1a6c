#!/usr/bin/env bash
# Builds and runs every verify bundle under a folder (made with `tilepipe verify --bundle`),
# on a machine with a GPU and the CUDA toolkit (no Clang needed). Extra arguments go to run.sh.
#   tests/gpu/run_bundles.sh BUNDLES_DIR [--sanitize] > record.md
set -u
dir=$1; shift
ls "$dir" | xargs -P 16 -I{} bash -c "bash '$dir/{}/build.sh' > '$dir/{}/build.log' 2>&1 || echo 'build failed: {}'"
status=0
for b in "$dir"/*/; do
  name=$(basename "$b")
  echo "### $name"
  echo
  bash "$b/run.sh" "$@" > "$b/run.log" 2>&1
  rc=$?
  grep -E '^\|' "$b/run.log"
  grep -vE '^\||^  ' "$b/run.log" | sed 's/^/    /'
  grep -E '^    ' "$b/run.log" | head -20
  echo
  echo "exit status: $rc"
  echo
  [ $rc = 0 ] || status=1
done
exit $status
