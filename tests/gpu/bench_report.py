#!/usr/bin/env python3
"""The report half of tests/gpu/benchmark.sh: what the GPU runs wrote -> benchmark.json -> benchmark.md.

  bench_report.py record --bundle DIR --raw DIR     benchmark.json on stdout, from the bundle's
                                                    manifest and the raw notes of `benchmark.sh run`
  bench_report.py markdown FILE.json                the tables of docs/benchmark/*.md on stdout

Needs only python3's standard library, so that it runs on the GPU machine and in CI without a GPU.

Raw layout (written by benchmark.sh run under --out DIR/raw):
  meta.txt                   key=value: started, date, ran, complete, arch, rounds, nvcc, nvidia_driver
  <spec>/<key>.info.json     the driver's `info` output for one build (key: original, a variant name,
                             compute_only, census): the device, and per timed case its moved bytes and
                             resources; the census's also the bytes its loops copy into shared memory
  <spec>/<key>.r<N>.txt      the driver's notes of round N (`time`, `launches`, `copy_gbps`, `l2_gbps`)
  <spec>/<key>.status        why a build or run failed: build failed, failed, cannot launch
  <spec>/<variant>.compare.json   the driver's comparison of round 1 against the original
"""
import argparse
import json
import math
import os
import re
import statistics
import sys

SCHEMA = 'tilepipe-benchmark/1'
LAUNCHES_PER_ROUND = 21  # timeLaunches in templates/verify_driver.cu.in
ORIGINAL, FLOOR = 'original', 'compute_only'


# ----------------------------------------------------------------------------- reading raw notes

def read_notes(path):
    """{case index: {'ms': median, 'launches': [..], 'copy_gbps': [..], 'l2_gbps': [..]}} from one
    run's notes."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) < 3 or not w[1].isdigit():
                continue
            ci = int(w[1])
            e = out.setdefault(ci, {'ms': None, 'launches': [], 'copy_gbps': [], 'l2_gbps': []})
            if w[0] == 'time':
                e['ms'] = float(w[2])
            elif w[0] == 'launches':
                e['launches'] = [float(x) for x in w[2:]]
            elif w[0] in ('copy_gbps', 'l2_gbps', 'read_gbps') and float(w[2]) > 0:
                e.setdefault(w[0], []).append(float(w[2]))
    return out


_ENTRY = re.compile(r'^\s*\{("(?:[^"\\]|\\.)*"), ("(?:[^"\\]|\\.)*"), (true|false), (?:true|false), '
                    r'&tpv_spec::case_(\d+),')


def _unquote(lit):
    return re.sub(r'\\(.)', r'\1', lit[1:-1])


def timed_cases(driver_cu):
    """The timed cases of a generated driver.cu's case table: [(index, kernel, case name)]."""
    cases = []
    with open(driver_cu) as f:
        for line in f:
            m = _ENTRY.match(line)
            if m and m.group(3) == 'true':
                cases.append((int(m.group(4)), _unquote(m.group(1)), _unquote(m.group(2))))
    return cases


def read_meta(raw):
    meta = {}
    path = os.path.join(raw, 'meta.txt')
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if '=' in line:
                    k, v = line.rstrip('\n').split('=', 1)
                    meta[k] = v
    return meta


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


# ----------------------------------------------------------------------------- statistics

def quartiles(xs):
    """p25, p75 by linear interpolation between order statistics (numpy's default)."""
    if len(xs) == 1:
        return xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method='inclusive')
    return q[0], q[2]


def timing(rounds):
    """The timing fields of one variant of one kernel from its rounds' notes entries."""
    launches = [t for r in rounds for t in r['launches']]
    if not launches:
        return {'median_ms': None, 'p25_ms': None, 'p75_ms': None, 'min_ms': None, 'max_ms': None,
                'spread': None, 'launches': 0, 'rounds': 0, 'round_medians_ms': []}
    med = statistics.median(launches)
    p25, p75 = quartiles(launches)
    return {'median_ms': med, 'p25_ms': p25, 'p75_ms': p75, 'min_ms': min(launches),
            'max_ms': max(launches), 'spread': (p75 - p25) / med if med > 0 else None,
            'launches': len(launches), 'rounds': sum(1 for r in rounds if r['launches']),
            'round_medians_ms': [r['ms'] if r['ms'] is not None else statistics.median(r['launches'])
                                 for r in rounds if r['launches']]}


def ratio(a, b):
    return a / b if a is not None and b else None


def derive(record):
    """Fills what follows from the measurements: the floors, every ratio and the geomeans. Applied
    to a record, it reproduces that record's derived numbers exactly (BenchReportTest checks it)."""
    names = [v['name'] for v in record['variants']]
    for k in record['kernels']:
        vs = k['variants']
        measured = [g for v in vs.values() for g in v.get('copy_gbps_measured') or []]
        k['copy_gbps'] = max(measured) if measured else None
        # Records since 2026-12-05 (13:00) measure DRAM read alone too: a kernel that only reads
        # runs faster than a copy, which reads and writes; the memory floor takes the faster.
        best = k['copy_gbps']
        if any('read_gbps_measured' in v for v in vs.values()):
            read = [g for v in vs.values() for g in v.get('read_gbps_measured') or []]
            k['read_gbps'] = max(read) if read else None
            best = max(best or 0, k['read_gbps'] or 0) or None
        floor = vs.get(FLOOR)
        co = floor['median_ms'] if floor and floor['status'] == 'ok' else None
        mem = (k['moved_bytes'] / (best * 1e9) * 1e3
               if k.get('moved_bytes') is not None and best else None)
        # The L2 floor (records since 2026-12-05, which have the census): the bytes the loops copy
        # into shared memory, over all blocks and trips, at the best L2 read bandwidth measured.
        l2 = None
        if 'census_bytes' in k:
            l2_measured = [g for v in vs.values() for g in v.get('l2_gbps_measured') or []]
            k['l2_gbps'] = max(l2_measured) if l2_measured else None
            l2 = (k['census_bytes'] / (k['l2_gbps'] * 1e9) * 1e3
                  if k['census_bytes'] is not None and k['l2_gbps'] else None)
        named = [(x, b) for x, b in ((co, 'compute-only'), (mem, 'memory'), (l2, 'l2')) if x is not None]
        fl = max(x for x, _ in named) if named else None
        bound = next((b for x, b in named if x == fl), None)
        k['floors'] = {'compute_only_ms': co, 'memory_ms': mem, 'floor_ms': fl, 'bound': bound}
        if 'census_bytes' in k:
            k['floors']['l2_ms'] = l2
        orig = vs.get(ORIGINAL, {}).get('median_ms')
        for v in vs.values():
            m = v.get('median_ms')
            v['speedup'] = ratio(orig, m)
            v['floor_ratio'] = ratio(m, fl)
            v['compute_only_ratio'] = ratio(m, co)
            v['memory_ratio'] = ratio(m, mem)
    geo = {}
    for n in names:
        s = [k['variants'][n]['speedup'] for k in record['kernels']
             if k['variants'].get(n, {}).get('status') == 'ok'
             and k['variants'].get(ORIGINAL, {}).get('status') == 'ok' and k['variants'][n]['speedup']]
        geo[n] = {'speedup': math.exp(sum(math.log(x) for x in s) / len(s)) if s else None,
                  'kernels': len(s)}
    record['geomean'] = geo
    return record


# ----------------------------------------------------------------------------- record

def status_of(raw, spec, key, kernel, has_launches):
    """ok, or why not: build failed, failed, cannot launch, differs, not compared, not run."""
    st = read_text(os.path.join(raw, spec, key + '.status'))
    if st == 'build failed':
        return st
    cmp = read_json(os.path.join(raw, spec, key + '.compare.json'))
    verdicts = [c.get('outputs') for c in (cmp or {}).get('cases', []) if c.get('kernel') == kernel]
    if 'DIFFER' in verdicts:
        return 'differs'
    if st and not (key == FLOOR and has_launches):
        return st  # a rewrite that fails anywhere in its file fails; a floor counts where it ran
    if not has_launches:
        return 'not run'
    if key not in (ORIGINAL, FLOOR) and (not verdicts or any(v != 'bitwise equal' for v in verdicts)):
        # The run stopped before round 1's comparison, or a case of the kernel was not compared.
        return 'not compared'
    return 'ok'


def record(bundle, raw):
    manifest = read_json(os.path.join(bundle, 'manifest.json'))
    if manifest is None:
        sys.exit('bench_report.py: no manifest.json in %s (run benchmark.sh prepare)' % bundle)
    meta = read_meta(raw)
    names = [v['name'] for v in manifest['variants']]
    keys = [ORIGINAL] + names + [FLOOR]
    rounds = int(meta.get('rounds', '0') or 0)
    gpu = None
    kernels = []
    for spec in manifest['prepared']['specs'].split():
        infos = {key: read_json(os.path.join(raw, spec, key + '.info.json')) for key in keys}
        for info in infos.values():
            if info and gpu is None:
                gpu = info.get('device')
        notes = {key: [read_notes(os.path.join(raw, spec, '%s.r%d.txt' % (key, r)))
                       for r in range(1, rounds + 1)] for key in keys}
        census = read_json(os.path.join(raw, spec, 'census.info.json'))
        driver = os.path.join(bundle, '_floor', spec, 'driver.cu')
        for index, kernel, case in (timed_cases(driver) if os.path.exists(driver) else []):
            k = {'spec': spec, 'kernel': kernel, 'case': case, 'index': index, 'moved_bytes': None,
                 'copy_gbps': None, 'floors': None, 'variants': {}}
            for key in keys:
                res = {}
                for c in (infos[key] or {}).get('cases', []):
                    if c.get('index') == index:
                        res = c
                if res.get('moved_bytes') is not None:
                    k['moved_bytes'] = res['moved_bytes']
                rs = [n[index] for n in notes[key] if index in n]
                v = {'status': status_of(raw, spec, key, kernel, any(r['launches'] for r in rs))}
                v.update(timing(rs))
                blocks, threads = res.get('blocks_per_sm'), res.get('threads_per_block')
                v.update({'regs': res.get('regs'), 'smem_bytes': res.get('smem_bytes'),
                          'local_bytes': res.get('local_bytes'), 'threads_per_block': threads,
                          'blocks_per_sm': blocks,
                          'warps_per_sm': blocks * threads // 32 if blocks is not None and threads else None,
                          'copy_gbps_measured': [g for r in rs for g in r['copy_gbps']],
                          'l2_gbps_measured': [g for r in rs for g in r['l2_gbps']],
                          'read_gbps_measured': [g for r in rs for g in r.get('read_gbps', [])]})
                k['variants'][key] = v
            if os.path.exists(os.path.join(raw, spec, 'census.info.json')):
                k['census_bytes'] = next((c.get('census_bytes') for c in (census or {}).get('cases', [])
                                          if c.get('index') == index), None)
            kernels.append(k)
    gpu = gpu or {}
    runtime = gpu.get('cuda_runtime')
    rec = {
        'schema': SCHEMA,
        'date': meta.get('date'),
        'started': meta.get('started'),
        'ran': meta.get('ran') == 'true',
        'complete': meta.get('complete') == 'true',
        'gpu': gpu or None,
        'nvidia_driver': meta.get('nvidia_driver') or None,
        'cuda_driver_api': gpu.get('cuda_driver_api'),
        'cuda_runtime': runtime,
        'cuda_version': '%d.%d' % (runtime // 1000, runtime % 1000 // 10) if runtime else None,
        'nvcc': meta.get('nvcc') or None,
        'arch': meta.get('arch'),
        'rounds': rounds,
        'launches_per_round': LAUNCHES_PER_ROUND,
        'prepared': manifest['prepared'],
        'variants': manifest['variants'],
        'kernels': kernels,
        'geomean': {},
    }
    return derive(rec)


# ----------------------------------------------------------------------------- markdown

def ms(x):
    return '%.4f' % x if x is not None else '-'


def times(x):
    return '%.2fx' % x if x is not None else '-'


def num(x):
    return '%.2f' % x if x is not None else '-'


def integer(x):
    return str(x) if x is not None else '-'


def below_floor(rec):
    """'spec: kernel, variant (ratio of bound)' for each variant, the original included, that ran
    below its kernel's floor. The compute-only variant is not one: it copies the first tile only."""
    out = []
    for k in rec['kernels']:
        fl = k.get('floors') or {}
        for n, v in k['variants'].items():
            if n == FLOOR or v.get('status') != 'ok' or v.get('median_ms') is None or not fl.get('floor_ms'):
                continue
            if v['median_ms'] < fl['floor_ms']:
                out.append('%s: %s, %s (%.2f of %s)' % (k['spec'], k['kernel'], n, v['median_ms'] / fl['floor_ms'],
                                                        fl.get('bound')))
    return out


def markdown(rec):
    names = [v['name'] for v in rec['variants']]
    out = []
    p = out.append
    p('# tilepipe benchmark, %s' % (rec.get('date') or 'not run'))
    p('')
    gpu = rec.get('gpu') or {}
    if rec.get('ran'):
        rt = rec.get('cuda_runtime')
        p('GPU: %s (cc %s), NVIDIA driver %s, CUDA runtime %s, nvcc %s, %s; %d round(s) of %d timed '
          'launches; %s' % (gpu.get('name', '?'), gpu.get('compute_capability', '?'),
                            rec.get('nvidia_driver') or '?',
                            '%d.%d' % (rt // 1000, rt % 1000 // 10) if rt else '?', rec.get('nvcc') or '?',
                            rec.get('arch') or '?', rec['rounds'], rec['launches_per_round'],
                            'complete' if rec.get('complete') else
                            'INCOMPLETE: stopped before every round of every kernel ran (not run below)'))
    else:
        p('Nothing ran: no usable GPU (the programs were built). nvcc %s, %s.'
          % (rec.get('nvcc') or '?', rec.get('arch') or '?'))
    p('')
    has_l2 = any('l2_ms' in (k.get('floors') or {}) for k in rec['kernels'])
    head = ['kernel', 'timed case', 'compute-only ms', 'memory floor ms'] + (['L2 floor ms'] if has_l2 else []) + \
        ['floor', 'original ms', 'original / floor']
    align = ['---', '---', '---:', '---:'] + (['---:'] if has_l2 else []) + ['---', '---:', '---:']
    for n in names:
        head += ['%s ms' % n, '%s speedup' % n, '%s / floor' % n]
        align += ['---:'] * 3
    p('| ' + ' | '.join(head) + ' |')
    p('|' + '|'.join(align) + '|')

    def cell(v):
        return ms(v.get('median_ms')) if v.get('status') == 'ok' else v.get('status', '-')

    for k in rec['kernels']:
        vs, fl = k['variants'], k.get('floors') or {}
        co = fl.get('compute_only_ms')
        co_cell = ms(co) if co is not None else (vs.get(FLOOR, {}).get('status') or '-')
        if co_cell == 'ok':
            co_cell = '-'
        o = vs.get(ORIGINAL, {})
        row = ['%s: %s' % (k['spec'], k['kernel']), k['case'], co_cell, ms(fl.get('memory_ms'))] + \
            ([ms(fl.get('l2_ms'))] if has_l2 else []) + \
            [fl.get('bound') or '-', cell(o), num(o.get('floor_ratio')) if o.get('status') == 'ok' else '-']
        for n in names:
            v = vs.get(n, {'status': 'not prepared'})
            good = v.get('status') == 'ok' and o.get('status') == 'ok'
            row += [cell(v), times(v.get('speedup')) if good else '-',
                    num(v.get('floor_ratio')) if v.get('status') == 'ok' else '-']
        p('| ' + ' | '.join(row) + ' |')
    p('')
    total = len(rec['kernels'])
    for n in names:
        g = rec['geomean'].get(n, {})
        line = 'geomean speedup, %s: %s over %d kernel(s)' % (
            n, '%.3fx' % g['speedup'] if g.get('speedup') else '-', g.get('kernels', 0))
        if g.get('kernels', 0) < total:
            line += '; %d left out (not ok: see the table)' % (total - g.get('kernels', 0))
        p(line)
    bugs = ['%s: %s, %s' % (k['spec'], k['kernel'], n) for k in rec['kernels'] for n in names
            if k['variants'].get(n, {}).get('status') in ('differs', 'failed', 'build failed', 'cannot launch')]
    if bugs:
        p('')
        p('BUG: a rewrite that differs from its original or fails where it ran: ' + '; '.join(bugs))
    if has_l2:
        below = below_floor(rec)
        p('')
        p('The floor is not a floor where a variant runs below it: ' + '; '.join(below) if below else
          'Validated: no variant (the original included) runs below its kernel\'s floor.')
    p('')
    keys = [ORIGINAL] + names + [FLOOR]
    head, align = ['kernel'], ['---']
    for n in keys:
        head += ['%s regs' % n, '%s smem B' % n, '%s blocks/SM' % n]
        align += ['---:'] * 3
    p('| ' + ' | '.join(head) + ' |')
    p('|' + '|'.join(align) + '|')
    for k in rec['kernels']:
        row = ['%s: %s' % (k['spec'], k['kernel'])]
        for n in keys:
            v = k['variants'].get(n, {})
            row += [integer(v.get('regs')), integer(v.get('smem_bytes')), integer(v.get('blocks_per_sm'))]
        p('| ' + ' | '.join(row) + ' |')
    p('')
    if has_l2:
        p("Floors: compute-only = the compute-only variant's median; memory = bytes moved (inputs read once, "
          "outputs written once) / device-to-device copy bandwidth; L2 = bytes the tiled loops copy into "
          "shared memory (the census: every tile of every trip of every block) / L2 read bandwidth; "
          "floor = the largest. Times: medians of every timed launch of every round. Spreads, quartiles, "
          "bandwidths and statuses are in benchmark.json.")
    else:
        p("Floors: compute-only = the compute-only variant's median; memory = bytes moved (inputs read once, "
          "outputs written once) / device-to-device copy bandwidth; floor = the larger. Times: medians of "
          "every timed launch of every round. Spreads, quartiles and statuses are in benchmark.json.")
    return '\n'.join(out) + '\n'


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    r = sub.add_parser('record', help='benchmark.json from the raw notes')
    r.add_argument('--bundle', required=True)
    r.add_argument('--raw', required=True)
    m = sub.add_parser('markdown', help='benchmark.md from benchmark.json')
    m.add_argument('json')
    a = ap.parse_args(argv)
    if a.cmd == 'record':
        json.dump(record(a.bundle, a.raw), sys.stdout, indent=1)
        sys.stdout.write('\n')
    else:
        with open(a.json) as f:
            sys.stdout.write(markdown(json.load(f)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
