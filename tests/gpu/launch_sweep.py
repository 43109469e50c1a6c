#!/usr/bin/env python3
"""The small-launch threshold, measured: stencil_tiles (testdata/stencil1d_inner_copy.cu) timed at a
range of warps per SM, the original against the cost model's rewrite and forced pipelines.

  tests/gpu/launch_sweep.py prepare [--dir DIR] [--tilepipe PATH] [--warps "2 4 8 ..."] [--always]
      where tilepipe is built: DIR (default .gpu/launch-sweep) gets orig.cu (the program with its
      main() replaced by timed launches of 64 tiles a block at each number of warps per SM, for
      132 SMs), model.cu (tilepipe's default; with --always its launch test always taken),
      p2e.cu and p4e.cu (--plan-choice=2:per-element, 4:per-element) and run.sh.
  bash DIR/run.sh
      on the GPU machine: builds the four with nvcc -O3 -arch=sm_90, runs each twice, compares
      the outputs with the original's bit for bit, writes its files into $OUT (or DIR).
  tests/gpu/launch_sweep.py table [--dir OUT]
      the Markdown table: per launch, the original's time (the faster of two runs) and each
      variant's speedup.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))
CONFIGS = [(256, 8, 128), (256, 8, 256), (128, 3, 32), (128, 3, 64), (128, 3, 128)]
SMS = 132

RUN = '''#!/usr/bin/env bash
cd "$(dirname "$0")"
out=${OUT:-.}
for v in orig model p2e p4e; do nvcc -O3 -arch=sm_90 -o $v $v.cu & done; wait
for r in 1 2; do for v in orig model p2e p4e; do ./$v /tmp/$v.bin > $out/exp-$v-$r.txt || echo "$v failed"; done; done
for v in model p2e p4e; do cmp /tmp/orig.bin /tmp/$v.bin && echo "$v equal"; done | tee $out/exp-equal.txt
'''


def prepare(args):
    src = open(os.path.join(ROOT, 'testdata', 'stencil1d_inner_copy.cu')).read()
    start = src.index('  runCase<256, 8>(f, seed, 0,')
    end = src.index('  closeOutput(f);')
    lines, n = [], 0
    for ts, r, threads in CONFIGS:
        for wps in args.warps:
            blocks = SMS * wps // (threads // 32)
            lines.append('  printf("T %d %d threads=%d blocks=%d warps_per_sm=%d\\n"); '
                         'runCase<%d, %d>(f, seed, %d, %d * 64, %d, %d, true);\n'
                         % (ts, r, threads, blocks, wps, ts, r, n, blocks, blocks, threads))
            n += 1
    os.makedirs(args.dir, exist_ok=True)
    orig = os.path.join(args.dir, 'orig.cu')
    with open(orig, 'w') as f:
        f.write(src[:start] + ''.join(lines) + src[end:])
    for name, opts in (('model', []), ('p2e', ['--plan-choice=2:per-element']),
                       ('p4e', ['--plan-choice=4:per-element'])):
        out = os.path.join(args.dir, name + '.cu')
        subprocess.run([args.tilepipe, '--quiet'] + opts + [orig, '-o', out], check=True)
    if args.always:
        model = os.path.join(args.dir, 'model.cu')
        text = open(model).read()
        text, k = re.subn(r'<= \d+ull \*', '<= 1000000ull *', text)
        if k != 1:
            sys.exit('launch_sweep: the model\'s rewrite has no launch test to widen')
        open(model, 'w').write(text)
    with open(os.path.join(args.dir, 'run.sh'), 'w') as f:
        f.write(RUN)


def parse(path):
    out, cur = [], None
    for line in open(path):
        if line.startswith('T '):
            cur = ' '.join(line.split()[1:])
        m = re.match(r'time_ms=([\d.]+)', line)
        if m:
            out.append((cur, float(m.group(1))))
    return out


def table(args):
    best = {}
    for v in ('orig', 'model', 'p2e', 'p4e'):
        runs = [parse(os.path.join(args.dir, 'exp-%s-%d.txt' % (v, r))) for r in (1, 2)
                if os.path.exists(os.path.join(args.dir, 'exp-%s-%d.txt' % (v, r)))]
        best[v] = [(runs[0][i][0], min(r[i][1] for r in runs)) for i in range(len(runs[0]))]
    print('| launch (tile, radius, threads, blocks, warps per SM) | original ms | model | 2:per-element | 4:per-element |')
    print('|---|---:|---:|---:|---:|')
    for i, (k, o) in enumerate(best['orig']):
        print('| %s | %.4f | %.2fx | %.2fx | %.2fx |' % (k, o, o / best['model'][i][1],
                                                         o / best['p2e'][i][1], o / best['p4e'][i][1]))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    p = sub.add_parser('prepare')
    p.add_argument('--dir', default=os.path.join(ROOT, '.gpu', 'launch-sweep'))
    p.add_argument('--tilepipe', default=os.environ.get('TILEPIPE') or os.path.join(ROOT, 'build', 'tool', 'tilepipe'))
    p.add_argument('--warps', type=lambda s: [int(x) for x in s.split()], default=[2, 4, 8, 12, 16, 24, 32])
    p.add_argument('--always', action='store_true')
    t = sub.add_parser('table')
    t.add_argument('--dir', default='.')
    args = ap.parse_args(argv)
    return prepare(args) if args.cmd == 'prepare' else table(args)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]) or 0)
