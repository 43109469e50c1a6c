#!/usr/bin/env bash
# A fixed-time libFuzzer run of tilepipe's analysis (tests/fuzz/fuzz_target.cpp): builds the target
# in a folder of its own (clang, AddressSanitizer, coverage), seeds a fresh corpus from testdata/*.cu
# and generated kernels, and fuzzes for SECONDS (default 600) with the CUDA dictionary. Not part of
# CI or ctest: run it by hand and record the result (docs/fuzz-record.md).
#
#   tests/fuzz/libfuzzer.sh [SECONDS]
#
# Environment: TILEPIPE_FUZZ_BUILD (the build folder, default build-fuzz in the source tree),
# JOBS (build jobs, default all cores), FUZZ_TIMEOUT (seconds one input may take, default 60),
# FUZZ_RSS_MB (memory limit, default 8192), FUZZ_SEEDS (generated kernels in the corpus, default 16),
# FUZZ_TESTDATA (which testdata files seed it, a glob, default '*.cu'). An input takes seconds (two
# parses with the CUDA headers under AddressSanitizer): on 2 cores the 56 default seeds alone take
# about 10 minutes, so a short run wants fewer (e.g. FUZZ_TESTDATA='matmul_*.cu' FUZZ_SEEDS=4).
# It writes <build>/corpus (seeds, then what the fuzzer adds), <build>/artifacts (crash-*, timeout-*,
# oom-*, leak-*: reproduce with `<build>/tilepipe_fuzz <file>`; slow-unit-* are only slow) and
# <build>/libfuzzer.log, and exits non-zero when the fuzzer found anything. TILEPIPE_FUZZ_VERBOSE=1
# makes the target print Clang's diagnostics and what the analysis made of each input.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-600}
build=${TILEPIPE_FUZZ_BUILD:-$root/build-fuzz}
jobs=${JOBS:-$(nproc)}

# libFuzzer's runtime is a package of its own, not needed by anything else.
"$root/scripts/setup.sh" libclang-rt-22-dev
# Configured once: configuring again rewrites the embedded templates, which rebuilds the library.
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-22 \
        -DTILEPIPE_FUZZER=ON -DTILEPIPE_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target tilepipe_fuzz -j "$jobs"

# A fresh corpus each run, so that runs compare: testdata files and FUZZ_SEEDS kernels of seed 1.
rm -rf "$build/corpus" "$build/artifacts"
mkdir -p "$build/corpus" "$build/artifacts"
cp "$root"/testdata/${FUZZ_TESTDATA:-*.cu} "$build/corpus/"
for i in $(seq 0 $((${FUZZ_SEEDS:-16} - 1))); do
  python3 "$root/tests/fuzz/gen.py" --seed 1 --only "$i" -o "$build/corpus/s1k$i.cu"
done
echo "libfuzzer.sh: $(ls "$build/corpus" | wc -l) seed inputs, ${secs} s, on $(nproc) cores"

set +e
"$build/tilepipe_fuzz" -max_total_time="$secs" -timeout="${FUZZ_TIMEOUT:-60}" \
    -rss_limit_mb="${FUZZ_RSS_MB:-8192}" -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/" -dict="$root/tests/fuzz/cuda.dict" \
    "$build/corpus" 2>&1 | tee "$build/libfuzzer.log"
rc=${PIPESTATUS[0]}
set -e
# slow-unit-* files are inputs that took long, not findings.
findings=$(find "$build/artifacts" -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' | wc -l)
echo "libfuzzer.sh: exit $rc; corpus now $(ls "$build/corpus" | wc -l) inputs; findings: $findings"
grep -E '^(#[0-9]+[[:space:]]+DONE|Done |stat::)' "$build/libfuzzer.log" || true
exit "$rc"
