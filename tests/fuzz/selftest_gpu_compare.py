#!/usr/bin/env python3
"""Checks gpu_compare.py's verdicts without a GPU: fake programs stand in for the built batches.

Each fake prints `<id> <labels> <hash>` like a batch program, and can be told to give a wrong hash,
crash, hang, flip between runs, or differ only with default flags. The harness must call each of
those what it is: a FAILURE, a generator problem, an assumption, a contraction difference.
"""
import os
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

FAKE = r'''#!/usr/bin/env python3
import hashlib, os, struct, sys, time
args = sys.argv[1:]
dump = None
if args[:1] == ['--dump']:
    dump, args = args[1], args[2:]
if args[:1] == ['--small']:
    args = args[1:]
behave = %r
for k in args:
    b = behave.get(k, 'ok')
    if b == 'crash':
        sys.stderr.write('CUDA error: an illegal memory access was encountered\n')
        sys.exit(3)
    if b == 'hang':
        time.sleep(600)
    h = hashlib.sha1(k.encode()).hexdigest()[:16]
    if b == 'diff':
        h = '0123456789abcdef'
    if b == 'flaky':
        h = hashlib.sha1(os.urandom(8)).hexdigest()[:16]
    if b == 'fma':
        h = 'fedcba9876543210'
    if dump:
        last = 1.0 if b != 'fma' else 1.0000002
        with open(os.path.join(dump, k + '.bin'), 'wb') as f:
            f.write(struct.pack('<3f', 0.5, -2.0, last))
        with open(os.path.join(dump, k + '.layout'), 'w') as f:
            f.write('float 3\n')
    print(k, 'labels', h, flush=True)
'''


def main():
    # The folder goes with everything in it when the check ends, passed or failed.
    with tempfile.TemporaryDirectory(prefix='fuzz-selftest-') as root:
        return check(root)


def check(root):
    bundle = os.path.join(root, 'bundle')
    out = os.path.join(root, 'out')
    ids = ['s0k%d' % i for i in range(8)]
    labels = {k: '1d,float' for k in ids}
    labels['s0k6'] = '1d,float,noalias-assumed'
    os.makedirs(os.path.join(bundle, 'batches', 's0'))
    os.makedirs(os.path.join(out, 'bin'))
    os.makedirs(os.path.join(out, 'log'))
    with open(os.path.join(bundle, 'batches.txt'), 'w') as f:
        f.write('s0\n')
    with open(os.path.join(bundle, 'batches', 's0', 'manifest.tsv'), 'w') as f:
        f.writelines('%s\t%s\tmain\n' % (k, labels[k]) for k in ids)
    with open(os.path.join(bundle, 'batches', 's0', 'outcomes.tsv'), 'w') as f:
        for mode in ('auto', 'pipeline', 'tma'):
            for k in ids:
                f.write('%s\t%s\t%s\t%s\n' % (k, mode, 'pipelined', mode + '.cu'))

    def fake(name, behave):
        p = os.path.join(out, 'bin', name)
        with open(p, 'w') as f:
            f.write(FAKE % behave)
        os.chmod(p, os.stat(p).st_mode | stat.S_IEXEC)

    fake('s0.orig.nofma', {'s0k7': 'flaky'})
    fake('s0.auto.nofma', {'s0k1': 'diff', 's0k2': 'crash', 's0k3': 'hang', 's0k6': 'diff'})
    fake('s0.pipeline.nofma', {'s0k4': 'flaky'})
    # tma: built with default flags only; its -fmad=false build failed.
    with open(os.path.join(out, 'log', 's0.tma.nofma.build'), 'w') as f:
        f.write('ptxas error: too much shared data\n')
    fake('s0.orig.fma', {})
    fake('s0.auto.fma', {'s0k5': 'fma'})
    # The harness gives every program the same seconds, the fakes that must not hang too: each
    # starts a Python (above a second on a busy machine), so the planted hang is cut off only after
    # far more than that, lest a slow start be called a hang. One hang: the check waits once.
    env = dict(os.environ, FZ_PROGRAM_TIMEOUT='30')
    p = subprocess.run([sys.executable, os.path.join(HERE, 'gpu_compare.py'), '--bundle', bundle,
                        '--out', out, '--runs', '2'], capture_output=True, text=True, env=env)
    text = p.stdout + p.stderr
    expect = [
        ('exit status 1', p.returncode == 1),
        ('a wrong hash is a FAILURE', 'FAILURE: s0 s0k1 mode auto: hash 0123456789abcdef' in text),
        ('a crash is a FAILURE', 's0 s0k2 mode auto: CRASH rc=3' in text),
        ('a hang is a FAILURE', 's0 s0k3 mode auto: HANG' in text),
        ('the kernels after a crash and a hang still ran', 's0k4' in text and
         'n/r' in text),
        ('a race in a rewrite says so', 's0 s0k4 mode pipeline' in text and
         'NOT deterministic' in text),
        ('a rewrite that did not build is a FAILURE', 's0 mode tma: the rewrite tma.cu did not build'
         in text),
        ('host aliasing under the default assumption is apart',
         'assume-noalias' in text and '!!! FAILURE: s0 s0k6' not in text and 's0 s0k6 mode auto' in text),
        ('a flaky original is the generator\'s', 'GENERATOR' in text and 's0 s0k7: the original gave two'
         in text),
        ('contraction is apart, with ulps', 's0 s0k5 mode auto: default flags differ, largest '
         'distance 2 ulp' in text and '!!! FAILURE: s0 s0k5' not in text),
        ('an equal kernel is no failure', '!!! FAILURE: s0 s0k0' not in text),
    ]
    bad = [what for what, ok in expect if not ok]
    for what, ok in expect:
        print('%s: %s' % ('ok  ' if ok else 'FAIL', what))
    if bad:
        print(text)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
