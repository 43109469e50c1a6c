#!/usr/bin/env python3
"""Runs tilepipe on one lit test file and checks it, in the manner of clang-tidy's check_clang_tidy.py.

  check_tilepipe.py --tilepipe T --filecheck F <input.cu> <temp prefix> [-- <tilepipe options>]

The input's `// CHECK-...:` comments are blanked (lines kept, so [[@LINE]] holds) into <prefix>.cu,
tilepipe runs on it once (--plan=always --check-launch-resources=false, -o, --report), and FileCheck
checks, for each prefix the input uses:
  CHECK-MESSAGES  the remarks on stderr (`file:line:col: remark: [id] message`); a remark, warning or
                  error no line names fails the test
  CHECK-FIXES     the rewritten file
  CHECK-PLAN      one line per loop from the JSON report's typed fields:
                  `line:col: [id] plan=<choice> <tile>=<copy_kind>/<cp_async> ...`
  CHECK-BLOCKERS  one line per loop left alone, every blocker the report lists, the first first:
                  `line:col: id id ...`
Every loop the report says was left alone must be in the output byte for byte, and when no loop was
rewritten the output must equal the input.
"""
import argparse
import json
import re
import subprocess
import sys

CHECK_COMMENT = re.compile(r"// *CHECK-[A-Z0-9-]*:[^\r\n]*")


def fail(message):
    sys.stderr.write("check_tilepipe: error: %s\n" % message)
    sys.exit(1)


def loop_extent(text, line, column):
    """The loop's text from the start of its line to the end of its body (braces or one statement)."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    begin = starts[line - 1]
    pos = begin + column - 1
    if text.startswith("do", pos) and not text[pos + 2].isalnum():
        i = pos + 2  # do { ... } while (...): the body comes first
    else:
        depth, i = 0, text.index("(", pos)
        while True:  # the header's parentheses
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
            if depth == 0:
                break
    while text[i] in " \t\r\n":
        i += 1
    if text[i] != "{":
        return text[begin:text.index(";", i) + 1]
    depth = 0
    while True:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
        if depth == 0:
            return text[begin:i]


def plan_lines(report):
    out = []
    for loop in report["loops"]:
        words = ["%d:%d: [%s]" % (loop["line"], loop["column"], loop.get("reason", "pipelined"))]
        plan = loop.get("plan")
        if plan:
            words.append("plan=%s" % plan["choice"])
            words += ["%s=%s/%s" % (t["tile"], t["copy_kind"], t["cp_async"]) for t in plan["tiles"]]
        out.append(" ".join(words))
    return "\n".join(out) + "\n"


def blocker_lines(report):
    out = []
    for loop in report["loops"]:
        if not loop["transformed"]:
            ids = [b["reason"] for b in loop["blockers"]]
            if not ids or ids[0] != loop["reason"]:
                fail("the loop at line %d: blockers %s do not start with its reason %s" %
                     (loop["line"], ids, loop["reason"]))
            out.append("%d:%d: %s" % (loop["line"], loop["column"], " ".join(ids)))
    return "\n".join(out) + "\n"


def filecheck(args, prefix, input_path, extra=()):
    cmd = [args.filecheck, args.input, "--check-prefix=" + prefix, "--input-file=" + input_path,
           "--dump-input=fail"] + list(extra)
    if subprocess.call(cmd) != 0:
        fail("%s does not match (%s)" % (prefix, input_path))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tilepipe", required=True)
    parser.add_argument("--filecheck", required=True)
    parser.add_argument("input")
    parser.add_argument("temp")
    parser.add_argument("options", nargs="*", help="after --: more tilepipe options")
    args = parser.parse_args()

    with open(args.input, newline="") as f:
        original = f.read()
    cleaned = CHECK_COMMENT.sub("//", original)
    src, out, report_path = args.temp + ".cu", args.temp + ".out.cu", args.temp + ".json"
    with open(src, "w", newline="") as f:
        f.write(cleaned)

    cmd = [args.tilepipe, "--plan=always", "--check-launch-resources=false", "-o", out,
           "--report=" + report_path] + args.options + [src, "--"]
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        fail("tilepipe exited with %d: %s" % (run.returncode, " ".join(cmd)))
    with open(args.temp + ".msg", "w") as f:
        f.write(run.stderr)
    with open(report_path) as f:
        report = json.load(f)
    with open(args.temp + ".plan", "w") as f:
        f.write(plan_lines(report))
    with open(args.temp + ".blockers", "w") as f:
        f.write(blocker_lines(report))
    with open(out, newline="") as f:
        rewritten = f.read()

    def uses(prefix):  # CHECK-FIXES: and its -NOT, -NEXT, ... forms
        return re.search(prefix + r"(-[A-Z]+)?:", original) is not None

    if uses("CHECK-MESSAGES"):
        filecheck(args, "CHECK-MESSAGES", args.temp + ".msg",
                  ["--implicit-check-not={{remark|warning|error}}:"])
    if uses("CHECK-FIXES"):
        filecheck(args, "CHECK-FIXES", out)
    if uses("CHECK-PLAN"):
        filecheck(args, "CHECK-PLAN", args.temp + ".plan")
    if uses("CHECK-BLOCKERS"):
        filecheck(args, "CHECK-BLOCKERS", args.temp + ".blockers", ["--match-full-lines"])

    # A loop left alone is left byte for byte; a file with nothing rewritten is the input itself.
    for loop in report["loops"]:
        if not loop["transformed"]:
            text = loop_extent(cleaned, loop["line"], loop["column"])
            if text not in rewritten:
                fail("the loop at line %d was left alone (%s) but its text changed" %
                     (loop["line"], loop.get("reason")))
    if not any(loop["transformed"] for loop in report["loops"]) and rewritten != cleaned:
        fail("no loop was rewritten, yet the output differs from the input")


if __name__ == "__main__":
    main()
