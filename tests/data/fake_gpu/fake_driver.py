#!/usr/bin/env python3
"""A stand-in for a verify driver built for a GPU (templates/verify_driver.cu.in), for BenchmarkTest.

Speaks the driver's command line and writes its notes (probe, info, run, compare), with made-up
times, so that tests/gpu/benchmark.sh run can be tested where there is no GPU. The case table is
read from the bundle's driver.cu, as the real driver has it compiled in.

  fake_driver.py PROGRAM MODE ARGS...     PROGRAM: <dir>/<variant>/<spec>/<original|rewritten|compute_only|census>

Environment, each a list of keys (original, compute_only, or a variant's name such as always):
  FAKE_GPU_NONE=1            no device: probe and info exit 77
  FAKE_GPU_DIFFER=KEYS       these keys' outputs differ from the original's
  FAKE_GPU_CANNOT_LAUNCH=KEYS  these keys' kernels fit no SM: run fails as a launch does
  FAKE_GPU_SECONDS=S         every run takes S whole seconds of the clock in the file
                             $TILEPIPE_BENCH_CLOCK (benchmark.sh's budget reads it): it adds them
                             there, and takes no time of the machine's
"""
import json
import os
import re
import sys

# Median times by key (ms); a variant not named here runs as the original.
BASE_MS = {'original': 1.0, 'default': 0.9, 'always': 0.8, 'compute_only': 0.5}
ENTRY = re.compile(r'^\s*\{("(?:[^"\\]|\\.)*"), ("(?:[^"\\]|\\.)*"), (true|false), (?:true|false), '
                   r'&tpv_spec::case_(\d+),')


def listed(var, key):
    return key in os.environ.get(var, '').split()


def advance_clock(seconds):
    if not seconds:
        return
    clock = os.environ['TILEPIPE_BENCH_CLOCK']
    with open(clock) as f:
        now = int(f.read().strip() or 0)
    with open(clock, 'w') as f:
        f.write('%d\n' % (now + seconds))


def cases(bundle):
    out = []
    with open(os.path.join(bundle, 'driver.cu')) as f:
        for line in f:
            m = ENTRY.match(line)
            if m:
                out.append({'index': int(m.group(4)), 'kernel': json.loads(m.group(1)),
                            'case': json.loads(m.group(2)), 'timed': m.group(3) == 'true'})
    return out


def main(argv):
    program, mode, args = argv[1], argv[2], argv[3:]
    bundle = os.path.dirname(program)
    role = os.path.basename(program)
    key = os.path.basename(os.path.dirname(bundle)) if role == 'rewritten' else role
    table = cases(bundle)
    if mode in ('probe', 'info') and os.environ.get('FAKE_GPU_NONE'):
        return 77
    if mode == 'probe':
        print('Fake GPU (sm_90)')
        return 0
    if mode == 'info':
        timed = [c for c in table if c['timed']]
        info = {'device': {'name': 'Fake GPU', 'compute_capability': '9.0', 'sm_count': 132,
                           'l2_bytes': 62914560, 'memory_bytes': 150109880320, 'max_threads_per_sm': 2048,
                           'shared_per_sm_bytes': 233472, 'registers_per_sm': 65536,
                           'cuda_driver_api': 13000, 'cuda_runtime': 13000},
                'resources': True,
                # The first timed case of a file moves 1 GB (0.25 ms at 4000 GB/s, under the
                # compute-only 0.5 ms), the others 3 GB (0.75 ms: the memory floor bounds them).
                'cases': [{'index': c['index'], 'kernel': c['kernel'], 'case': c['case'],
                           'moved_bytes': (3 if n else 1) * 10**9, 'threads_per_block': 256,
                           'regs': 40 if key == 'always' else 32, 'smem_bytes': 2048, 'local_bytes': 0,
                           'max_threads_per_block': 1024,
                           'blocks_per_sm': 0 if listed('FAKE_GPU_CANNOT_LAUNCH', key) else 8}
                          for n, c in enumerate(timed)]}
        if role == 'census':  # 2 GB into shared memory: 0.25 ms at the 8000 GB/s of L2 runs measure
            for c in info['cases']:
                c['census_bytes'] = 2 * 10**9
        print(json.dumps(info))
        return 0
    if mode == 'run':
        out = args[0]
        advance_clock(int(os.environ.get('FAKE_GPU_SECONDS', '0')))
        if listed('FAKE_GPU_CANNOT_LAUNCH', key):
            sys.stderr.write('driver.cu:1: CUDA error cudaErrorLaunchOutOfResources: too many resources '
                             'requested for launch\n')
            return 2
        timed_only, timing = '--timed-only' in args, '--time' in args
        outputs, notes = {}, []
        base = BASE_MS.get(key, 1.0)
        for c in table:
            ci = c['index']
            if timed_only and not c['timed']:
                notes.append('skipped %d' % ci)
                continue
            outputs[ci] = 'case %d%s' % (ci, ' planted' if listed('FAKE_GPU_DIFFER', key) else '')
            if timing and c['timed']:
                ms = [base * (1 + 0.01 * (i % 3)) for i in range(21)]
                notes.append('time %d %.5f 1' % (ci, sorted(ms)[10]))
                notes.append('launches %d %s' % (ci, ' '.join('%.5f' % t for t in ms)))
                notes.append('copy_gbps %d %.1f' % (ci, 4000.0))
                notes.append('l2_gbps %d %.1f' % (ci, 8000.0))
            notes.append('ran %d' % ci)
        with open(out, 'w') as f:
            json.dump(outputs, f)
        with open(out + '.txt', 'w') as f:
            f.write('\n'.join(notes) + '\n')
        return 0
    if mode == 'compare':
        files = [a for a in args if not a.startswith('--')][:2]
        json_path = args[args.index('--json') + 1] if '--json' in args else None
        a, b = (json.load(open(p)) for p in files)
        # As the real driver: which cases ran, it reads from the notes beside each output file.
        def ran(p):
            try:
                return {l.split()[1] for l in open(p + '.txt') if l.startswith('ran ')}
            except OSError:
                return set()
        ran_a, ran_b = ran(files[0]), ran(files[1])
        rows, ok = [], True
        for c in table:
            ci = str(c['index'])
            verdict = 'not run' if ci not in a or ci not in b or ci not in ran_a or ci not in ran_b else \
                'bitwise equal' if a[ci] == b[ci] else 'DIFFER'
            ok &= verdict == 'bitwise equal'
            print('| %s | %s | %s |' % (c['kernel'], c['case'], verdict))
            rows.append({'kernel': c['kernel'], 'case': c['case'], 'outputs': verdict})
        print('PASS' if ok else 'FAIL')
        if json_path:
            with open(json_path, 'w') as f:
                json.dump({'cases': rows, 'passed': ok}, f)
        return 0 if ok else 1
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
