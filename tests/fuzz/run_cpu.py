#!/usr/bin/env python3
"""CPU side of the tilepipe fuzzer: generate batches, rewrite them in every mode, check, summarize.

    run_cpu.py --tilepipe build/tool/tilepipe --seeds 1-20 [--kernels 100] [--out DIR]
               [--jobs N] [--bundle DIR] [--no-nvcc] [--archs sm_90,sm_80] [--labels CLASS,...]
               [--tilepipe-arg OPTION ...]

For every seed a batch (gen.py) goes through `tilepipe --mode=M --report=...` for M in auto,
pipeline, tma, and these must hold (anything else is a FAILURE):
  - tilepipe exits 0, within --timeout seconds, with a parseable report;
  - a kernel whose loops were all left alone is byte-identical in the output;
  - the output is idempotent: tilepipe (same mode) on its own output changes nothing;
  - with nvcc: the original builds, and every rewritten batch builds for each of --archs
    (sm_90: `nvcc -c`, host code included; others: `nvcc -cubin`, device code through ptxas);
  - with nvcc: every original kernel can launch the block its driver gives it (ptxas's registers
    a thread, from --resource-usage, times the block's threads fit in 65536 registers).
A failure of the tool or of nvcc on a batch is narrowed down to the kernels involved, each
written out standalone (reduce.py) under DIR/failures/ and checked again on its own.

Writes DIR/summary.txt and DIR/summary.json: kernels by shape class (label), loops rewritten and
left alone by reason ID, per mode, and for the names classes (gen.py's NAMES_CLASSES and their
sub-labels) every loop's outcome by reason ID, with the rewritten loops that use tensor copies.
--labels makes every kernel of the batches one of the given names classes (gen.py --labels). With
--bundle DIR, writes what the GPU harness needs (the original and the rewrites that built, per
batch, with run_gpu.sh); see README.md.

Exit status: 0 when nothing failed; 1 on any failure; 77 when nvcc is missing (and --no-nvcc was
not given): then nothing was built, which is never reported as passed.
"""
import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reduce as red  # noqa: E402

# 'registers' is the register-staged prefetch (--plan-choice=registers, one buffer, any device).
MODES = ['auto', 'pipeline', 'tma', 'registers']
# 'model' is the default plan policy in the auto mode: the cost model's plans, the small-launch
# pipeline among them (its launch test and both of its paths). Asked for with --modes.
KNOWN_MODES = MODES + ['model']


def parse_seeds(s):
    out = []
    for part in s.split(','):
        if '-' in part:
            a, b = part.split('-')
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def run(cmd, timeout, cwd=None):
    """(rc, stdout, stderr, timed_out); rc < 0 is a signal."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                           errors='replace')
        return p.returncode, p.stdout, p.stderr, False
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors='replace') if isinstance(e.stdout, bytes) else (e.stdout or '')
        err = e.stderr.decode(errors='replace') if isinstance(e.stderr, bytes) else (e.stderr or '')
        return None, out, err, True


def find_nvcc(explicit):
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    p = shutil.which('nvcc')
    if p:
        return p
    for root in (os.environ.get('CUDA_PATH'), '/usr/local/cuda'):
        if root and os.access(os.path.join(root, 'bin', 'nvcc'), os.X_OK):
            return os.path.join(root, 'bin', 'nvcc')
    return None


def read(path):
    with open(path, errors='replace') as f:
        return f.read()


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


class Ctx:
    def __init__(self, a):
        self.a = a
        self.failures = []   # dicts: kind, seed, mode, kernels, detail, repro

    def fail(self, kind, seed, mode, detail, kernels=(), repro=None):
        self.failures.append(dict(kind=kind, seed=seed, mode=mode, detail=detail.strip()[-4000:],
                                  kernels=list(kernels), repro=repro))


def kernel_of_function(name):
    m = re.search(r's\d+k\d+', name or '')
    return m.group(0) if m else None


def tool_cmd(a, mode, src, dst, report):
    # --plan=always: the fuzzer tests what the emission does to every legal loop, also those the
    # cost model would keep as they are.
    how = (['--mode=pipeline', '--plan-choice=registers', '--plan=always'] if mode == 'registers'
           else ['--mode=auto', '--plan=model'] if mode == 'model'
           else ['--mode=' + mode, '--plan=always'])
    return [a.tilepipe] + how + list(a.tilepipe_arg) + ['--quiet', src, '-o', dst, '--report=' + report]


def tool_step(ctx, seed, bdir, mode, kernels):
    """Runs tilepipe on the batch in one mode and checks it; returns the report's loops or None."""
    a = ctx.a
    src = os.path.join(bdir, 'orig.cu')
    dst = os.path.join(bdir, mode + '.cu')
    rep = os.path.join(bdir, mode + '.json')
    t0 = time.time()
    rc, _, err, to = run(tool_cmd(a, mode, src, dst, rep), a.timeout)
    dt = time.time() - t0
    if to or rc != 0 or not os.path.exists(dst):
        kind = 'tool-timeout' if to else ('tool-crash' if rc is None or rc < 0 or rc >= 128
                                          else 'tool-error')
        culprits = narrow_tool(ctx, seed, bdir, mode, kernels)
        ctx.fail(kind, seed, mode, 'exit %s after %.1fs\n%s' % (rc, dt, err), culprits,
                 repro=culprits and os.path.join(a.out, 'failures'))
        return None, dt
    try:
        loops = json.load(open(rep))['loops']
    except (OSError, ValueError, KeyError) as e:
        ctx.fail('tool-report', seed, mode, 'unreadable report: %s' % e)
        return None, dt
    orig = read(src)
    new = read(dst)
    # Kernels whose loops were all left alone must be byte-identical.
    touched = set()
    for l in loops:
        if l.get('transformed'):
            touched.add(kernel_of_function(l.get('kernel')))
    changed = []
    for kid in kernels:
        if kid in touched:
            continue
        if red.section(orig, kid) != red.section(new, kid):
            changed.append(kid)
    if changed:
        ctx.fail('refused-but-changed', seed, mode,
                 'kernels with no rewritten loop differ from the original', changed)
    # Idempotence: tilepipe on its own output changes nothing.
    again = os.path.join(bdir, mode + '.again.cu')
    rc2, _, err2, to2 = run(tool_cmd(a, mode, dst, again, os.path.join(bdir, mode + '.again.json')),
                            a.timeout)
    if to2 or rc2 != 0:
        ctx.fail('tool-on-output', seed, mode, 'exit %s on its own output\n%s' % (rc2, err2))
    elif read(again) != new:
        diff_kernels = diff_to_kernels(new, read(again))
        ctx.fail('not-idempotent', seed, mode, 'a second run changed the output', diff_kernels)
    else:
        os.remove(again)
        os.remove(os.path.join(bdir, mode + '.again.json'))
    return loops, dt


def diff_to_kernels(a, b):
    al, bl = a.split('\n'), b.split('\n')
    spans = red.kernel_spans(a)
    ks = set()
    for i, (x, y) in enumerate(zip(al, bl), 1):
        if x != y:
            ks.add(red.kernel_at(spans, i) or 'common')
            if len(ks) > 5:
                break
    if len(al) != len(bl) and not ks:
        ks.add('length')
    return sorted(ks)


def narrow_tool(ctx, seed, bdir, mode, kernels):
    """The kernels on which, standalone, the tool fails the same way."""
    a = ctx.a
    orig = read(os.path.join(bdir, 'orig.cu'))
    fdir = os.path.join(a.out, 'failures')
    os.makedirs(fdir, exist_ok=True)
    bad = []
    for kid in kernels:
        one = os.path.join(fdir, '%s.cu' % kid)
        write(one, red.extract(orig, kid))
        rc, _, _, to = run(tool_cmd(a, mode, one, one + '.%s.out.cu' % mode, one + '.json'),
                           a.timeout)
        if to or rc != 0:
            bad.append(kid)
        else:
            os.remove(one)
            for f in (one + '.%s.out.cu' % mode, one + '.json'):
                if os.path.exists(f):
                    os.remove(f)
    return bad


NVCC_ERR = re.compile(r'\((\d+)\): (?:error|catastrophic error)')


def nvcc_cmd(a, arch, src, obj, usage=False):
    # -I: tilepipe's runtime header, which rewrites with tensor or bulk copies include.
    base = [a.nvcc, '-std=c++17', '-arch=' + arch, '-w', '-I' + a.runtime_dir]
    if usage:
        base.append('--resource-usage')   # ptxas's registers per kernel, for launch_faults
    if arch == 'sm_90':
        return base + ['-c', src, '-o', obj]
    return base + ['-cubin', src, '-o', obj]


PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
PTXAS_USED = re.compile(r'Used (\d+) registers')


def kernel_registers(text):
    """{kernel id: registers a thread} from nvcc --resource-usage (the most of its instantiations)."""
    regs = {}
    cur = None
    for line in text.splitlines():
        m = PTXAS_ENTRY.search(line)
        if m:
            cur = kernel_of_function(m.group(1))
            continue
        m = PTXAS_USED.search(line)
        if m and cur:
            regs[cur] = max(regs.get(cur, 0), int(m.group(1)))
            cur = None
    return regs


def block_fits(registers, threads):
    """Whether a block of that many threads gets its registers (64 K a block, allocated per warp
    in units of 256, as the CUDA occupancy calculator and tilepipe's launch check count)."""
    per_warp = (registers * 32 + 255) // 256 * 256
    return per_warp * ((threads + 31) // 32) <= 65536


def launch_faults(man, text):
    """Kernels of a batch whose original cannot launch: ptxas's registers a thread (text: nvcc
    --resource-usage output) times the threads of the block its driver launches (manifest)."""
    regs = kernel_registers(text)
    bad = []
    for kid, _, desc, *_ in man:
        m = re.search(r'block=(\d+)x(\d+)x(\d+)', desc)
        if not m or kid not in regs:
            continue
        threads = int(m.group(1)) * int(m.group(2)) * int(m.group(3))
        if not block_fits(regs[kid], threads):
            bad.append((kid, regs[kid], threads))
    return bad


def nvcc_step(ctx, seed, bdir, variant, arch):
    a = ctx.a
    src = os.path.join(bdir, variant + '.cu')
    obj = os.path.join(bdir, '%s.%s.o' % (variant, arch))
    t0 = time.time()
    rc, out, err, to = run(nvcc_cmd(a, arch, src, obj, usage=variant == 'orig'), a.nvcc_timeout)
    dt = time.time() - t0
    if os.path.exists(obj):
        os.remove(obj)
    if to or rc != 0:
        text = read(src)
        spans = red.kernel_spans(text)
        ks = set()
        for m in NVCC_ERR.finditer(err):
            ks.add(red.kernel_at(spans, int(m.group(1))) or 'common')
        for m in re.finditer(r'k_(s\d+k\d+)|body_(s\d+k\d+)', err):
            ks.add(m.group(1) or m.group(2))
        return dict(ok=False, dt=dt, err=('timeout\n' if to else '') + (out + err),
                    kernels=sorted(ks))
    return dict(ok=True, dt=dt, usage=out + err)


def narrow_nvcc(ctx, seed, bdir, variant, arch, kernels):
    """Writes each implicated kernel standalone (from the failing file) and checks it alone."""
    a = ctx.a
    fdir = os.path.join(a.out, 'failures')
    os.makedirs(fdir, exist_ok=True)
    text = read(os.path.join(bdir, variant + '.cu'))
    confirmed = []
    for kid in kernels:
        if not re.fullmatch(r's\d+k\d+', kid):
            continue
        one = os.path.join(fdir, '%s.%s.cu' % (kid, variant))
        write(one, red.extract(text, kid))
        r = nvcc_step(ctx, seed, fdir, '%s.%s' % (kid, variant), arch)
        if not r['ok']:
            confirmed.append(kid)
        # The original of the kernel, beside it, for the report.
        write(os.path.join(fdir, '%s.cu' % kid),
              red.extract(read(os.path.join(bdir, 'orig.cu')), kid))
    return confirmed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--tilepipe', required=True, help='the tilepipe program')
    ap.add_argument('--seeds', default='1-4', help='e.g. 1-20 or 3,7,9 (one batch each)')
    ap.add_argument('--kernels', type=int, default=100, help='kernels per batch')
    ap.add_argument('--out', default='fuzz-out', help='work folder (default ./fuzz-out)')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 2)
    ap.add_argument('--timeout', type=int, default=120, help='seconds for one tilepipe run')
    ap.add_argument('--tilepipe-arg', action='append', default=[],
                    help='one more option for every tilepipe run (repeatable), e.g. '
                         '--tilepipe-arg=--check-launch-resources=false for a quicker large run')
    ap.add_argument('--nvcc', help='nvcc (default: PATH, $CUDA_PATH, /usr/local/cuda)')
    ap.add_argument('--no-nvcc', action='store_true', help='skip the builds')
    ap.add_argument('--nvcc-timeout', type=int, default=600)
    ap.add_argument('--archs', default='sm_90,sm_80', help='architectures each rewrite builds for')
    ap.add_argument('--bundle', help='write the GPU harness input here')
    ap.add_argument('--keep', action='store_true', help='keep the work files of passing batches')
    ap.add_argument('--with-label', help='only kernels whose labels hold this one (gen.py --with-label)')
    ap.add_argument('--labels', help='only kernels of these names classes, comma-separated '
                    '(gen.py --labels: shadow-extent, shadow-index, shadow-param, shadow-step, '
                    'shadow-typedef, samename-ns)')
    ap.add_argument('--modes', default=','.join(MODES),
                    help='the modes to rewrite in, comma-separated, of %s (default: %s)' % (
                        ','.join(KNOWN_MODES), ','.join(MODES)))
    a = ap.parse_args()
    chosen = [m for m in a.modes.split(',') if m]
    if not chosen or any(m not in KNOWN_MODES for m in chosen):
        ap.error('--modes takes some of %s' % ','.join(KNOWN_MODES))
    MODES[:] = chosen
    a.out = os.path.abspath(a.out)
    a.tilepipe = os.path.abspath(a.tilepipe)
    if not os.access(a.tilepipe, os.X_OK):
        sys.exit('run_cpu.py: no tilepipe at %s' % a.tilepipe)
    a.nvcc = None if a.no_nvcc else find_nvcc(a.nvcc)
    if not a.no_nvcc and not a.nvcc:
        print('run_cpu.py: nvcc not found: nothing can be built (skipped, not passed)')
        return 77
    # The folder of the runtime header the rewrites include (tilepipe/runtime.cuh).
    rc, out, err, _ = run([a.tilepipe, '--print-runtime-dir'], a.timeout)
    if rc != 0:
        sys.exit('run_cpu.py: tilepipe --print-runtime-dir failed: %s' % (out + err).strip())
    a.runtime_dir = out.strip()
    archs = [x for x in a.archs.split(',') if x]
    seeds = parse_seeds(a.seeds)
    os.makedirs(a.out, exist_ok=True)
    ctx = Ctx(a)
    t_start = time.time()

    # Stage 1: generate and rewrite every batch (batches in parallel).
    manifests = {}
    reports = {}
    tool_times = []

    def stage1(seed):
        bdir = os.path.join(a.out, 'batches', 's%d' % seed)
        os.makedirs(bdir, exist_ok=True)
        t0 = time.time()
        subprocess.run([sys.executable, os.path.join(HERE, 'gen.py'), '--seed', str(seed),
                        '--kernels', str(a.kernels), '-o', os.path.join(bdir, 'orig.cu'),
                        '--manifest', os.path.join(bdir, 'manifest.tsv')] +
                       (['--labels', a.labels] if a.labels else []) +
                       (['--with-label', a.with_label] if a.with_label else []), check=True)
        gen_dt = time.time() - t0
        man = [l.split('\t') for l in read(os.path.join(bdir, 'manifest.tsv')).splitlines() if l]
        kernels = [m[0] for m in man]
        reps = {}
        dts = []
        for mode in MODES:
            loops, dt = tool_step(ctx, seed, bdir, mode, kernels)
            reps[mode] = loops
            dts.append(dt)
        return seed, man, reps, gen_dt, dts

    with cf.ThreadPoolExecutor(max(1, a.jobs)) as ex:
        for seed, man, reps, gen_dt, dts in ex.map(stage1, seeds):
            manifests[seed] = man
            reports[seed] = reps
            tool_times.append((gen_dt, dts))
    t_tool = time.time() - t_start

    # Which variants differ from the original (and from each other).
    variants = {}   # seed -> {mode: file stem that holds its output, or None when unchanged}
    for seed in seeds:
        bdir = os.path.join(a.out, 'batches', 's%d' % seed)
        orig = read(os.path.join(bdir, 'orig.cu'))
        v = {}
        seen = {}
        for mode in MODES:
            p = os.path.join(bdir, mode + '.cu')
            if reports[seed].get(mode) is None or not os.path.exists(p):
                v[mode] = None
                continue
            text = read(p)
            if text == orig:
                v[mode] = None
            elif text in seen:
                v[mode] = seen[text]
            else:
                v[mode] = mode
                seen[text] = mode
        variants[seed] = v

    # Stage 2: builds (every distinct file x arch in parallel; the original for sm_90 only).
    builds = {}
    nvcc_times = defaultdict(list)
    if a.nvcc:
        jobs = []
        for seed in seeds:
            jobs.append((seed, 'orig', 'sm_90'))
            for mode, stem in variants[seed].items():
                if stem == mode:
                    for arch in archs:
                        jobs.append((seed, mode, arch))

        def stage2(job):
            seed, variant, arch = job
            bdir = os.path.join(a.out, 'batches', 's%d' % seed)
            return job, nvcc_step(ctx, seed, bdir, variant, arch)

        with cf.ThreadPoolExecutor(max(1, a.jobs)) as ex:
            for job, res in ex.map(stage2, jobs):
                builds[job] = res
                nvcc_times[(job[1] == 'orig', job[2])].append(res['dt'])
        for (seed, variant, arch), res in sorted(builds.items()):
            if res['ok'] and variant == 'orig':
                # An original that cannot launch is the generator's fault, as one that does not build.
                bad = launch_faults(manifests[seed], res['usage'])
                if bad:
                    ctx.fail('generator-launch', seed, 'orig', '\n'.join(
                        '%s: %d registers a thread x %d threads a block > 65536 registers: '
                        'too many resources requested for launch' % b for b in bad),
                        [b[0] for b in bad])
            if res['ok']:
                continue
            bdir = os.path.join(a.out, 'batches', 's%d' % seed)
            if variant == 'orig':
                ctx.fail('generator-nvcc', seed, 'orig', res['err'], res['kernels'])
                continue
            conf = narrow_nvcc(ctx, seed, bdir, variant, arch, res['kernels'])
            ctx.fail('nvcc-%s' % arch, seed, variant,
                     res['err'] + '\nstandalone, still failing: %s' % (' '.join(conf) or '-'),
                     res['kernels'], repro=os.path.join(a.out, 'failures'))
    t_all = time.time() - t_start

    summary = summarize(a, seeds, manifests, reports, variants, builds, archs)
    summary['timing'] = dict(
        wall_s=round(t_all, 1), tool_stage_s=round(t_tool, 1), jobs=a.jobs,
        gen_s_per_batch=round(sum(g for g, _ in tool_times) / max(len(tool_times), 1), 2),
        tool_s_per_run=round(sum(sum(d) for _, d in tool_times) /
                             max(sum(len(d) for _, d in tool_times), 1), 2),
        nvcc_s={('orig ' if k[0] else 'rewrite ') + k[1]:
                round(sum(v) / len(v), 1) for k, v in nvcc_times.items()})
    summary['failures'] = ctx.failures
    write(os.path.join(a.out, 'summary.json'), json.dumps(summary, indent=1, sort_keys=True))
    text = render(summary, archs)
    write(os.path.join(a.out, 'summary.txt'), text)
    print(text)

    if a.bundle:
        make_bundle(a, seeds, manifests, reports, variants, builds, archs)
        print('GPU bundle: %s (copy it to the GPU machine; run: bash run_gpu.sh)' % a.bundle)
    if not a.keep:
        failed_seeds = {f['seed'] for f in ctx.failures}
        for seed in seeds:
            if seed not in failed_seeds:
                shutil.rmtree(os.path.join(a.out, 'batches', 's%d' % seed), ignore_errors=True)
    return 1 if ctx.failures else 0


def outcomes(loops, kernels):
    """kernel -> outcome in one mode: 'pipelined' if any loop was rewritten, else the reasons."""
    by = defaultdict(list)
    for l in loops or []:
        by[kernel_of_function(l.get('kernel'))].append(
            'pipelined' if l.get('transformed') else l.get('reason', '?'))
    res = {}
    for k in kernels:
        rs = by.get(k)
        if not rs:
            res[k] = 'no-candidate'
        elif 'pipelined' in rs:
            res[k] = 'pipelined'
        else:
            res[k] = rs[0]
    return res


SUSPECT = [
    ('alias-visible', 'stores through a pointer its copies read (expected store-aliases-load)'),
    ('noalias-annotated', 'marked assume-noalias=false, yet stores through another pointer that '
                          'aliases a source (expected a refusal)'),
    ('offvar-ptr', 'an address uses a variable the loop changes through a pointer'),
    ('offvar-lambda', 'an address uses a variable the loop changes in a lambda'),
    ('offvar-devfn', 'an address uses a variable the loop changes in a __device__ function'),
    ('store-arch', 'a store that an #if on __CUDA_ARCH__ selects (expected arch-dependent)'),
    ('shadow-extent', 'a tile in the body sized by a body constant that hides an outer one of '
                      'another value (expected name-binding)'),
    ('shadow-step', 'a while loop whose increment reads a body constant that hides a parameter '
                    '(expected induction-step or name-binding)'),
]

# The modes a suspect label concerns (others: all): the register-staged prefetch writes a tile
# declared in the body where it was, so a body constant that sizes it keeps its meaning.
SUSPECT_MODES = {'shadow-extent': ('auto', 'pipeline', 'tma', 'model')}

# Labels of the names classes (gen.py NAMES_CLASSES, their twins and sub-labels): the summary
# gives every loop of these kernels by outcome.
NAMES_PREFIXES = ('shadow-', 'samename-', 'route-', 'typedef-', 'outer-', 'names-')


def names_label(lab):
    return lab.startswith(NAMES_PREFIXES)


def loop_outcome(l):
    """One loop's outcome: its reason ID, or 'pipelined', '+tensor' where a tile is copied by
    tensor copy."""
    if not l.get('transformed'):
        return l.get('reason', '?')
    tiles = (l.get('plan') or {}).get('tiles') or []
    return 'pipelined+tensor' if any(t.get('copy_kind') == 'tensor' for t in tiles) else 'pipelined'


def suspect(labels, mode=None):
    return '; '.join(why for lab, why in SUSPECT if lab in labels and
                     (mode is None or mode in SUSPECT_MODES.get(lab, (mode,))))


def summarize(a, seeds, manifests, reports, variants, builds, archs):
    s = dict(seeds=seeds, kernels=0, by_label={}, by_reason={m: Counter() for m in MODES},
             loops={m: Counter() for m in MODES}, kernel_outcomes={m: Counter() for m in MODES})
    labels = defaultdict(lambda: dict(kernels=0, **{m: 0 for m in MODES}))
    for seed in seeds:
        man = manifests[seed]
        ks = [m[0] for m in man]
        s['kernels'] += len(ks)
        outs = {mode: outcomes(reports[seed].get(mode), ks) for mode in MODES}
        for mode in MODES:
            for l in reports[seed].get(mode) or []:
                s['loops'][mode]['rewritten' if l.get('transformed') else 'refused'] += 1
                s['by_reason'][mode][l.get('reason', 'pipelined')] += 1
            for k in ks:
                s['kernel_outcomes'][mode][outs[mode][k]] += 1
        for kid, lab, *_ in man:
            for l in lab.split(','):
                labels[l]['kernels'] += 1
                for mode in MODES:
                    if outs[mode][kid] == 'pipelined':
                        labels[l][mode] += 1
    s['by_label'] = dict(sorted(labels.items()))
    # Static suspects: rewritten kernels whose generated shape the tool's own rules should refuse.
    sus = []
    for seed in seeds:
        man = manifests[seed]
        ks = [m[0] for m in man]
        outs = {mode: outcomes(reports[seed].get(mode), ks) for mode in MODES}
        for kid, lab, *_ in man:
            modes = [m for m in MODES if outs[m][kid] == 'pipelined' and suspect(lab.split(','), m)]
            why = '; '.join(sorted({suspect(lab.split(','), m) for m in modes}))
            if why and modes:
                sus.append(dict(kernel=kid, modes=modes, why=why, labels=lab))
    # Shape classes of names: a kernel-local element type beside a namespace's must keep its tiles
    # off the copy engine (the launcher would name the namespace's type).
    for seed in seeds:
        for kid, lab, *_ in manifests[seed]:
            if 'shadow-typedef' not in lab.split(','):
                continue
            modes = [m for m in MODES for l in reports[seed].get(m) or []
                     if kernel_of_function(l.get('kernel')) == kid and
                     loop_outcome(l) == 'pipelined+tensor']
            if modes:
                sus.append(dict(kernel=kid, modes=sorted(set(modes)), labels=lab,
                                why='a kernel-local element type beside a namespace one of another '
                                    'type, yet copied by tensor copy'))
    s['suspects'] = sus
    # Every loop of the names classes' kernels, by outcome, per mode.
    names = defaultdict(lambda: {m: Counter() for m in MODES})
    for seed in seeds:
        for kid, lab, *_ in manifests[seed]:
            labs = [x for x in lab.split(',') if names_label(x)]
            if not labs:
                continue
            for mode in MODES:
                for l in reports[seed].get(mode) or []:
                    if kernel_of_function(l.get('kernel')) == kid:
                        for x in labs:
                            names[x][mode][loop_outcome(l)] += 1
    s['names_loops'] = {lab: {m: dict(c) for m, c in d.items()} for lab, d in sorted(names.items())}
    s['builds'] = {'%s s%d %s' % (v, seed, arch): r['ok'] for (seed, v, arch), r in builds.items()}
    for k in ('by_reason', 'loops', 'kernel_outcomes'):
        s[k] = {m: dict(c) for m, c in s[k].items()}
    return s


def render(s, archs):
    L = []
    L.append('tilepipe fuzz (CPU): %d batches, %d kernels' % (len(s['seeds']), s['kernels']))
    L.append('')
    L.append('loops per mode: rewritten / left alone, and by reason ID')
    reasons = sorted({r for m in MODES for r in s['by_reason'][m]})
    cols = ' '.join(['%10s'] * len(MODES))
    num = ' '.join(['%10d'] * len(MODES))
    L.append(('  %-28s ' + cols) % ('reason', *MODES))
    for r in reasons:
        L.append(('  %-28s ' + num) % (r, *(s['by_reason'][m].get(r, 0) for m in MODES)))
    L.append(('  %-28s ' + num) % ('(kernels with no candidate)', *(
        s['kernel_outcomes'][m].get('no-candidate', 0) for m in MODES)))
    L.append('')
    L.append('kernels by shape class (label): how many, and how many have a rewritten loop per mode')
    L.append(('  %-28s %8s ' + cols) % ('label', 'kernels', *MODES))
    for lab, d in s['by_label'].items():
        L.append(('  %-28s %8d ' + num) % (lab, d['kernels'], *(d[m] for m in MODES)))
    L.append('')
    if s.get('names_loops'):
        L.append('names classes: every loop of their kernels by outcome, per mode '
                 '(+tensor: a tile copied by tensor copy)')
        for lab, d in s['names_loops'].items():
            L.append('  %s' % lab)
            for m in MODES:
                L.append('    %-10s %s' % (m, ', '.join('%s %d' % kv for kv in sorted(d[m].items()))
                                           or '-'))
        L.append('')
    nb = len(s['builds'])
    ok = sum(1 for v in s['builds'].values() if v)
    L.append('builds: %d of %d passed (%s; the original for sm_90)' % (ok, nb, ', '.join(archs))
             if nb else 'builds: none (no nvcc)')
    t = s.get('timing', {})
    if t:
        L.append('time: %.0f s wall on %d jobs; tilepipe %.2f s a run; gen %.2f s a batch; nvcc %s' % (
            t['wall_s'], t['jobs'], t['tool_s_per_run'], t['gen_s_per_batch'],
            ', '.join('%s %.1f s' % kv for kv in sorted(t['nvcc_s'].items())) or '-'))
    L.append('')
    sus = s.get('suspects', [])
    if sus:
        L.append('suspects: %d rewritten kernels whose shape the tool\'s own rules should refuse; not '
                 'failures here (no GPU): the GPU harness tells whether the rewrite changed results' %
                 len(sus))
        for x in sus:
            L.append('  %s (%s): %s' % (x['kernel'], ','.join(x['modes']), x['why']))
        L.append('')
    fs = s.get('failures', [])
    if fs:
        L.append('FAILURES: %d' % len(fs))
        for f in fs:
            L.append('  FAILURE %s: batch s%s mode %s kernels %s' % (
                f['kind'], f['seed'], f['mode'], ' '.join(f['kernels']) or '?'))
            for line in f['detail'].splitlines()[:12]:
                L.append('      ' + line)
            if f.get('repro'):
                L.append('      standalone inputs under %s' % f['repro'])
    else:
        L.append('no failures')
    return '\n'.join(L) + '\n'


def make_bundle(a, seeds, manifests, reports, variants, builds, archs):
    b = os.path.abspath(a.bundle)
    os.makedirs(os.path.join(b, 'batches'), exist_ok=True)
    for f in ('run_gpu.sh', 'gpu_compare.py', 'README.md'):
        shutil.copy(os.path.join(HERE, f), os.path.join(b, f))
    # The runtime header the rewrites include; run_gpu.sh compiles with -I include.
    os.makedirs(os.path.join(b, 'include', 'tilepipe'), exist_ok=True)
    shutil.copy(os.path.join(a.runtime_dir, 'tilepipe', 'runtime.cuh'),
                os.path.join(b, 'include', 'tilepipe', 'runtime.cuh'))
    index = []
    for seed in seeds:
        src = os.path.join(a.out, 'batches', 's%d' % seed)
        dst = os.path.join(b, 'batches', 's%d' % seed)
        os.makedirs(dst, exist_ok=True)
        shutil.copy(os.path.join(src, 'orig.cu'), dst)
        shutil.copy(os.path.join(src, 'manifest.tsv'), dst)
        ks = [m[0] for m in manifests[seed]]
        lines = []
        for mode in MODES:
            stem = variants[seed][mode]
            outs = outcomes(reports[seed].get(mode), ks)
            built = stem is not None and all(
                builds.get((seed, stem, arch), {'ok': True})['ok'] for arch in archs)
            if stem is not None and built:
                if not os.path.exists(os.path.join(dst, stem + '.cu')):
                    shutil.copy(os.path.join(src, stem + '.cu'), dst)
                fname = stem + '.cu'
            else:
                fname = '-'
            for k in ks:
                lines.append('%s\t%s\t%s\t%s' % (k, mode, outs[k], fname))
        write(os.path.join(dst, 'outcomes.tsv'), '\n'.join(lines) + '\n')
        index.append('s%d' % seed)
    write(os.path.join(b, 'batches.txt'), '\n'.join(index) + '\n')


if __name__ == '__main__':
    sys.exit(main())
