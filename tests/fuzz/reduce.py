#!/usr/bin/env python3
"""Extracts one kernel of a fuzz batch, with its driver, into a standalone program.

    reduce.py BATCH.cu KERNEL_ID [-o out.cu]        from a batch file (original or rewritten)
    reduce.py --seed N KERNEL_ID [-o out.cu]        regenerated from its seed (s<N>k<i>)
    reduce.py --seed --labels L,... KERNEL_ID       regenerated from a batch made with gen.py --labels

The result keeps the batch's common part (and, for a rewritten batch, whatever tilepipe put at
the top of the file), the kernel's own section (macros, helpers, kernel, launcher, driver) and a
main() that runs only that kernel. It builds and runs like the batch:
`nvcc -O3 -std=c++17 -arch=sm_90 -fmad=false out.cu -o out && ./out` (for a rewritten batch with
tensor or bulk copies, add `-I$(tilepipe --print-runtime-dir)`) prints one line
`<kernel-id> <labels> <hash>`. Regenerated from the seed, it is the natural unit to add to
testdata/ as a regression case (add the `// EXPECT:` line the tool should give).
"""
import argparse
import os
import re
import subprocess
import sys

BEGIN = '// ==== BEGIN KERNEL '
END = '// ==== END KERNEL '
MAIN = '// ==== BEGIN MAIN'


def kernel_spans(text):
    """[(id, first line, last line)] of every kernel section, 1-based and inclusive."""
    spans = []
    cur = None
    for n, line in enumerate(text.split('\n'), 1):
        if line.startswith(BEGIN):
            cur = (line[len(BEGIN):].split()[0], n)
        elif line.startswith(END) and cur:
            spans.append((cur[0], cur[1], n))
            cur = None
    return spans


def kernel_at(spans, line):
    for kid, a, b in spans:
        if a <= line <= b:
            return kid
    return None


def section(text, kid):
    """The text of kernel kid's section, markers included."""
    m = re.search(r'^%s%s(?: .*)?$' % (re.escape(BEGIN), re.escape(kid)), text, re.M)
    if not m:
        return None
    e = text.find(END + kid, m.start())
    if e < 0:
        return None
    e = text.find('\n', e)
    return text[m.start():e + 1 if e >= 0 else len(text)]


def extract(text, kid):
    """A standalone program with only kernel kid of batch text."""
    first = text.find(BEGIN)
    main_at = text.find(MAIN)
    if first < 0 or main_at < 0:
        raise ValueError('not a fuzz batch (no kernel or main markers)')
    sec = section(text, kid)
    if sec is None:
        raise ValueError('no kernel %s in this batch' % kid)
    main = text[main_at:]
    # Keep only this kernel's entry in the table.
    lines = main.split('\n')
    out = []
    in_table = False
    for l in lines:
        if l.startswith('static const FzEntry fz_entries[] = {'):
            in_table = True
            out.append(l)
            continue
        if in_table:
            if l.startswith('};'):
                in_table = False
                out.append(l)
            elif '"%s"' % kid in l:
                out.append(l)
            continue
        out.append(l)
    return text[:first] + sec + '\n' + '\n'.join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('batch', nargs='?', help='a batch .cu file (original or rewritten)')
    ap.add_argument('kernel', help='kernel id, e.g. s12k37')
    ap.add_argument('--seed', action='store_true',
                    help='regenerate the kernel from the seed in its id instead of reading a batch')
    ap.add_argument('--labels', help='with --seed: the --labels the batch was generated with')
    ap.add_argument('-o', '--output', help='output file (default: stdout)')
    a = ap.parse_args()
    if a.seed or a.batch is None:
        m = re.fullmatch(r's(\d+)k(\d+)', a.kernel)
        if not m:
            sys.exit('reduce.py: kernel ids look like s<seed>k<index>')
        gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'gen.py')
        text = subprocess.run([sys.executable, gen, '--seed', m.group(1), '--only', m.group(2),
                               '-o', '/dev/stdout'] + (['--labels', a.labels] if a.labels else []),
                              check=True, capture_output=True, text=True).stdout
    else:
        with open(a.batch) as f:
            text = f.read()
    try:
        res = extract(text, a.kernel)
    except ValueError as e:
        sys.exit('reduce.py: %s' % e)
    if a.output:
        with open(a.output, 'w') as f:
            f.write(res)
    else:
        sys.stdout.write(res)


if __name__ == '__main__':
    main()
