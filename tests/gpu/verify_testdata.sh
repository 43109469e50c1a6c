#!/usr/bin/env bash
# Runs every rewritten testdata program on a GPU beside its original and compares their outputs
# bit for bit. Needs only the CUDA toolkit (nvcc) and a GPU; the rewritten sources come from
# generated/, produced by tilepipe on a machine with Clang.
#
#   tests/gpu/verify_testdata.sh [out-dir]
#
# TILEPIPE_PROGRAMS="a b" checks only those programs; TILEPIPE_GENERATED=DIR takes the rewrites
# from DIR instead of generated/ (an older tool's output, say, to show what it got wrong).
#
# For each program whose generated/ file differs from its testdata/ file: build both twice, with
# -O3 -arch=sm_90 as users do and with -fmad=false added, run each build twice with seed 1 and once
# with seed 7 (every program poisons its outputs before each launch), and require:
#  - with -fmad=false, original == rewritten, bit for bit, for both seeds: the rewrite computes the
#    same function (floating-point contraction, which nvcc decides from the shape of the code
#    around an expression, is off, so it cannot hide or cause a difference);
#  - every repeat identical to its first run (a race shows as a difference between runs);
#  - seed 7 output differs from seed 1 (the inputs really are random).
# With default flags the table also says whether the outputs are bitwise equal; a difference
# there that -fmad=false removes is contraction, not the rewrite. Times are with default flags.
# Prints a Markdown table; exits 1 on any failure.
set -u -o pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$(mktemp -d)}
arch=${TILEPIPE_GPU_ARCH:-sm_90}
mkdir -p "$out/bin" "$out/data"
cd "$root"

gen=${TILEPIPE_GENERATED:-generated}
progs=()
for g in "$gen"/*.cu; do
  name=$(basename "$g" .cu)
  if [ -n "${TILEPIPE_PROGRAMS:-}" ] && [[ " $TILEPIPE_PROGRAMS " != *" $name "* ]]; then continue; fi
  cmp -s "$g" "testdata/$name.cu" || progs+=("$name")
done

build() { # name variant source [flags]
  # runtime/include: tilepipe/runtime.cuh, which the rewrites with tensor or bulk copies include.
  # TILEPIPE_UNSEEN_INSTANCES: text tilepipe's parse did not read (template_guard.cu launches
  # instantiations of its templates there, which must run the loop as it was).
  nvcc -O3 -std=c++17 -arch="$arch" -Iruntime/include -DTILEPIPE_UNSEEN_INSTANCES $4 -o "$out/bin/$1.$2" "$3" >"$out/bin/$1.$2.log" 2>&1 ||
    { echo "BUILD FAILED: $3 $4"; cat "$out/bin/$1.$2.log"; return 1; }
}
export -f build; export out arch gen
printf '%s\n' "${progs[@]}" | xargs -P "$(nproc)" -I{} bash -c 'build {} orig testdata/{}.cu; build {} pipe "$gen"/{}.cu;
  build {} orig_nofma testdata/{}.cu -fmad=false; build {} pipe_nofma "$gen"/{}.cu -fmad=false'

status=0
run3() { # name variant: seed 1 twice, seed 7 once; 0 when all ran
  local rc=0
  [ -x "$out/bin/$1.$2" ] || return 1
  for r in s1a s1b s7; do
    "$out/bin/$1.$2" "$out/data/$1.$2.$r" "$([ $r = s7 ] && echo 7 || echo 1)" >"$out/data/$1.$2.$r.log" 2>&1 ||
      { rc=1; cat "$out/data/$1.$2.$r.log"; }
  done
  return $rc
}
echo "| program | original ms | pipelined ms | speedup | -fmad=false: equal (seed 1, seed 7) | default flags: equal | repeats equal | seeds differ |"
echo "|---|---:|---:|---:|---|---|---|---|"
for p in "${progs[@]}"; do
  ok=yes
  for v in orig pipe orig_nofma pipe_nofma; do run3 "$p" "$v" || ok=no; done
  d="$out/data/$p"
  # One time per timed launch, in order (a program may time several kernels).
  t_o=$(grep -h '^time_ms=' "$d.orig.s1a.log" 2>/dev/null | cut -d= -f2 | paste -sd' ')
  t_p=$(grep -h '^time_ms=' "$d.pipe.s1a.log" 2>/dev/null | cut -d= -f2 | paste -sd' ')
  strict=no; dflt=no; rep=yes; seeds=no
  cmp -s "$d.orig_nofma.s1a" "$d.pipe_nofma.s1a" && cmp -s "$d.orig_nofma.s7" "$d.pipe_nofma.s7" && strict=yes
  if cmp -s "$d.orig.s1a" "$d.pipe.s1a" && cmp -s "$d.orig.s7" "$d.pipe.s7"; then dflt=yes
  else dflt="no: $(cmp -l "$d.orig.s1a" "$d.pipe.s1a" 2>/dev/null | wc -l) bytes differ"; fi
  for v in orig pipe orig_nofma pipe_nofma; do cmp -s "$d.$v.s1a" "$d.$v.s1b" || rep=no; done
  cmp -s "$d.orig.s1a" "$d.orig.s7" || seeds=yes
  speed=-
  [ -n "$t_o" ] && [ -n "$t_p" ] && speed=$(awk -v a="$t_o" -v b="$t_p" 'BEGIN{
    n = split(a, x, " "); split(b, y, " ")
    for (i = 1; i <= n; ++i) printf "%s%.2fx", (i > 1 ? ", " : ""), x[i] / y[i] }')
  echo "| $p | ${t_o// /, } | ${t_p// /, } | $speed | $strict | $dflt | $rep | $seeds |" | sed 's/|  |/| - |/g'
  [ "$ok$strict$rep$seeds" = yesyesyesyes ] || status=1
  rm -f "$d".*.s1a "$d".*.s1b "$d".*.s7
done
[ $status = 0 ] && echo "verdict: all ${#progs[@]} rewritten programs match their originals" || echo "verdict: FAILED"
exit $status
