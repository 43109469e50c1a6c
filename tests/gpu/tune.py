#!/usr/bin/env python3
"""Tuning: measure a set of plans for every testdata loop on a GPU, and choose per loop.

The plans are tilepipe's `--plan-choice` values ('registers', '<depth>:registers', or
'<stages>:<per-element|16-byte|engine>'): each is
a benchmark variant (tests/gpu/benchmark.sh), written with that choice for every loop where it is
legal and the loop left as it is where not. The benchmark builds and times every variant of every
spec beside the original in one run and compares their outputs bit for bit; `select` reads its
record and writes the tuning file that `tilepipe --tuning` reads.

  tests/gpu/tune.py prepare [--dir DIR] [--tilepipe PATH] [--plans "2:16-byte 3:engine ..."]
      where tilepipe is built: benchmark.sh prepare --clean with one variant per plan, and
      `default` (the cost model) beside them
  tests/gpu/benchmark.sh run --dir DIR --rounds 1 --budget S
      on the GPU machine
  tests/gpu/tune.py select --benchmark DIR/result/benchmark.json [--margin 0.02] -o tuning.json
      where tilepipe is built: per loop, the plan of the fastest variant of its kernel's timed
      cases (the geomean over the instantiations and cases that share the loop's text), where
      that geomean beats the original by more than the margin and more than the medians' spreads
      (their interquartile ranges over the median), and no case runs slower than the original by
      more than its spread; otherwise keep. Where the fastest is `default`, the cost model's own
      plan (which may differ per launch), the loop gets no entry, so that the model plans it.
      Loops are keyed by file, function, line and a fingerprint of their text, for the GPU's
      architecture.

A variant whose outputs differ from the original's is never chosen: it is a bug, and `select`
says so loudly and exits 1 after writing the rest.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))

# The plans measured by default: the register-staged prefetch 1 to 4 tiles ahead (no extra shared
# memory), 3 and 4 stages with whole-tile copies (16-byte chunks, or the copy engine), and
# per-element copies at 2 stages. Each is one build and one run of every spec; this set fits one
# 10-minute GPU command with the 18 testdata specs (--plans measures others, 2 stages among them:
# in the sweep of 2026-12-02 they were never faster than 3 or 4).
DEFAULT_PLANS = ['registers', '2:registers', '3:registers', '4:registers',
                 '3:16-byte', '4:16-byte', '3:engine', '4:engine',
                 '2:per-element']


def variant_name(plan):
    if plan in ('registers', '1:registers'):
        return 'preg'
    stages, copies = plan.split(':')
    return 'p%s%s' % (stages, {'per-element': 'e', '16-byte': 'c', 'engine': 't', 'registers': 'r'}[copies])


def plan_of_variant(name):
    if name == 'preg':
        return 'registers'
    if not (len(name) >= 3 and name[0] == 'p' and name[1:-1].isdigit() and name[-1] in 'ectr'):
        return None
    return '%s:%s' % (name[1:-1], {'e': 'per-element', 'c': '16-byte', 't': 'engine', 'r': 'registers'}[name[-1]])


def tilepipe_path(arg):
    p = arg or os.environ.get('TILEPIPE') or os.path.join(
        os.environ.get('TILEPIPE_BUILD_DIR', os.path.join(ROOT, 'build')), 'tool', 'tilepipe')
    if not os.access(p, os.X_OK):
        sys.exit('tune.py: no tilepipe at %s (build it, or give --tilepipe)' % p)
    return p


def prepare(args):
    plans = args.plans.split() if args.plans else DEFAULT_PLANS
    cmd = [os.path.join(HERE, 'benchmark.sh'), 'prepare', '--clean', '--dir', args.dir,
           '--tilepipe', tilepipe_path(args.tilepipe)]
    if args.jobs:
        cmd += ['--jobs', str(args.jobs)]
    cmd += ['--variant', 'default', '--']
    # Without the launch check (an nvcc run per file): a plan that cannot launch the spec's blocks
    # is not chosen, and the file written with --tuning gets the check as every rewrite does.
    for plan in plans:
        cmd += ['--variant', variant_name(plan), '--', '--plan-choice=' + plan, '--check-launch-resources=false']
    return subprocess.call(cmd)


def loops_of(tilepipe, source):
    """The candidate loops of a source, as tilepipe's JSON report gives them (the default plan)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, 'report.json')
        out = os.path.join(tmp, os.path.basename(source))
        subprocess.run([tilepipe, '--quiet', '--check-launch-resources=false', '--report=' + report,
                        source, '-o', out], check=True)
        with open(report) as f:
            return json.load(f)['loops']


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def select(args):
    with open(args.benchmark) as f:
        bench = json.load(f)
    tilepipe = tilepipe_path(args.tilepipe)
    arch = bench.get('arch') or 'sm_90'
    gpu = (bench.get('gpu') or {}).get('name', '') if isinstance(bench.get('gpu'), dict) else str(bench.get('gpu') or '')
    names = [v['name'] if isinstance(v, dict) else v for v in bench['variants']]
    plans = [n for n in names if plan_of_variant(n)]
    # The cost model's plan competes too: where it wins, the loop is left to the model.
    candidates = plans + [n for n in names if n == 'default']
    bugs = []
    # Per spec and function (the kernel without template arguments): each candidate's speedups on
    # the timed cases, where it ran and matched the original, with the noise of each.
    by_function = {}
    for k in bench['kernels']:
        fn = k['kernel'].split('<')[0].strip()
        key = (k['spec'], fn)
        o = k['variants'].get('original', {})
        entry = by_function.setdefault(key, {'cases': [], 'scores': {}})
        entry['cases'].append(k['case'])
        for name in candidates:
            v = k['variants'].get(name, {})
            st = v.get('status')
            if st in ('differs', 'failed', 'build failed'):
                bugs.append('%s %s (%s): the %s plan %s' % (k['spec'], k['kernel'], k['case'], plan_of_variant(name) or name, st))
            ok = st == 'ok' and o.get('status') == 'ok' and v.get('median_ms') and o.get('median_ms')
            s = entry['scores'].setdefault(name, [])
            if not ok:
                s.append(None)
                continue
            speed = o['median_ms'] / v['median_ms']
            noise = max(args.margin, (o.get('spread') or 0) + (v.get('spread') or 0))
            s.append((speed, noise))
    entries, table = [], []
    for (spec, fn), e in sorted(by_function.items()):
        best, best_speed = None, None
        for name, scores in e['scores'].items():
            if any(s is None for s in scores):
                continue  # a candidate must run, and match, on every timed case of the function
            speeds = [s for s, _ in scores]
            if any(s < 1 - n for s, n in scores):
                continue  # it may lose on no case by more than the noise
            g = geomean(speeds)
            if g <= 1 + max(n for _, n in scores):
                continue  # and must win, over the cases together, by more than the noise
            if best_speed is None or g > best_speed:
                best, best_speed = name, g
        choice = 'model' if best == 'default' else plan_of_variant(best) if best else 'keep'
        table.append((spec, fn, choice, best_speed))
        if choice == 'model':
            continue
        source = os.path.join(ROOT, 'testdata', spec + '.cu')
        for loop in loops_of(tilepipe, source):
            if loop['kernel'] != fn or 'fingerprint' not in loop:
                continue
            # Where the winning plan is not legal for this loop, its variant left it as it is.
            loop_choice = choice if choice in loop.get('choices', []) else 'keep'
            entries.append({'file': os.path.relpath(loop['file'], ROOT) if os.path.isabs(loop['file']) else loop['file'],
                            'kernel': fn, 'line': loop['line'], 'fingerprint': loop['fingerprint'],
                            'gpu': gpu, 'arch': arch, 'plan': loop_choice,
                            'speedup': round(best_speed, 4) if best_speed and loop_choice != 'keep' else 1.0})
    out = {'tool': 'tilepipe-tuning', 'version': 1, 'entries': entries}
    text = json.dumps(out, indent=1) + '\n'
    if args.output == '-':
        sys.stdout.write(text)
    else:
        tmp = args.output + '.tmp'
        with open(tmp, 'w') as f:
            f.write(text)
        os.replace(tmp, args.output)
    print('| spec | function | chosen plan (model: no entry, the cost model plans it) | geomean speedup of its timed cases |', file=sys.stderr)
    print('|---|---|---|---:|', file=sys.stderr)
    for spec, fn, choice, speed in table:
        print('| %s | %s | %s | %s |' % (spec, fn, choice, '%.2fx' % speed if speed else '-'), file=sys.stderr)
    for b in bugs:
        print('BUG: ' + b, file=sys.stderr)
    return 1 if bugs else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    p = sub.add_parser('prepare', help='benchmark bundles, one variant per plan')
    p.add_argument('--dir', default=os.path.join(ROOT, '.tunebundle'))
    p.add_argument('--tilepipe')
    p.add_argument('--plans', help='space-separated plans (default: %s)' % ' '.join(DEFAULT_PLANS))
    p.add_argument('--jobs', type=int)
    s = sub.add_parser('select', help='the tuning file from a benchmark record')
    s.add_argument('--benchmark', required=True)
    s.add_argument('--tilepipe')
    s.add_argument('--margin', type=float, default=0.02)
    s.add_argument('-o', '--output', required=True)
    a = ap.parse_args(argv)
    return prepare(a) if a.cmd == 'prepare' else select(a)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
