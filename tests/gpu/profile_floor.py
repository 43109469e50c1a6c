#!/usr/bin/env python3
"""What separates a kernel from its floor: Nsight Compute on the benchmark's programs.

  profile_floor.py --bundle DIR --record benchmark.json --variant NAME --out DIR
                   [--above 1.10] [--ncu PATH] [--budget SECONDS]

On the GPU machine, after tests/gpu/benchmark.sh run (the bundle's programs are built). For every
kernel whose VARIANT runs above ABOVE times its floor, profiles one launch of its timed case in the
original, the variant and the compute-only variant: Speed of Light (SM, L1, L2, DRAM throughput,
duration), memory workload (L2 and DRAM bytes) and the warp stall reasons (cycles per issued
instruction, by reason). Writes OUT/<spec>.<kernel>.<key>.csv (ncu's raw output) and
OUT/profile.json and OUT/profile.md (a table per kernel). Needs python3 and ncu only.
"""
import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import time

SECTIONS = ['SpeedOfLight', 'MemoryWorkloadAnalysis', 'WarpStateStats']
METRICS = [
    'gpu__time_duration.sum',
    'sm__throughput.avg.pct_of_peak_sustained_elapsed',
    'l1tex__throughput.avg.pct_of_peak_sustained_active',
    'lts__throughput.avg.pct_of_peak_sustained_elapsed',
    'dram__throughput.avg.pct_of_peak_sustained_elapsed',
    'lts__t_bytes.sum',
    'dram__bytes_read.sum',
    'smsp__average_warp_latency_per_inst_issued.ratio',
    'sm__warps_active.avg.pct_of_peak_sustained_active',
    'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio',
]
STALL = re.compile(r'smsp__average_warps_issue_stalled_(.*)_per_issue_active\.ratio')


def program(bundle, spec, key, variant):
    if key in ('original', 'compute_only'):
        return os.path.join(bundle, '_floor', spec, key)
    return os.path.join(bundle, variant, spec, 'rewritten')


def base_name(kernel):
    """matmul<16> -> matmul; ns::k -> k: what ncu's function base name starts with."""
    k = re.sub(r'<.*>', '', kernel)
    return k.split('::')[-1].strip()


def profile(ncu, prog, kernel, csv_path):
    cmd = [ncu, '--csv', '--page', 'raw', '--kernel-name-base', 'function', '-k', 'regex:^%s(<|$)' % re.escape(kernel),
           '--launch-count', '1']
    for s in SECTIONS:
        cmd += ['--section', s]
    cmd += ['--metrics', ','.join(METRICS), prog, 'run', csv_path + '.bin', '--runs', '1', '--timed-only']
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                       cwd=os.path.dirname(prog), timeout=300)
    with open(csv_path, 'w') as f:
        f.write(r.stdout)
    lines = r.stdout.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return None
    rows = list(csv.reader(io.StringIO('\n'.join(lines[start:]))))
    if len(rows) < 3:
        return None
    head, data = rows[0], rows[2]  # rows[1]: units
    out = {}
    for h, v in zip(head, data):
        try:
            out[h] = float(v.replace(',', ''))
        except ValueError:
            pass
    return out


def summary(m):
    stalls = sorted(((STALL.match(k).group(1), v) for k, v in m.items() if STALL.match(k)),
                    key=lambda kv: -kv[1])
    return {
        'duration_us': m.get('gpu__time_duration.sum', 0) / 1e3,
        'sm_pct': m.get('sm__throughput.avg.pct_of_peak_sustained_elapsed'),
        'l1_pct': m.get('l1tex__throughput.avg.pct_of_peak_sustained_active'),
        'l2_pct': m.get('lts__throughput.avg.pct_of_peak_sustained_elapsed'),
        'dram_pct': m.get('dram__throughput.avg.pct_of_peak_sustained_elapsed'),
        'l2_mb': m.get('lts__t_bytes.sum', 0) / 1e6,
        'dram_read_mb': m.get('dram__bytes_read.sum', 0) / 1e6,
        'cycles_per_issue': m.get('smsp__average_warp_latency_per_inst_issued.ratio'),
        'warps_active_pct': m.get('sm__warps_active.avg.pct_of_peak_sustained_active'),
        'stalls': [[n, v] for n, v in stalls if v >= 0.05][:6],
    }


def num(x, f='%.1f'):
    return f % x if isinstance(x, (int, float)) else '-'


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--bundle', required=True)
    ap.add_argument('--record', required=True)
    ap.add_argument('--variant', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--above', type=float, default=1.10)
    ap.add_argument('--ncu', default='ncu')
    ap.add_argument('--budget', type=float, default=0)
    a = ap.parse_args(argv)
    t0 = time.time()
    a.out, a.bundle = os.path.abspath(a.out), os.path.abspath(a.bundle)
    os.makedirs(a.out, exist_ok=True)
    rec = json.load(open(a.record))
    result, md = [], []
    p = md.append
    p('| kernel | variant | / floor (bound) | duration us | SM % | L1 % | L2 % | DRAM % | L2 MB | DRAM read MB '
      '| warps active % | cycles / issue | top stalls (cycles per issue) |')
    p('|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|')
    # The farthest from its floor first: where the budget runs out, the nearest are left.
    far = sorted(rec['kernels'], key=lambda k: -(k['variants'].get(a.variant, {}).get('floor_ratio') or 0))
    for k in far:
        v = k['variants'].get(a.variant, {})
        if v.get('status') != 'ok' or (v.get('floor_ratio') or 0) <= a.above:
            continue
        entry = {'spec': k['spec'], 'kernel': k['kernel'], 'floor_ratio': v['floor_ratio'],
                 'bound': (k.get('floors') or {}).get('bound'), 'profiles': {}}
        for key in ('original', a.variant, 'compute_only'):
            if a.budget and time.time() - t0 > a.budget:
                entry['profiles'][key] = 'budget spent'
                continue
            prog = program(a.bundle, k['spec'], key, a.variant)
            if not os.access(prog, os.X_OK):
                entry['profiles'][key] = 'no program'
                continue
            name = re.sub(r'[^A-Za-z0-9_.-]', '_', '%s.%s.%s' % (k['spec'], k['kernel'], key))
            try:
                m = profile(a.ncu, prog, base_name(k['kernel']), os.path.join(a.out, name + '.csv'))
            except subprocess.TimeoutExpired:
                m = None
            entry['profiles'][key] = summary(m) if m else 'not profiled (see the csv)'
            s = entry['profiles'][key]
            ratio = k['variants'].get(key, {}).get('floor_ratio')
            if isinstance(s, dict):
                p('| %s: %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
                    k['spec'], k['kernel'], key, num(ratio, '%.2f'), entry['bound'], num(s['duration_us']),
                    num(s['sm_pct']), num(s['l1_pct']), num(s['l2_pct']), num(s['dram_pct']), num(s['l2_mb']),
                    num(s['dram_read_mb']), num(s['warps_active_pct']), num(s['cycles_per_issue']),
                    ', '.join('%s %.1f' % (n, x) for n, x in s['stalls'][:4])))
            else:
                p('| %s: %s | %s | %s | %s |||||||||' % (k['spec'], k['kernel'], key, num(ratio, '%.2f'), s))
        result.append(entry)
    json.dump(result, open(os.path.join(a.out, 'profile.json'), 'w'), indent=1)
    open(os.path.join(a.out, 'profile.md'), 'w').write('\n'.join(md) + '\n')
    print('\n'.join(md))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
