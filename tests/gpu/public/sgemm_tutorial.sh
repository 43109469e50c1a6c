#!/usr/bin/env bash
# tilepipe on a public SGEMM tutorial (github.com/siboehm/SGEMM_CUDA, src/), run on a GPU beside
# the original, compared bit for bit and timed. The tutorial stays outside the project: prepare
# takes a checkout of it.
#
#   sgemm_tutorial.sh prepare CHECKOUT DIR TILEPIPE   (a machine with Clang: rewrite into DIR)
#   sgemm_tutorial.sh run DIR RESULTS [kernel ...]    (the GPU machine: nvcc, the GPU)
#
# prepare copies CHECKOUT/src to DIR/orig, DIR/pipe, DIR/always and DIR/regs, rewrites DIR/pipe
# in place with the default plan, DIR/always with --plan=always and DIR/regs with
# --plan-choice=2:registers (whose kernels need __launch_bounds__, placed in their headers;
# runner.cu includes every kernel's header), and keeps tilepipe's remarks in DIR/*.remarks.txt. run builds the driver
# (sgemm_driver.cu) against each, with -fmad=false as well (contraction, which nvcc decides from the
# shape of the code around an expression, cannot then hide or cause a difference), runs each build
# twice with seed 1 and once with seed 7, and requires: with -fmad=false each rewrite's results
# equal the original's bit for bit; every repeat equal to its first run; seed 7 unlike seed 1.
# Prints a Markdown table; exits 1 on any failure.
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in
prepare)
  [ $# -eq 4 ] || { echo "usage: $0 prepare CHECKOUT DIR TILEPIPE" >&2; exit 2; }
  src=$2 dir=$3 tp=$4
  [ -f "$src/src/runner.cu" ] || { echo "$src/src/runner.cu: not a checkout of SGEMM_CUDA" >&2; exit 2; }
  rm -rf "$dir" && mkdir -p "$dir" && dir=$(cd "$dir" && pwd)
  cp -r "$src/src" "$dir/orig" && cp "$here/sgemm_driver.cu" "$dir/"
  for v in pipe always regs; do
    cp -r "$src/src" "$dir/$v"
    plan=(); [ $v = always ] && plan=(--plan=always); [ $v = regs ] && plan=(--plan-choice=2:registers)
    (cd "$dir/$v" && "$tp" "${plan[@]}" --in-place runner.cu -- -I. >"$dir/$v.remarks.txt" 2>&1)
    rc=$?
    echo "== $v"; grep -E "remark: \[|^tilepipe:" "$dir/$v.remarks.txt" | sed "s|$dir/$v/||" | cut -c1-400
    [ $rc -eq 0 ] || { echo "tilepipe exited $rc" >&2; exit 1; }
  done
  exit 0 ;;
run)
  [ $# -ge 3 ] || { echo "usage: $0 run DIR RESULTS [kernel ...]" >&2; exit 2; }
  dir=$2 res=$3; shift 3
  mkdir -p "$res"
  for v in orig pipe always regs; do
    for f in "" -fmad=false; do
      b="$res/$v${f:+_nofma}"
      (nvcc -O3 -std=c++17 -arch=sm_90 $f -I"$dir/$v" -o "$b" "$dir/sgemm_driver.cu" "$dir/$v/runner.cu" -lcublas \
        >"$b.log" 2>&1 || { echo "BUILD FAILED: $v $f"; cat "$b.log"; }) &
    done
  done
  wait
  status=0
  all="orig pipe always regs orig_nofma pipe_nofma always_nofma regs_nofma"
  for b in $all; do
    [ -x "$res/$b" ] || { status=1; continue; }
    for r in s1a s1b s7; do
      "$res/$b" "$res/$b.$r.bin" "${r:1:1}" "$@" >"$res/$b.$r.txt" 2>&1 || { echo "RUN FAILED: $b $r"; cat "$res/$b.$r.txt"; status=1; }
    done
  done
  same() { cmp -s "$res/$1" "$res/$2" && echo yes || echo NO; }
  echo "| check | result |"
  echo "|---|---|"
  for b in $all; do
    r=$(same "$b.s1a.bin" "$b.s1b.bin"); echo "| $b: run 2 equals run 1 | $r |"; [ "$r" = yes ] || status=1
    r=$(same "$b.s1a.bin" "$b.s7.bin"); echo "| $b: seed 7 differs from seed 1 | $([ "$r" = NO ] && echo yes || echo NO) |"
    [ "$r" = NO ] || status=1
  done
  for v in pipe always regs; do
    for seed in s1a s7; do
      r=$(same orig_nofma.$seed.bin ${v}_nofma.$seed.bin)
      echo "| -fmad=false: $v equals the original, seed ${seed:1:1} | $r |"; [ "$r" = yes ] || status=1
    done
    echo "| default flags: $v equals the original, seed 1 | $(same orig.s1a.bin $v.s1a.bin) |"
  done
  echo
  echo "| kernel | M N K | original ms | default plan ms | time / original | --plan=always ms | time / original | 2:registers ms | time / original |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
  paste <(grep '^time' "$res/orig.s1a.txt") <(grep '^time' "$res/pipe.s1a.txt") <(grep '^time' "$res/always.s1a.txt") \
    <(grep '^time' "$res/regs.s1a.txt") |
    awk '{ split($2,k,"="); split($3,m,"="); split($4,n,"="); split($5,kk,"=");
      split($6,a,"="); split($12,b,"="); split($18,c,"="); split($24,d,"=");
      printf "| %s | %s %s %s | %.4f | %.4f | %.3f | %.4f | %.3f | %.4f | %.3f |\n", k[2], m[2], n[2], kk[2], a[2], b[2], b[2]/a[2], c[2], c[2]/a[2], d[2], d[2]/a[2] }'
  exit $status ;;
*)
  sed -n '2,15p' "$0"; exit 2 ;;
esac
