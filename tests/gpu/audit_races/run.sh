#!/usr/bin/env bash
# Do the audit's findings show on the GPU, and do its fix-its mend them?
#
#   tests/gpu/audit_races/run.sh prepare TILEPIPE DIR
#     Where tilepipe is built: audits racy.cu (every kernel must have a finding with a fix-it),
#     applies the fix-its with clang-apply-replacements into DIR/fixed.cu, audits that (it must be
#     clean), and copies the harness into DIR.
#   tests/gpu/audit_races/run.sh run DIR OUT [BLOCKS] [RUNS] [KERNEL]
#     On the GPU machine (nvcc only): builds racy.cu and fixed.cu into the harness, runs each
#     kernel BLOCKS blocks (default 4096) RUNS times (default 20) for each tile count and compute
#     length, and writes OUT/table.md: per kernel, the runs whose output differs from the
#     reference. Exit 0 when the fixed kernels are right in every run; 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "audit_races: $*" >&2; exit 2; }

prepare() {
  local tilepipe=$1 dir=$2 apply
  apply=$(command -v clang-apply-replacements-22 || command -v clang-apply-replacements ||
    ls /usr/lib/llvm-22/bin/clang-apply-replacements 2>/dev/null) || die "clang-apply-replacements not found"
  mkdir -p "$dir/fixes"
  cp "$here/racy.cu" "$here/main.cu" "$dir/"
  "$tilepipe" audit "$dir/racy.cu" --report="$dir/racy.audit.json" --export-fixes="$dir/fixes/racy.yaml" \
    >"$dir/racy.audit.txt" 2>&1 || true
  cat "$dir/racy.audit.txt"
  cp "$dir/racy.cu" "$dir/fixed.cu"
  sed "s|$dir/racy.cu|$dir/fixed.cu|g" "$dir/fixes/racy.yaml" >"$dir/fixes/fixed.yaml"
  rm "$dir/fixes/racy.yaml"
  "$apply" "$dir/fixes"
  "$tilepipe" audit "$dir/fixed.cu" >"$dir/fixed.audit.txt" 2>&1 || true
  cat "$dir/fixed.audit.txt"
  grep -q ', 0 finding(s)' "$dir/fixed.audit.txt" || die "fixed.cu does not audit clean"
  diff -u "$dir/racy.cu" "$dir/fixed.cu" >"$dir/fixes.diff" || true
}

run() {
  local dir=$1 out=$2 blocks=${3:-4096} runs=${4:-20} only=${5:-} v rc=0
  mkdir -p "$out"
  for v in racy fixed; do
    nvcc -arch=sm_90 -std=c++17 -O3 -fmad=false -DTPV_SOURCE="\"$v.cu\"" -I"$dir" "$dir/main.cu" -o "$out/$v"
  done
  # A broken kernel may hang the GPU; TPV_TIMEOUT seconds (default 900) end each binary.
  timeout "${TPV_TIMEOUT:-900}" "$out/racy" "$blocks" "$runs" $only >"$out/racy.txt" || true
  timeout "${TPV_TIMEOUT:-900}" "$out/fixed" "$blocks" "$runs" $only >"$out/fixed.txt" || rc=1
  python3 - "$out" "$blocks" <<'PY' >"$out/table.md"
import sys
out, blocks = sys.argv[1], sys.argv[2]
def read(v):
    return {(w[0], int(w[1]), int(w[2])): w[3:] for w in (l.split() for l in open(f"{out}/{v}.txt")) if len(w) == 7}
racy, fixed = read('racy'), read('fixed')
print(f"| kernel | tiles n | compute K | racy: wrong runs | racy: most wrong outputs in a run | fixed: wrong runs |")
print("|---|---:|---:|---:|---:|---:|")
for key in racy:
    r, f = racy[key], fixed.get(key, ['?', '?', '?', '?'])
    print(f"| {key[0]} | {key[1]} | {key[2]} | {r[0]} of {r[1]} | {r[2]} of {r[3]} | {f[0]} of {f[1]} |")
PY
  cat "$out/table.md"
  return $rc
}

case "${1:-}" in
  prepare) [ $# -eq 3 ] || die "usage: prepare TILEPIPE DIR"; prepare "$2" "$3" ;;
  run) [ $# -ge 3 ] || die "usage: run DIR OUT [BLOCKS] [RUNS]"; run "${@:2}" ;;
  *) die "usage: run.sh prepare TILEPIPE DIR | run DIR OUT [BLOCKS] [RUNS]" ;;
esac
