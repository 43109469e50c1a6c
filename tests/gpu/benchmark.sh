#!/usr/bin/env bash
# The benchmark: the timed case of every kernel of every testdata spec (testdata/*.tilepipe.yaml),
# the original against tilepipe's variants, with both floors (docs/benchmark/ has the records).
#
#   tests/gpu/benchmark.sh prepare [--dir DIR] [--tilepipe PATH] [--specs "NAME..."] [--jobs N] [--clean]
#                                  [--variant NAME -- <tilepipe options>]...
#     Where tilepipe is built. Writes into DIR (default .benchbundle/, git-ignored) one
#     `tilepipe verify --bundle` per spec and variant: DIR/<variant>/<spec>/, and DIR/_floor/<spec>/
#     (made with --plan=always) whose original and compute-only variant every variant is measured
#     against. Without --variant: `default` (tilepipe's default options) and `always`
#     (--plan=always). With --variant, those variants are written (or rewritten) beside the ones the
#     folder has; it must have been prepared at the same commit for the same specs (--clean starts
#     over). DIR/manifest.json names the commit, tilepipe's version and each variant's options.
#
#   tests/gpu/benchmark.sh run [--dir DIR] [--out DIR] [--budget SECONDS] [--rounds N] [--arch sm_XX]
#                              [--jobs N]
#     On the GPU machine, with only nvcc, bash and python3 (copy DIR there). Builds every bundle's
#     programs once (the original and the compute-only variant once per spec, each variant's rewrite
#     once), then runs R rounds (default 3): in each, every spec's programs one after the other, each
#     timing its timed cases (21 launches after warm-up) and measuring the device-to-device copy
#     bandwidth beside them. Round 1 also runs every case of every program once and compares each
#     variant's outputs with the original's, bit for bit. Writes OUT/benchmark.json and
#     OUT/benchmark.md (default OUT: DIR/result) and prints the tables.
#     --budget: the seconds the whole command may take (builds included); where the next program
#     would not finish within it, it stops and marks the record incomplete.
#     Exit: 0 recorded (complete or not); 1 a bug: a variant's outputs differ from the original's, or
#     a variant fails to build or run where the original ran; 2 usage; 77 built, but no GPU to run on.
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
report="$here/bench_report.py"

die() { echo "benchmark.sh: $*" >&2; exit 2; }
json_str() { # a JSON string literal
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\t'/\\t}
  s=${s//$'\n'/\\n}
  printf '"%s"' "$s"
}
now_utc() { date -u +%Y-%m-%dT%H:%M:%SZ; }
# The clock the budget is counted on: the shell's seconds; or, where TILEPIPE_BENCH_CLOCK names a
# file, the whole seconds it holds, which only the programs run advance (BenchmarkTest's stand-in
# GPU, as its runs "take" time), so that where the budget stops a test never depends on the
# machine's speed. `limited S CMD...` runs CMD for at most S seconds of that clock: with `timeout`
# on the shell's, not at all on a file's (no run there takes long, and `timeout` counts real ones).
now_s() { if [ -n "${TILEPIPE_BENCH_CLOCK:-}" ]; then cat "$TILEPIPE_BENCH_CLOCK"; else echo "$SECONDS"; fi; }
limited() {
  local s=$1
  shift
  if [ -n "${TILEPIPE_BENCH_CLOCK:-}" ]; then "$@"; else timeout "$s" "$@"; fi
}

# ------------------------------------------------------------------------------------- prepare

prepare() {
  local dir="$root/.benchbundle" tilepipe="" specs="" jobs clean=0
  jobs=$(nproc 2>/dev/null || echo 2)
  local -a names=() options=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --dir) dir=${2:?}; shift 2 ;;
      --dir=*) dir=${1#*=}; shift ;;
      --tilepipe) tilepipe=${2:?}; shift 2 ;;
      --tilepipe=*) tilepipe=${1#*=}; shift ;;
      --specs) specs=${2:?}; shift 2 ;;
      --specs=*) specs=${1#*=}; shift ;;
      --jobs|-j) jobs=${2:?}; shift 2 ;;
      --jobs=*) jobs=${1#*=}; shift ;;
      --clean) clean=1; shift ;;
      --variant)
        [ $# -ge 2 ] || die "--variant needs a name"
        local name=$2 opts=()
        shift 2
        [ "${1:-}" = -- ] && shift
        while [ $# -gt 0 ] && [ "$1" != --variant ]; do opts+=("$1"); shift; done
        [[ $name =~ ^[A-Za-z][A-Za-z0-9_-]*$ ]] || die "variant name '$name': letters, digits, _ and - only"
        case "$name" in original|compute_only) die "'$name' is not a variant's name: it is measured anyway" ;; esac
        names+=("$name")
        options+=("${opts[*]}")
        ;;
      *) die "prepare: unknown argument '$1' (tilepipe's options go after --variant NAME --)" ;;
    esac
  done
  if [ ${#names[@]} = 0 ]; then
    names=(default always)
    options=("" "--plan=always")
  fi
  [ -n "$tilepipe" ] || tilepipe=${TILEPIPE:-${TILEPIPE_BUILD_DIR:-$root/build}/tool/tilepipe}
  [ -x "$tilepipe" ] || die "no tilepipe at $tilepipe (build it, or give --tilepipe)"
  if [ -z "$specs" ]; then
    for s in "$root"/testdata/*.tilepipe.yaml; do specs+=" $(basename "$s" .tilepipe.yaml)"; done
  fi
  specs=$(printf '%s\n' $specs | sort -u | paste -sd' ')
  for s in $specs; do
    [ -f "$root/testdata/$s.tilepipe.yaml" ] || die "no spec testdata/$s.tilepipe.yaml"
  done

  local commit version
  commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
  if [ "$commit" != unknown ] && [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit="$commit-dirty"
  fi
  version=$("$tilepipe" --version 2>/dev/null | head -n 1)
  if [ $clean = 1 ]; then
    rm -rf "$dir"
  elif [ -f "$dir/prepared.txt" ]; then
    local was_commit was_specs
    was_commit=$(sed -n 's/^commit=//p' "$dir/prepared.txt")
    was_specs=$(sed -n 's/^specs=//p' "$dir/prepared.txt")
    [ "$was_commit" = "$commit" ] && [ "$was_specs" = "$specs" ] ||
      die "$dir was prepared at $was_commit for specs '$was_specs'; now $commit for '$specs': add --clean to start over"
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)

  # One task per spec and variant, and the floor of each spec: tilepipe verify --bundle.
  local -a tasks=()
  local i s
  for s in $specs; do
    [ -f "$dir/_floor/$s/driver.cu" ] || tasks+=("_floor|$s|--plan=always")
    for i in "${!names[@]}"; do tasks+=("${names[$i]}|$s|${options[$i]}"); done
  done
  local failed=0 running=0 t
  one() { # variant spec options
    local b="$dir/$1/$2" opts
    read -r -a opts <<< "$3"
    rm -rf "$b"
    mkdir -p "$dir/$1"
    if "$tilepipe" verify "${opts[@]}" "$root/testdata/$2.cu" --bundle "$b" > "$dir/$1/$2.log" 2>&1; then
      echo "prepared $1/$2"
    else
      echo "FAILED: tilepipe verify ${opts[*]} testdata/$2.cu (the log: $dir/$1/$2.log)"
      tail -n 5 "$dir/$1/$2.log" | sed 's/^/    /'
      return 1
    fi
  }
  for t in "${tasks[@]}"; do
    IFS='|' read -r v s o <<< "$t"
    one "$v" "$s" "$o" &
    running=$((running + 1))
    if [ $running -ge "$jobs" ]; then
      wait -n || failed=$((failed + 1))
      running=$((running - 1))
    fi
  done
  while [ $running -gt 0 ]; do
    wait -n || failed=$((failed + 1))
    running=$((running - 1))
  done

  # The variants the folder holds: those it had, with these replaced or added, in order.
  local -A opt_of=()
  local -a order=()
  if [ -f "$dir/variants.txt" ]; then
    while IFS=$'\t' read -r n o; do
      [ -n "$n" ] || continue
      opt_of[$n]=$o
      order+=("$n")
    done < "$dir/variants.txt"
  fi
  for i in "${!names[@]}"; do
    [ -n "${opt_of[${names[$i]}]+x}" ] || order+=("${names[$i]}")
    opt_of[${names[$i]}]=${options[$i]}
  done
  : > "$dir/variants.txt"
  for n in "${order[@]}"; do printf '%s\t%s\n' "$n" "${opt_of[$n]}" >> "$dir/variants.txt"; done
  printf 'commit=%s\nspecs=%s\n' "$commit" "$specs" > "$dir/prepared.txt"

  local date sep=""
  date=$(now_utc)
  {
    printf '{\n "schema": "tilepipe-benchmark-bundle/1",\n "prepared": {\n'
    printf '  "commit": %s,\n  "date": %s,\n  "tilepipe": %s,\n  "specs": %s\n },\n' \
      "$(json_str "$commit")" "$(json_str "$date")" "$(json_str "$version")" "$(json_str "$specs")"
    printf ' "floor": {"tilepipe_options": "--plan=always"},\n "variants": ['
    for n in "${order[@]}"; do
      printf '%s\n  {"name": %s, "tilepipe_options": %s}' "$sep" "$(json_str "$n")" "$(json_str "${opt_of[$n]}")"
      sep=","
    done
    printf '\n ]\n}\n'
  } > "$dir/manifest.json"

  local nspecs nvars
  nspecs=$(wc -w <<< "$specs")
  nvars=${#order[@]}
  if [ $failed -gt 0 ]; then
    echo "benchmark.sh prepare: $failed of ${#tasks[@]} bundles FAILED (above); $dir is incomplete"
    return 1
  fi
  echo "prepared $nspecs spec(s) x $nvars variant(s) (${order[*]}) in $dir, at $commit"
  echo "on the GPU machine (nvcc, bash and python3; copy $dir there): tests/gpu/benchmark.sh run [--budget SECONDS]"
}

# ------------------------------------------------------------------------------------- run

run() {
  local dir="$root/.benchbundle" out="" budget=0 rounds=3 arch=${TILEPIPE_GPU_ARCH:-sm_90} jobs
  jobs=$(nproc 2>/dev/null || echo 4)
  while [ $# -gt 0 ]; do
    case "$1" in
      --dir) dir=${2:?}; shift 2 ;;
      --dir=*) dir=${1#*=}; shift ;;
      --out) out=${2:?}; shift 2 ;;
      --out=*) out=${1#*=}; shift ;;
      --budget) budget=${2:?}; shift 2 ;;
      --budget=*) budget=${1#*=}; shift ;;
      --rounds) rounds=${2:?}; shift 2 ;;
      --rounds=*) rounds=${1#*=}; shift ;;
      --arch) arch=${2:?}; shift 2 ;;
      --arch=*) arch=${1#*=}; shift ;;
      --jobs|-j) jobs=${2:?}; shift 2 ;;
      --jobs=*) jobs=${1#*=}; shift ;;
      *) die "run: unknown argument '$1'" ;;
    esac
  done
  [[ $budget =~ ^[0-9]+$ ]] || die "--budget takes whole seconds (0: none)"
  [[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds takes a number of rounds, at least 1"
  [ -f "$dir/manifest.json" ] && [ -f "$dir/variants.txt" ] || die "no prepared bundle in $dir (benchmark.sh prepare)"
  dir=$(cd "$dir" && pwd)
  [ -n "$out" ] || out="$dir/result"
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  command -v python3 >/dev/null || die "python3 is needed for the report"
  local nvcc=${NVCC:-nvcc}
  command -v "$nvcc" >/dev/null || nvcc=/usr/local/cuda/bin/nvcc
  command -v "$nvcc" >/dev/null || die "no nvcc (set NVCC)"
  export NVCC=$nvcc TP_ARCH=$arch

  local t0 started
  t0=$(now_s)
  started=$(now_utc)
  local raw="$out/raw" scratch
  rm -rf "$raw"
  mkdir -p "$raw"
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  local specs
  specs=$(sed -n 's/^specs=//p' "$dir/prepared.txt")
  local -a variants=()
  local n o
  while IFS=$'\t' read -r n o; do [ -n "$n" ] && variants+=("$n"); done < "$dir/variants.txt"
  local -a keys=(original "${variants[@]}" compute_only)
  left() { # seconds of the budget left (a large number without one)
    if [ "$budget" = 0 ]; then echo 1000000; else echo $((budget - ($(now_s) - t0))); fi
  }
  bin_of() { # spec key -> the program
    case "$2" in
      original|compute_only|census) echo "$dir/_floor/$1/$2" ;;
      *) echo "$dir/$2/$1/rewritten" ;;
    esac
  }
  local nvcc_version
  nvcc_version=$("$nvcc" --version 2>/dev/null | grep -o 'V[0-9][0-9.]*' | tail -n 1)
  meta() { # the facts of the run so far, for bench_report.py
    printf 'started=%s\ndate=%s\nran=%s\ncomplete=%s\narch=%s\nrounds=%s\nnvcc=%s\nnvidia_driver=%s\nbudget=%s\n' \
      "$started" "$(now_utc)" "$1" "$2" "$arch" "$rounds" "$nvcc_version" "${nvidia_driver:-}" "$budget" > "$raw/meta.txt"
  }
  finish() { # ran complete exit-status
    meta "$1" "$2"
    if ! python3 "$report" record --bundle "$dir" --raw "$raw" > "$out/benchmark.json" ||
       ! python3 "$report" markdown "$out/benchmark.json" > "$out/benchmark.md"; then
      echo "benchmark.sh: the report failed"
      exit 1
    fi
    echo
    cat "$out/benchmark.md"
    echo
    echo "benchmark.sh run: $out/benchmark.json and benchmark.md, $(($(now_s) - t0)) s"
    exit "$3"
  }

  # Build: every program once, in parallel, with its kernels named for their resources
  # (-DTPV_RESOURCES); where that does not compile (an overloaded kernel name), without.
  echo "building with $nvcc for $arch ($jobs at a time)"
  local -a builds=()
  local s k
  for s in $specs; do
    mkdir -p "$raw/$s"
    builds+=("$s|original" "$s|compute_only" "$s|census")
    for k in "${variants[@]}"; do builds+=("$s|$k"); done
  done
  build_one() { # spec key
    local b log="$raw/$1/$2.build.log" limit
    b=$(bin_of "$1" "$2")
    limit=$(left)
    [ "$limit" -gt 0 ] || { echo "not run" > "$raw/$1/$2.status"; return 0; }
    local what=rewritten
    case "$2" in original|compute_only|census) what=$2 ;; esac
    if { [ "$what" = compute_only ] || [ "$what" = census ]; } && [ ! -f "$(dirname "$b")/compute_only.cu" ]; then
      echo "no compute-only variant (no loop rewritten)" > "$log"
      echo "build failed" > "$raw/$1/$2.status"
      return 0
    fi
    if TP_NVCC_FLAGS=-DTPV_RESOURCES limited "$limit" bash "$(dirname "$b")/build.sh" "$what" > "$log" 2>&1 &&
       [ -x "$b" ]; then
      return 0
    fi
    limit=$(left)
    if [ "$limit" -gt 0 ] && { echo "--- again without -DTPV_RESOURCES"; limited "$limit" bash "$(dirname "$b")/build.sh" "$what"; } >> "$log" 2>&1 &&
       [ -x "$b" ]; then
      return 0
    fi
    if [ "$(left)" -le 0 ]; then
      echo "not run" > "$raw/$1/$2.status"
    else
      echo "build failed" > "$raw/$1/$2.status" # reported below
    fi
  }
  local running=0 bt
  for bt in "${builds[@]}"; do
    build_one "${bt%%|*}" "${bt#*|}" &
    running=$((running + 1))
    if [ $running -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
  done
  wait
  echo "built in $(($(now_s) - t0)) s"

  local bug=0 complete=true
  for s in $specs; do
    for k in "${keys[@]}"; do
      case "$(cat "$raw/$s/$k.status" 2>/dev/null)" in
        "not run") complete=false ;;
        "build failed")
          case "$k" in
            compute_only) echo "note: no compute-only variant of $s (no compute-only floor; the memory floor stands)" ;;
            original) echo "ERROR: the original of $s does not build (the log: $raw/$s/$k.build.log)"; bug=1 ;;
            *) echo "BUG: the $k variant of $s does not build (the log: $raw/$s/$k.build.log)"; bug=1 ;;
          esac ;;
      esac
    done
  done
  for s in $specs; do
    [ "$(cat "$raw/$s/census.status" 2>/dev/null)" = "build failed" ] &&
      [ -f "$dir/_floor/$s/compute_only.cu" ] && echo "note: the census of $s does not build (no L2 floor)"
  done
  [ $complete = true ] || echo "the budget of $budget s ran out while building: the record is incomplete"

  # A GPU to run on?
  local probe=""
  for s in $specs; do
    [ -x "$(bin_of "$s" original)" ] && { probe=$(bin_of "$s" original); break; }
  done
  if [ -z "$probe" ] || ! gpu=$("$probe" probe 2>/dev/null); then
    echo "no usable CUDA device (or no original built): the programs were built, nothing ran"
    finish false false 77
  fi
  echo "device: $gpu"
  nvidia_driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
  for s in $specs; do
    for k in "${keys[@]}" census; do
      [ -x "$(bin_of "$s" "$k")" ] && "$(bin_of "$s" "$k")" info > "$raw/$s/$k.info.json" 2> "$raw/$s/$k.info.log"
    done
  done

  # The rounds. A program's next run is expected to take as long as its last; the first runs of
  # round 1 (every case) are expected to take as long as the longest run so far.
  local -A last=()
  local longest=0 r args b rc start took st tol
  for r in $(seq 1 "$rounds"); do
    echo "round $r of $rounds ($(($(now_s) - t0)) s)"
    for s in $specs; do
      for k in "${keys[@]}"; do
        b=$(bin_of "$s" "$k")
        st=$(cat "$raw/$s/$k.status" 2>/dev/null)
        [ -z "$st" ] || continue
        # Without the original, nothing of this spec can be compared: none of it runs.
        [ "$k" = original ] || [ -z "$(cat "$raw/$s/original.status" 2>/dev/null)" ] || continue
        [ -x "$b" ] || continue
        local expect=${last[$s/$k]:-$longest}
        if [ "$budget" != 0 ] && [ $(( $(left) - 5 )) -le "$expect" ]; then
          echo "the budget of $budget s is spent: stopping before round $r of $s ($k); the record is incomplete"
          complete=false
          break 3
        fi
        args=(--runs 1 --time)
        { [ "$r" -gt 1 ] || [ "$k" = compute_only ]; } && args+=(--timed-only)
        start=$(now_s)
        if [ "$budget" = 0 ]; then
          "$b" run "$scratch/$s.$k.bin" "${args[@]}" > "$raw/$s/$k.r$r.log" 2>&1
        else
          limited $(( $(left) - 5 )) "$b" run "$scratch/$s.$k.bin" "${args[@]}" > "$raw/$s/$k.r$r.log" 2>&1
        fi
        rc=$?
        took=$(($(now_s) - start))
        last[$s/$k]=$took
        [ "$took" -gt "$longest" ] && longest=$took
        if [ $rc = 124 ] && [ "$budget" != 0 ]; then
          echo "the budget of $budget s ran out during round $r of $s ($k): stopped; the record is incomplete"
          rm -f "$scratch/$s.$k.bin.txt"
          complete=false
          break 3
        fi
        # A copy: the notes also tell `compare` which cases ran (it reads OUT.txt beside OUT).
        [ -f "$scratch/$s.$k.bin.txt" ] && cp "$scratch/$s.$k.bin.txt" "$raw/$s/$k.r$r.txt"
        if [ $rc != 0 ]; then
          if grep -qE 'cudaErrorLaunchOutOfResources|too many resources' "$raw/$s/$k.r$r.log"; then
            st="cannot launch"
          else
            st="failed"
          fi
          echo "$st" > "$raw/$s/$k.status"
          case "$k" in
            compute_only) echo "note: the compute-only variant of $s $st (no compute-only floor; the memory floor stands)" ;;
            original) echo "ERROR: the original of $s $st (exit $rc): its variants are not compared"; bug=1 ;;
            *) echo "BUG: the $k variant of $s $st where the original ran (exit $rc; the log: $raw/$s/$k.r$r.log)"
               tail -n 3 "$raw/$s/$k.r$r.log" | sed 's/^/    /'
               bug=1 ;;
          esac
        fi
      done
      if [ "$r" != 1 ] || [ -n "$(cat "$raw/$s/original.status" 2>/dev/null)" ]; then
        rm -f "$scratch/$s".*.bin
        continue
      fi
      # Round 1: every variant's outputs against the original's, bit for bit.
      tol=$(sed -n 's/^tol=//p' "$dir/_floor/$s/run.sh" | head -n 1)
      for k in "${variants[@]}"; do
        [ -f "$scratch/$s.original.bin" ] && [ -f "$scratch/$s.$k.bin" ] && [ -z "$(cat "$raw/$s/$k.status" 2>/dev/null)" ] || continue
        "$(bin_of "$s" "$k")" compare "$scratch/$s.original.bin" "$scratch/$s.$k.bin" --tolerance 0 \
          --json "$raw/$s/$k.compare.json" > "$raw/$s/$k.compare.log" 2>&1
        rc=$?
        [ $rc = 0 ] && continue
        echo
        if grep -q DIFFER "$raw/$s/$k.compare.log"; then
          echo "BUG: the $k variant of $s DIFFERS from the original (bitwise; $raw/$s/$k.compare.log):"
        else
          echo "BUG: the $k variant of $s could not be compared with the original (exit $rc; $raw/$s/$k.compare.log):"
        fi
        grep -E 'DIFFER|differ|index|not run|error' "$raw/$s/$k.compare.log" | head -n 20 | sed 's/^/    /'
        if [ -n "$tol" ] && [ "$tol" != 0 ] &&
           "$(bin_of "$s" "$k")" compare "$scratch/$s.original.bin" "$scratch/$s.$k.bin" --tolerance "$tol" > /dev/null 2>&1; then
          echo "    (within the spec's tolerance $tol, which tilepipe verify accepts: contraction, most likely)"
        fi
        echo
        bug=1
      done
      rm -f "$scratch/$s".*.bin
    done
  done
  finish true "$complete" "$bug"
}

case "${1:-}" in
  prepare) shift; prepare "$@" ;;
  run) shift; run "$@" ;;
  *) echo "usage: tests/gpu/benchmark.sh prepare [...] | run [...] (the header of this file says more)" >&2; exit 2 ;;
esac
