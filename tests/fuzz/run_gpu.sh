#!/usr/bin/env bash
# GPU side of the tilepipe fuzzer. Runs in a bundle written by run_cpu.py --bundle (it is copied
# there): needs only bash, python3, the CUDA toolkit (nvcc) and a GPU; no Clang, no tilepipe.
#
#   bash run_gpu.sh [--jobs N] [--runs N] [--budget SECONDS] [--default-batches K] [--out DIR]
#
#   --jobs N             parallel nvcc builds (default: the number of cores)
#   --runs N             programs run at once on the GPU (default 4)
#   --budget S           stop starting work after S seconds, report what ran (default 540)
#   --default-batches K  also build the first K batches with default flags (default: a quarter)
#   --out DIR            results (default ./gpu-results)
#   --sanitize N         compute-sanitizer memcheck and racecheck on the small cases of the first N
#                        kernels, original and rewrites (default 0; try 20 with a larger budget)
#
# Every batch's original and each rewrite that tilepipe made of it (auto, pipeline, tma) is built
# with `nvcc -O3 -std=c++17 -arch=sm_90 -fmad=false`: with contraction of multiply-adds off on both
# sides, the rewrite must give the same bits for every kernel. Each kernel's output hash of a
# rewrite that differs from the original's is a FAILURE (printed loudly with batch, kernel, mode and
# labels), and so is a rewrite that fails to build, crashes or hangs where the original did not.
# The original runs twice: a difference between its runs, or an original that crashes, is a
# generator bug, reported apart. A subset is also built with default flags (contraction on): a
# difference there is reported as "contraction differs" with the largest distance in ulps, not as
# a failure. Prints a table (kernels, rewritten, equal, differing, by shape class and mode) and
# writes it to DIR/table.txt, with DIR/results.json and DIR/failures.txt.
#
# Exit status: 0 when everything that ran matched; 1 on any failure; 77 when there is no GPU (the
# builds still ran; nothing is reported as passed).
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
jobs=$(nproc 2>/dev/null || echo 4)
runs=4
budget=540
dflt=
out=$PWD/gpu-results
sanitize=0
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) jobs=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --default-batches) dflt=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --sanitize) sanitize=$2; shift 2 ;;
    *) echo "run_gpu.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
start=$(date +%s)
nvcc=$(command -v nvcc || echo "${CUDA_PATH:-/usr/local/cuda}/bin/nvcc")
[ -x "$nvcc" ] || { echo "run_gpu.sh: nvcc not found" >&2; exit 2; }
[ -f "$here/batches.txt" ] || { echo "run_gpu.sh: no batches.txt beside the script (run it in a bundle)" >&2; exit 2; }
mkdir -p "$out/bin" "$out/log"
mapfile -t batches < "$here/batches.txt"
nb=${#batches[@]}
[ -n "$dflt" ] || dflt=$(( (nb + 3) / 4 ))

# Build list: <batch> <variant> <flags tag>; the originals and the -fmad=false builds first.
list=$out/builds.txt
: > "$list"
for b in "${batches[@]}"; do
  echo "$b orig nofma" >> "$list"
  cut -f4 "$here/batches/$b/outcomes.tsv" | grep -v '^-$' | sort -u | sed 's/\.cu$//' |
    while read -r v; do echo "$b $v nofma"; done >> "$list"
done
i=0
for b in "${batches[@]}"; do
  [ $i -lt "$dflt" ] || break
  echo "$b orig fma" >> "$list"
  cut -f4 "$here/batches/$b/outcomes.tsv" | grep -v '^-$' | sort -u | sed 's/\.cu$//' |
    while read -r v; do echo "$b $v fma"; done >> "$list"
  i=$((i + 1))
done

build() { # batch variant tag
  # include/: tilepipe's runtime header (tilepipe/runtime.cuh), which run_cpu.py put in the bundle.
  local flags="-O3 -std=c++17 -arch=sm_90 -w -I$here/include"
  [ "$3" = nofma ] && flags="$flags -fmad=false"
  local exe=$out/bin/$1.$2.$3
  # Past the budget's build share, nothing new is started (the runner reports it as not built).
  if [ $(( $(date +%s) - start )) -gt $(( budget * 6 / 10 )) ]; then
    echo "skipped (time budget)" > "$out/log/$1.$2.$3.build"; return 0
  fi
  local t0=$(date +%s%N)
  if "$nvcc" $flags -o "$exe.tmp" "$here/batches/$1/$2.cu" > "$out/log/$1.$2.$3.build" 2>&1; then
    mv "$exe.tmp" "$exe"
  else
    echo "BUILD FAILED: $1 $2 $3"
  fi
  echo "build_ms $(( ($(date +%s%N) - t0) / 1000000 ))" >> "$out/log/$1.$2.$3.build"
}
export -f build; export out here nvcc start budget
echo "building $(wc -l < "$list") programs with $jobs jobs ($nb batches, $dflt with default flags too)"
xargs -P "$jobs" -L 1 bash -c 'build "$@"' _ < "$list"
echo "builds done after $(( $(date +%s) - start )) s"

gpu=yes
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then gpu=no; fi
cs=$(command -v compute-sanitizer || echo "$(dirname "$nvcc")/compute-sanitizer")
python3 "$here/gpu_compare.py" --bundle "$here" --out "$out" --runs "$runs" \
  --deadline $(( start + budget )) --gpu "$gpu" --sanitize "$sanitize" --sanitizer "$cs"
