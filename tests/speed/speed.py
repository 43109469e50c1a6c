#!/usr/bin/env python3
"""What tilepipe costs as a pre-build step, against Clang's parse of the same files.

Runs, side by side in one run and on the same files, each round in the same order:
  parse     clang++ -fsyntax-only, the device-side parse tilepipe's own parse does
  no-check  tilepipe --check-launch-resources=false
  cold      tilepipe with the launch check, its cache folder empty
  warm      tilepipe with the launch check, the same cache folder again (nothing changed)
on two workloads: every file given (default testdata/*.cu), one tilepipe run per file; and a
project of N of them (default 40, files repeated under other names where there are fewer)
with a compile_commands.json, rewritten by one `tilepipe -p` run. It prints the seconds of
each (median over the rounds) and their ratios to the parse. The numbers depend on the machine
and its load; only the ratios measured in one run are worth comparing.

  tests/speed/speed.py --tilepipe build/tool/tilepipe [--rounds 3] [--project 40] [files...]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cuda_path():
    for c in (os.environ.get("CUDA_PATH"), os.path.dirname(os.path.dirname(shutil.which("nvcc") or "/x/x/x")),
              "/usr/local/cuda"):
        if c and os.path.isfile(os.path.join(c, "bin", "nvcc")):
            return c
    return None


def timed(cmd, cwd=None, must_pass=True):
    start = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - start
    if p.returncode != 0 and must_pass:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-2000:]))
    return took


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilepipe", required=True)
    ap.add_argument("--clang", default=shutil.which("clang++-22") or "clang++")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--project", type=int, default=40, help="files of the -p project (0: none)")
    ap.add_argument("--json", help="also write the medians here")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    cuda = cuda_path()
    if not cuda or not shutil.which(a.clang):
        print("nvcc or %s not found: nothing measured" % a.clang)
        return 77
    files = [os.path.abspath(f) for f in a.files] or sorted(
        os.path.join(ROOT, "testdata", f) for f in os.listdir(os.path.join(ROOT, "testdata")) if f.endswith(".cu"))
    tilepipe = os.path.abspath(a.tilepipe)
    parse = [a.clang, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_90", "--cuda-path=" + cuda,
             "-isystem", cuda + "/include/cccl", "-std=c++17", "-Wno-unknown-cuda-version", "-fsyntax-only", "-w"]
    work = tempfile.mkdtemp(prefix="tilepipe-speed-")
    try:
        out = os.path.join(work, "out.cu")
        # The project: N files with their compile commands, in a folder of their own.
        proj = os.path.join(work, "project")
        os.makedirs(proj)
        commands = []
        for i in range(a.project):
            src = files[i % len(files)]
            name = "%02d_%s" % (i, os.path.basename(src))
            shutil.copy(src, os.path.join(proj, name))
            commands.append({"directory": proj, "file": name,
                             "arguments": ["nvcc", "-c", name, "-o", name + ".o"]})
        with open(os.path.join(proj, "compile_commands.json"), "w") as f:
            json.dump(commands, f)
        proj_files = [c["file"] for c in commands]

        def per_file(variant, cache):
            total = 0.0
            for f in files:
                if variant == "parse":
                    # A file with text Clang rejects (and recovers from) is parsed whole all the same.
                    total += timed(parse + [f], must_pass=False)
                    continue
                cmd = [tilepipe, "--quiet", f, "-o", out, "--cache-dir=" + cache]
                if variant == "no-check":
                    cmd.append("--check-launch-resources=false")
                total += timed(cmd + ["--"])
            return total

        def project(variant, cache):
            if variant == "parse":
                return sum(timed(parse + [f], cwd=proj, must_pass=False) for f in proj_files)
            # One file at a time, as the parse is timed: -j would measure the cores, not the work.
            cmd = [tilepipe, "--quiet", "-p", proj, "-j", "1", "--cache-dir=" + cache]
            if variant == "no-check":
                cmd.append("--check-launch-resources=false")
            # Outputs written beside a copy of the project: the inputs stay as they are.
            copy = os.path.join(work, "pcopy")
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(proj, copy)
            with open(os.path.join(copy, "compile_commands.json"), "w") as f:
                json.dump([dict(c, directory=copy) for c in commands], f)
            cmd[cmd.index(proj)] = copy
            return timed(cmd + ["--in-place"], cwd=copy)

        variants = ["parse", "no-check", "cold", "warm"]
        workloads = [("testdata files, one run each (%d)" % len(files), per_file)]
        if a.project:
            workloads.append(("a -p project of %d files, one run" % a.project, project))
        results = {w: {v: [] for v in variants} for w, _ in workloads}
        for r in range(a.rounds):
            for w, fn in workloads:
                cache = os.path.join(work, "cache-%s-%d" % (fn.__name__, r))
                for v in variants:
                    results[w][v].append(fn(v, cache if v in ("cold", "warm") else ""))
                shutil.rmtree(cache, ignore_errors=True)
        print("| workload | clang++ -fsyntax-only | no check | check, cold cache | check, warm cache |")
        print("|---|---:|---:|---:|---:|")
        medians = {}
        for w, _ in workloads:
            m = {v: statistics.median(results[w][v]) for v in variants}
            medians[w] = m
            cells = ["%.1f s" % m["parse"]] + ["%.1f s (%.2fx)" % (m[v], m[v] / m["parse"]) for v in variants[1:]]
            print("| %s | %s |" % (w, " | ".join(cells)))
        print("(median of %d rounds; ratios to the parse of the same files, measured in this run)" % a.rounds)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(medians, f, indent=2)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
