#!/usr/bin/env python3
"""tune.py select on a made-up benchmark record: per function, the fastest plan whose geomean over
the timed cases beats the original by more than the noise, and which loses on no case past the
noise, is chosen; a close one is not; where the cost model's own plan is fastest the loop gets no
entry; a plan whose outputs differ is a bug (exit 1) and never chosen. Needs tilepipe (for the loops' fingerprints), no GPU.

  tune_test.py --tilepipe PATH
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def variant(ms, spread=0.01, status='ok'):
    return {'status': status, 'median_ms': ms, 'spread': spread}


def record(kernels):
    return {'arch': 'sm_90', 'gpu': {'name': 'NVIDIA H200', 'compute_capability': '9.0'},
            'variants': [{'name': n} for n in ('default', 'p2c', 'p3t', 'p2e')], 'kernels': kernels}


def select(tilepipe, rec, tmp):
    bench = os.path.join(tmp, 'benchmark.json')
    with open(bench, 'w') as f:
        json.dump(rec, f)
    out = os.path.join(tmp, 'tuning.json')
    p = subprocess.run([sys.executable, os.path.join(HERE, 'tune.py'), 'select', '--benchmark', bench,
                        '--tilepipe', tilepipe, '-o', out], capture_output=True, text=True)
    with open(out) as f:
        return p.returncode, json.load(f), p.stderr


def main():
    tilepipe = sys.argv[sys.argv.index('--tilepipe') + 1]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        # matmul<16> and matmul<32> share one loop: 3:engine wins on both, 2:16-byte on one only.
        kernels = [
            {'spec': 'matmul_classic', 'kernel': 'matmul<16>', 'case': 'a',
             'variants': {'original': variant(10.0), 'p2c': variant(8.0), 'p3t': variant(7.5), 'p2e': variant(12.0)}},
            {'spec': 'matmul_classic', 'kernel': 'matmul<32>', 'case': 'b',
             'variants': {'original': variant(10.0), 'p2c': variant(10.1), 'p3t': variant(8.0), 'p2e': variant(12.0)}},
        ]
        rc, tuning, err = select(tilepipe, record(kernels), tmp)
        check(rc == 0, 'select exits 0 without bugs: %d %s' % (rc, err))
        check(tuning['tool'] == 'tilepipe-tuning' and tuning['version'] == 1, 'the file names itself')
        mm = [e for e in tuning['entries'] if e['kernel'] == 'matmul']
        check(len(mm) >= 1, 'an entry for the matmul loop: %s' % tuning)
        check(all(e['plan'] == '3:engine' and e['arch'] == 'sm_90' and len(e['fingerprint']) == 16 and
                  e['file'].endswith('testdata/matmul_classic.cu') for e in mm), 'matmul gets 3:engine: %s' % mm)
        check(all(abs(e['speedup'] - (10 / 7.5 * 10 / 8.0) ** 0.5) < 1e-3 for e in mm), 'speedup is the geomean: %s' % mm)

        # Within the noise: 1.5 % faster with spreads of 1 % each is not a win: keep.
        kernels[0]['variants'] = {'original': variant(10.0), 'p3t': variant(9.85)}
        kernels[1]['variants'] = {'original': variant(10.0), 'p3t': variant(9.85)}
        rc, tuning, err = select(tilepipe, record(kernels), tmp)
        mm = [e for e in tuning['entries'] if e['kernel'] == 'matmul']
        check(rc == 0 and mm and all(e['plan'] == 'keep' and e['speedup'] == 1.0 for e in mm),
              'a gain within the noise keeps the loop: %s' % mm)

        # A plan that differs from the original: a bug, never chosen, exit 1.
        kernels[0]['variants'] = {'original': variant(10.0), 'p3t': variant(5.0, status='differs'), 'p2c': variant(9.0)}
        kernels[1]['variants'] = {'original': variant(10.0), 'p3t': variant(5.0), 'p2c': variant(9.0)}
        rc, tuning, err = select(tilepipe, record(kernels), tmp)
        mm = [e for e in tuning['entries'] if e['kernel'] == 'matmul']
        check(rc == 1 and 'BUG' in err, 'a differing plan is reported: %d %s' % (rc, err))
        check(mm and all(e['plan'] == '2:16-byte' for e in mm), 'the differing plan is not chosen: %s' % mm)

        # The loop's cases together: a plan 1.4x faster on one instantiation and 1 % slower, within
        # the noise, on the other wins; 5 % slower on the other, past the noise, does not.
        kernels[0]['variants'] = {'original': variant(10.0), 'p2e': variant(7.0)}
        kernels[1]['variants'] = {'original': variant(10.0), 'p2e': variant(10.1)}
        rc, tuning, err = select(tilepipe, record(kernels), tmp)
        mm = [e for e in tuning['entries'] if e['kernel'] == 'matmul']
        check(rc == 0 and mm and all(e['plan'] == '2:per-element' for e in mm),
              'a win on one case and a tie within the noise on the other: %s' % mm)
        kernels[1]['variants'] = {'original': variant(10.0), 'p2e': variant(10.5)}
        rc, tuning, err = select(tilepipe, record(kernels), tmp)
        mm = [e for e in tuning['entries'] if e['kernel'] == 'matmul']
        check(rc == 0 and mm and all(e['plan'] == 'keep' for e in mm),
              'a loss past the noise on one case keeps the loop: %s' % mm)

        # The cost model's own plan (`default`) fastest: the loop gets no entry, the model plans it.
        kernels[0]['variants'] = {'original': variant(10.0), 'default': variant(6.0), 'p2c': variant(8.0)}
        kernels[1]['variants'] = {'original': variant(10.0), 'default': variant(10.0), 'p2c': variant(10.0)}
        rc, tuning, err = select(tilepipe, record(kernels), tmp)
        mm = [e for e in tuning['entries'] if e['kernel'] == 'matmul']
        check(rc == 0 and not mm and 'model' in err, 'the model wins: no entry: %s %s' % (mm, err))

    for f in failures:
        print('FAIL: ' + f)
    print('tune_test: %s' % ('FAIL' if failures else 'PASS'))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
