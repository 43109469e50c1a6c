#!/usr/bin/env python3
"""Runs the programs run_gpu.sh built and compares their hashes per kernel (Python 3 stdlib only).

    gpu_compare.py --bundle DIR --out DIR [--runs N] [--deadline EPOCH] [--gpu yes|no]

Each program prints `<kernel-id> <labels> <hash>` per kernel. A program that dies or hangs on a
kernel is run again on the kernels after it, so one bad kernel costs only itself.
"""
import argparse
import array
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import time
from collections import defaultdict

# Every mode run_cpu.py knows; a bundle's outcomes say which of them it has (MODES, after reading).
ALL_MODES = ['auto', 'pipeline', 'tma', 'registers', 'model']
MODES = list(ALL_MODES)
# Seconds a program may run (a batch normally takes a few); the self-test shortens it.
PROGRAM_TIMEOUT = int(os.environ.get('FZ_PROGRAM_TIMEOUT', '90'))


def read_tsv(path):
    with open(path) as f:
        return [l.rstrip('\n').split('\t') for l in f if l.strip()]


class Runner:
    def __init__(self, a):
        self.a = a
        self.deadline = a.deadline or (time.time() + 10 ** 9)
        self.times = []   # seconds of each whole-batch program run, for sizing later calls

    def exe(self, batch, variant, tag):
        p = os.path.join(self.a.out, 'bin', '%s.%s.%s' % (batch, variant, tag))
        return p if os.path.exists(p) else None

    def build_state(self, batch, variant, tag):
        log = os.path.join(self.a.out, 'log', '%s.%s.%s.build' % (batch, variant, tag))
        if self.exe(batch, variant, tag):
            return 'built'
        if not os.path.exists(log):
            return 'not built'
        with open(log, errors='replace') as f:
            text = f.read()
        return 'not built' if text.startswith('skipped') else 'build failed'

    def run(self, exe, ids, extra=()):
        """{id: hash} with 'CRASH rc=..', 'HANG', 'NOT RUN' or 'MISSING' for kernels with no hash."""
        res = {}
        pending = list(ids)
        t0 = time.time()
        whole = len(ids) > 1 and not extra
        while pending:
            if time.time() > self.deadline:
                for k in pending:
                    res[k] = 'NOT RUN'
                break
            try:
                p = subprocess.run([exe, *extra, *pending], capture_output=True, text=True,
                                   timeout=PROGRAM_TIMEOUT, errors='replace')
                rc, out, err = p.returncode, p.stdout, p.stderr
            except subprocess.TimeoutExpired as e:
                rc = 'HANG'
                out = e.stdout.decode(errors='replace') if isinstance(e.stdout, bytes) else (e.stdout or '')
                err = ''
            for line in out.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[0] in pending:
                    res[parts[0]] = parts[2]
            rest = [k for k in pending if k not in res]
            if rc == 0:
                for k in rest:
                    res[k] = 'MISSING'
                break
            if not rest:
                break
            res[rest[0]] = 'HANG' if rc == 'HANG' else 'CRASH rc=%s %s' % (
                rc, (err.strip().splitlines() or [''])[-1][:200])
            pending = rest[1:]
        if whole:
            self.times.append(time.time() - t0)
        return res


def ordered(bits, wide):
    """Maps IEEE bits to integers ordered like the values (-0 and +0 both 0), for ulp distances."""
    sign = 1 << (63 if wide else 31)
    return -(bits & (sign - 1)) if bits & sign else bits


def ulp_distance(dir_a, dir_b, kid):
    """Largest distance in ulps between two dumps of one kernel (floats), or the largest integer
    difference; None when the dumps are missing or differ in layout."""
    try:
        with open(os.path.join(dir_a, kid + '.layout')) as f:
            layout = [l.split() for l in f if l.strip()]
        with open(os.path.join(dir_b, kid + '.layout')) as f:
            if [l.split() for l in f if l.strip()] != layout:
                return None
        ba = open(os.path.join(dir_a, kid + '.bin'), 'rb').read()
        bb = open(os.path.join(dir_b, kid + '.bin'), 'rb').read()
    except OSError:
        return None
    if len(ba) != len(bb):
        return None
    worst = 0
    nan = False
    off = 0
    for typ, count in layout:
        n = int(count)
        if typ == 'double':
            code, size, wide, isf = 'q', 8, True, True
            m = n
        elif typ == 'int':
            code, size, wide, isf = 'i', 4, False, False
            m = n
        else:
            lanes = {'float': 1, 'float2': 2, 'float4': 4}[typ]
            code, size, wide, isf = 'i', 4, False, True
            m = n * lanes
        xa = array.array(code, ba[off:off + m * size])
        xb = array.array(code, bb[off:off + m * size])
        off += m * size
        for u, v in zip(xa, xb):
            if u == v:
                continue
            if not isf:
                worst = max(worst, abs(u - v))
                continue
            ua, va = u & ((1 << (64 if wide else 32)) - 1), v & ((1 << (64 if wide else 32)) - 1)
            expo = (0x7FF << 52) if wide else (0xFF << 23)
            mant = ((1 << 52) - 1) if wide else ((1 << 23) - 1)
            if (ua & expo) == expo and (ua & mant) or (va & expo) == expo and (va & mant):
                nan = True
                continue
            worst = max(worst, abs(ordered(ua, wide) - ordered(va, wide)))
    return 'NaN' if nan and worst == 0 else ('%d%s' % (worst, ' (and NaN)' if nan else ''))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--bundle', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--runs', type=int, default=4)
    ap.add_argument('--deadline', type=float, default=0)
    ap.add_argument('--gpu', default='yes')
    ap.add_argument('--sanitize', type=int, default=0,
                    help='compute-sanitizer on the small cases of the first N kernels')
    ap.add_argument('--sanitizer', help='compute-sanitizer program')
    a = ap.parse_args()
    t_start = time.time()
    runner = Runner(a)
    with open(os.path.join(a.bundle, 'batches.txt')) as f:
        batches = [l.strip() for l in f if l.strip()]
    labels = {}
    outcome = {}     # (kid, mode) -> outcome
    vfile = {}       # (batch, mode) -> variant stem or None
    kernels = {}
    for b in batches:
        man = read_tsv(os.path.join(a.bundle, 'batches', b, 'manifest.tsv'))
        kernels[b] = [m[0] for m in man]
        for m in man:
            labels[m[0]] = m[1].split(',')
        for kid, mode, oc, fname in read_tsv(os.path.join(a.bundle, 'batches', b, 'outcomes.tsv')):
            outcome[(kid, mode)] = oc
            vfile[(b, mode)] = None if fname == '-' else fname[:-3]
    MODES[:] = [m for m in ALL_MODES if any(mode == m for _, mode in vfile)] or MODES

    if a.gpu != 'yes':
        built = sum(1 for f in os.listdir(os.path.join(a.out, 'bin')))
        print('no GPU here: %d programs built, none run (skipped, not passed)' % built)
        return 77

    failures = []        # the rewrite's fault
    generator = []       # the original's (a generator bug)
    assumption = []      # differs where the kernel breaks the documented noalias assumption
    contraction = []     # default flags only
    res = {}             # (kid, mode) -> 'equal' | 'differ' | other state
    notes = []

    def do_batch(b):
        ids = kernels[b]
        out = dict(fail=[], gen=[], assume=[], contr=[], res={}, notes=[])
        o1 = runner.exe(b, 'orig', 'nofma')
        if not o1:
            st = runner.build_state(b, 'orig', 'nofma')
            (out['gen'] if st == 'build failed' else out['notes']).append(
                '%s: original %s' % (b, st))
            for k in ids:
                for mode in MODES:
                    out['res'][(k, mode)] = 'NOT RUN'
            return out
        r1 = runner.run(o1, ids)
        r2 = runner.run(o1, ids)
        for k in ids:
            if not is_hash(r1[k]):
                if r1[k] != 'NOT RUN':
                    out['gen'].append('%s %s: the original: %s' % (b, k, r1[k]))
            elif r1[k] != r2.get(k) and is_hash(r2.get(k, '')):
                out['gen'].append('%s %s: the original gave two different hashes on two runs '
                                  '(%s, %s): not deterministic' % (b, k, r1[k], r2[k]))
                r1[k] = 'NONDETERMINISTIC'   # nothing to compare a rewrite with
        runs = {}
        for mode in MODES:
            stem = vfile.get((b, mode))
            if stem is None:
                for k in ids:
                    out['res'][(k, mode)] = 'unchanged'
                continue
            if stem not in runs:
                exe = runner.exe(b, stem, 'nofma')
                if not exe:
                    st = runner.build_state(b, stem, 'nofma')
                    if st == 'build failed':
                        out['fail'].append('%s mode %s: the rewrite %s.cu did not build with nvcc '
                                           '(log: log/%s.%s.nofma.build)' % (b, mode, stem, b, stem))
                    runs[stem] = {k: 'NOT RUN' for k in ids}
                else:
                    rv = runner.run(exe, ids)
                    # A difference: once more, to tell a deterministic difference from a race.
                    diff = [k for k in ids if is_hash(rv[k]) and is_hash(r1[k]) and rv[k] != r1[k]]
                    again = runner.run(exe, diff) if diff else {}
                    for k in diff:
                        rv[k] = (rv[k], again.get(k))
                    runs[stem] = rv
            rv = runs[stem]
            for k in ids:
                v = rv[k]
                if not is_hash(r1[k]):
                    out['res'][(k, mode)] = 'NOT RUN' if r1[k] == 'NOT RUN' else 'orig failed'
                    continue
                if isinstance(v, tuple):
                    first, second = v
                    det = 'deterministic' if second == first else (
                        'NOT deterministic: second run %s' % second)
                    msg = ('%s %s mode %s: hash %s, original %s (%s); labels %s; outcome %s' % (
                        b, k, mode, first, r1[k], det, ','.join(labels[k]), outcome[(k, mode)]))
                    out['res'][(k, mode)] = 'differ'
                    if 'noalias-assumed' in labels[k] and outcome[(k, mode)] == 'pipelined':
                        out['assume'].append(msg)
                    else:
                        out['fail'].append(msg)
                elif is_hash(v):
                    out['res'][(k, mode)] = 'equal'
                elif v == 'NOT RUN':
                    out['res'][(k, mode)] = 'NOT RUN'
                else:
                    out['res'][(k, mode)] = 'differ'
                    msg = '%s %s mode %s: %s; labels %s; outcome %s' % (
                        b, k, mode, v, ','.join(labels[k]), outcome[(k, mode)])
                    out['fail'].append(msg)
        # Default flags: contraction may differ once the code around an expression changed.
        of = runner.exe(b, 'orig', 'fma')
        if of:
            rf = runner.run(of, ids)
            for mode in MODES:
                stem = vfile.get((b, mode))
                ex = stem and runner.exe(b, stem, 'fma')
                if not ex:
                    continue
                rv = runner.run(ex, ids)
                diff = [k for k in ids if is_hash(rv[k]) and is_hash(rf[k]) and rv[k] != rf[k]
                        and out['res'].get((k, mode)) == 'equal']
                if diff:
                    da = os.path.join(a.out, 'dump', b, 'orig')
                    db = os.path.join(a.out, 'dump', b, mode)
                    os.makedirs(da, exist_ok=True)
                    os.makedirs(db, exist_ok=True)
                    runner.run(of, diff, ('--dump', da))
                    runner.run(ex, diff, ('--dump', db))
                    for k in diff:
                        out['contr'].append('%s %s mode %s: default flags differ, largest distance '
                                            '%s ulp; labels %s' % (b, k, mode,
                                                                   ulp_distance(da, db, k),
                                                                   ','.join(labels[k])))
        return out

    with cf.ThreadPoolExecutor(max(1, a.runs)) as ex:
        for o in ex.map(do_batch, batches):
            failures += o['fail']
            generator += o['gen']
            assumption += o['assume']
            contraction += o['contr']
            res.update(o['res'])
            notes += o['notes']

    # compute-sanitizer (memcheck, racecheck) on the small cases of the first --sanitize kernels:
    # on the original a report is the generator's fault; on a rewrite it is listed for a look.
    sanitizer = []
    cs = a.sanitizer
    if a.sanitize and cs:
        todo = [(b, k) for b in batches for k in kernels[b]][:a.sanitize]

        def san(job):
            b, k = job
            found = []
            variants = [('orig', 'orig')] + sorted({(vfile[(b, m)], m) for m in MODES
                                                     if vfile.get((b, m))})
            for stem, mode in variants:
                exe = runner.exe(b, stem, 'nofma')
                if not exe:
                    continue
                for tool in ('memcheck', 'racecheck'):
                    if time.time() > runner.deadline:
                        return found
                    try:
                        p = subprocess.run([cs, '--tool', tool, '--error-exitcode', '9',
                                            '--print-limit', '5', exe, '--small', k],
                                           capture_output=True, text=True, timeout=120,
                                           errors='replace')
                        bad = p.returncode != 0
                        text = (p.stdout + p.stderr).strip().splitlines()
                    except subprocess.TimeoutExpired:
                        bad, text = True, ['timeout']
                    if bad:
                        found.append(('orig' if stem == 'orig' else mode,
                                      '%s %s %s %s: %s' % (b, k, stem, tool,
                                                           ' | '.join(text[-6:])[:600])))
            return found

        with cf.ThreadPoolExecutor(max(1, a.runs)) as ex:
            for found in ex.map(san, todo):
                for who, msg in found:
                    (generator if who == 'orig' else sanitizer).append(msg)
        notes.append('compute-sanitizer ran on the small cases of %d kernels' % len(todo))

    # The table: by shape class (label) and mode.
    table = defaultdict(lambda: {m: [0, 0, 0, 0, 0] for m in MODES})  # kernels rewritten eq diff notrun
    for b in batches:
        for k in kernels[b]:
            for lab in ['ALL'] + labels[k]:
                row = table[lab]
                for mode in MODES:
                    c = row[mode]
                    c[0] += 1
                    if outcome.get((k, mode)) == 'pipelined' and vfile.get((b, mode)):
                        c[1] += 1
                    st = res.get((k, mode), 'NOT RUN')
                    if st == 'equal':
                        c[2] += 1
                    elif st == 'differ':
                        c[3] += 1
                    elif st in ('NOT RUN', 'orig failed'):
                        c[4] += 1
    lines = []
    hdr = '%-26s' % 'shape class' + ''.join(
        ' | %-8s %5s %5s %5s %5s %5s' % (m, 'kern', 'rewr', 'equal', 'diff', 'n/r') for m in MODES)
    lines.append(hdr)
    lines.append('-' * len(hdr))
    order = ['ALL'] + sorted(l for l in table if l != 'ALL')
    for lab in order:
        row = table[lab]
        lines.append('%-26s' % lab + ''.join(
            ' | %-8s %5d %5d %5d %5d %5d' % ('', *row[m]) for m in MODES))
    lines.append('(kern: kernels; rewr: with a rewritten loop; equal/diff: the rewritten batch\'s hash '
                 'of the kernel against the original\'s, -fmad=false; n/r: not run: time budget, '
                 'or the original failed)')
    report = []
    report.append('tilepipe fuzz (GPU): %d batches, %d kernels, %.0f s' % (
        len(batches), sum(len(v) for v in kernels.values()), time.time() - t_start))
    bt = []
    for f in os.listdir(os.path.join(a.out, 'log')) if os.path.isdir(os.path.join(a.out, 'log')) else []:
        with open(os.path.join(a.out, 'log', f), errors='replace') as fh:
            for line in fh:
                if line.startswith('build_ms '):
                    bt.append(int(line.split()[1]) / 1000.0)
    if bt:
        report.append('builds: %d, %.1f s each on average, %.1f s the longest' % (
            len(bt), sum(bt) / len(bt), max(bt)))
    if runner.times:
        report.append('program runs (a whole batch): %d, %.1f s each on average, %.1f s the longest' % (
            len(runner.times), sum(runner.times) / len(runner.times), max(runner.times)))
    report.append('')
    report.extend(lines)
    report.append('')
    for title, items in (('FAILURE', failures), ('GENERATOR (the original is at fault)', generator),
                         ('differs under the documented --assume-noalias assumption (host-level '
                          'aliasing; not a failure)', assumption),
                         ('contraction differs (default flags; not a failure)', contraction),
                         ('compute-sanitizer reports on a rewrite (the original was clean; look '
                          'at them)', sanitizer),
                         ('note', notes)):
        if items:
            report.append('%s: %d' % (title, len(items)))
            for i in items:
                report.append(('  !!! FAILURE: ' if title == 'FAILURE' else '  ') + i)
            report.append('')
    if not failures:
        report.append('verdict: no failures' + (' (the generator needs a look)' if generator else ''))
    else:
        report.append('verdict: %d FAILURES' % len(failures))
    text = '\n'.join(report) + '\n'
    print(text)
    with open(os.path.join(a.out, 'table.txt'), 'w') as f:
        f.write(text)
    with open(os.path.join(a.out, 'failures.txt'), 'w') as f:
        f.write('\n'.join(failures) + ('\n' if failures else ''))
    with open(os.path.join(a.out, 'results.json'), 'w') as f:
        json.dump(dict(failures=failures, generator=generator, assumption=assumption,
                       contraction=contraction, notes=notes, sanitizer=sanitizer,
                       results={'%s %s' % k: v for k, v in res.items()}), f, indent=1)
    return 1 if failures else 0


def is_hash(v):
    return isinstance(v, str) and len(v) == 16 and all(c in '0123456789abcdef' for c in v)


if __name__ == '__main__':
    sys.exit(main())
