#!/usr/bin/env python3
"""Random legal tiled CUDA kernels for differential testing of tilepipe.

    gen.py --seed N [--kernels K] [--only I,J,...] -o batch.cu [--manifest batch.tsv]

Writes one .cu file (a "batch") with K kernels, each with a host driver, and one main() that runs
them all (or the ids named on its command line) and prints `<kernel-id> <labels> <hash>` per
kernel. Kernel i of seed N is `s<N>k<i>`; it depends only on (N, i), so `--only i` reproduces it
alone. Every kernel is legal for the launches its driver makes: deterministic, race-free and in
bounds, so any difference between the original and a rewrite is the rewrite's.

The manifest has one line per kernel: id, labels, and a short description of the main case.
Python 3 standard library only.
"""
import argparse
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Element types: size in bytes, zero, fills for guarded copies, the scalar 'half'.
TYPES = {
    'float': dict(size=4, zero='0.0f', fills=['0.0f', '0.0f', '1.0f', '-0.0f', '0'], half='0.5f'),
    'double': dict(size=8, zero='0.0', fills=['0.0', '0.0', '2.0', '0'], half='0.5'),
    'int': dict(size=4, zero='0', fills=['0', '0', '-1', '7'], half=None),
    'float2': dict(size=8, zero='make_float2(0.0f, 0.0f)',
                   fills=['make_float2(0.0f, 0.0f)', 'float2{}', 'float2{}', 'float2{}',
                          'make_float2(1.0f, -1.0f)'],
                   half='0.5f'),
    'float4': dict(size=16, zero='make_float4(0.0f, 0.0f, 0.0f, 0.0f)',
                   fills=['make_float4(0.0f, 0.0f, 0.0f, 0.0f)', 'float4{}', 'float4{}', 'float4{}',
                          'make_float4(1.0f, 2.0f, 3.0f, 4.0f)'],
                   half='0.5f'),
}

MIB = 1 << 20
SRC_BYTES = 16 * MIB      # aim for a read-only source
ALIAS_BYTES = 64 * MIB    # at most, for a kernel with a source every block writes its own region of


def pick(r, weights):
    """Weighted choice from {value: weight}."""
    items = list(weights.items())
    total = sum(w for _, w in items)
    x = r.random() * total
    for v, w in items:
        x -= w
        if x < 0:
            return v
    return items[-1][0]


class Src:
    """A global source buffer: one kernel parameter."""

    def __init__(self, name, T):
        self.name, self.T = name, T
        self.tiles = []
        self.alias = None        # None, 'next', 'cur': the compute phase writes this buffer
        self.hidden = None       # None, 'param', 'global': written through another name
        self.base_form = 'mod'   # 'mod': (blockIdx.x % nr) * rs; 'lin': blockIdx.x * rs; 'lit'
        self.mis = 0             # elements the pointer is off its allocation
        self.guard_n = None      # name of the bound parameter when guarded


class Tile:
    pass


class Kernel:
    def __init__(self, seed, idx):
        self.seed, self.idx = seed, idx
        self.r = random.Random('tilepipe-fuzz:%d:%d' % (seed, idx))
        self.id = 's%dk%d' % (seed, idx)
        self.fn = 'k_' + self.id
        self.P = self.id.upper() + '_'
        self.labels = set()
        self.params = []   # (C declaration, name)
        self.lines = []    # kernel body lines (indented by the emitter)
        self.host = []

    def L(self, *labels):
        for l in labels:
            self.labels.add(l)

    def kernel_head(self):
        """`__global__ void`, with `__launch_bounds__(<threads>)` for blocks of more than 256 threads.

        Without bounds ptxas may give a thread up to 255 registers: 256 threads always fit in the 64 K
        registers of a block (256 x 256), a block of 1024 only with 64 registers a thread at most. An
        original that uses more fails to launch ("too many resources requested for launch"), so it
        is told its block size (every launch of a kernel uses the one block shape). Kernels of 256
        threads or fewer are written as before (no draw is added: the others stay as they were).
        """
        if self.NT > 256:
            self.L('launch-bounds')
            return '__global__ void __launch_bounds__(%d)' % self.NT
        return '__global__ void'

    # ---------------------------------------------------------------- choices
    def choose(self):
        r = self.r
        self.T = pick(r, {'float': 40, 'double': 14, 'int': 16, 'float2': 15, 'float4': 15})
        self.ty = TYPES[self.T]
        self.L(self.T)
        self.dims = pick(r, {1: 45, 2: 40, 3: 15})
        if self.dims == 1:
            self.B = (pick(r, {32: 15, 64: 25, 128: 30, 256: 30}), 1, 1)
        elif self.dims == 2:
            self.B = pick(r, {(16, 16): 30, (32, 8): 20, (8, 32): 10, (32, 4): 15, (64, 2): 8,
                              (8, 8): 10, (32, 32): 4, (16, 8): 10}) + (1,)
        else:
            self.B = pick(r, {(8, 8, 4): 30, (32, 4, 2): 25, (16, 4, 4): 20, (4, 4, 16): 10,
                              (8, 4, 8): 15})
        self.NT = self.B[0] * self.B[1] * self.B[2]
        self.L('%dd' % self.dims)

        # Loop form and induction variables.
        self.form = pick(r, {'trailing': 70, 'rotated': 30})
        self.L(self.form)
        self.iv = pick(r, {'counter': 36, 'down': 6, 'multi': 14, 'while': 14, 'pointer': 5,
                           'pointer-init': 5, 'gridstride': 10, 'twoiv': 10})
        self.L('iv-' + self.iv)

        # Tiles.
        ntiles = pick(r, {1: 50, 2: 35, 3: 15})
        if ntiles > 1:
            self.L('multi-tile')
        self.srcs = []
        self.tiles = []
        budget = pick(r, {16384: 80, 24576: 12, 40000: 8})  # bytes of one stage of all tiles
        for i in range(ntiles):
            t = self.make_tile(i, budget)
            if t is None:
                break
            self.tiles.append(t)
            budget -= t.bytes
        if not self.tiles:
            t = self.make_tile(0, 1 << 30, force_small=True)
            self.tiles.append(t)

        # Sources: each tile its own, or two tiles of one source.
        for i, t in enumerate(self.tiles):
            if i > 0 and r.random() < 0.2:
                t.src = self.tiles[r.randrange(i)].src
                t.delta = r.choice([0, 1, 3, 17, 64])
                self.L('shared-source')
            else:
                t.src = Src('src%d' % len(self.srcs), self.T)
                t.delta = 0
                self.srcs.append(t.src)
            t.src.tiles.append(t)
        for s in self.srcs:
            s.base_form = pick(r, {'mod': 60, 'lin': 20, 'lit': 20})
            s.mis = pick(r, {0: 70, 1: 10, 2: 5, 3: 5, 4: 10})
            if s.mis:
                self.L('misaligned')

        # Offsets added to the first tile's index.
        self.offi = pick(r, {None: 80, 'param': 4, 'local': 4, 'ref': 2, 'ptr': 2,
                             'constexpr': 2, 'array': 2, 'minmax': 4})
        self.offv = None
        if self.iv in ('counter', 'while', 'twoiv') and r.random() < 0.1:
            self.offv = pick(r, {'ptr': 30, 'lambda': 25, 'devfn': 25, 'direct': 20})
        if self.offi:
            self.L('off-' + self.offi)
        if self.offv:
            self.L('offvar-' + self.offv)

        # Loop bound.
        if self.iv in ('counter', 'down', 'while', 'pointer', 'pointer-init', 'twoiv', 'multi'):
            self.bound = pick(r, {'param': 60, 'local': 14, 'ref': 4, 'mem-param': 3,
                                  'mem-array': 3, 'devfn': 4, 'constexpr': 4, 'macro': 8})
        else:
            self.bound = 'param'
        self.L('bound-' + self.bound)
        self.inc = 'plain'
        if self.iv in ('counter', 'while'):
            self.inc = pick(r, {'plain': 84, 'lambda': 8, 'devfn': 8})
            if self.inc != 'plain':
                self.L('inc-' + self.inc)

        # Guards.
        for t in self.tiles:
            t.guard = pick(r, {None: 62, 'ternary': 22, 'ifelse': 12, 'clamp': 4})
            if t.guard:
                t.fill = r.choice(self.ty['fills'])
                self.L('guard-' + t.guard)
        # Guards are per source: one bound parameter each, and every tile of a guarded source is
        # guarded (its buffer ends at the bound).
        for s in self.srcs:
            if any(t.guard for t in s.tiles):
                s.guard_n = 'n_' + s.name
                for t in s.tiles:
                    if not t.guard:
                        t.guard = 'ternary'
                        t.fill = self.ty['zero']
                        self.L('guard-ternary')
        for t in self.tiles:
            if t.guard == 'clamp' and self.iv in ('pointer', 'pointer-init'):
                t.guard = 'ternary'
                self.L('guard-ternary')

        # Early exit: whole warps of rows leave before the loop.
        self.exit_rows = 0
        if (self.dims >= 2 and self.B[1] >= 2 and r.random() < 0.12 and
                all(t.dims >= 2 and t.ys == 'exact' and not t.linear for t in self.tiles)):
            # Whole warps leave: rows of whole warps, or (3-D) every row a whole number of warps.
            bx_, by_, bz_ = self.B
            cands = [k for k in range(1, by_) if (k * bx_) % 32 == 0 and (bz_ == 1 or bx_ % 32 == 0)]
            if cands:
                self.exit_rows = r.choice(cands)
                self.L('early-exit')

        # Stores in the compute phase.
        self.store = None
        if r.random() < 0.4:
            self.store = pick(r, {'direct': 25, 'ptrcopy': 15, 'lambda': 15, 'devfn': 15, 'ref': 15,
                                  'devglobal': 15})
            self.L('store-' + self.store)
            # What it writes: a separate output, or a source (visible or through another name).
            cand = [s for s in self.srcs if not any(t.guard for t in s.tiles)]
            self.store_target = 'out'
            if cand and r.random() < 0.5:
                s = r.choice(cand)
                self.store_target = s
                s.alias = pick(r, {'next': 60, 'cur': 40})
                if self.iv in ('down', 'gridstride', 'multi'):
                    s.alias = 'cur'
                if self.store == 'devglobal':
                    s.hidden = 'global'
                elif r.random() < 0.3:
                    s.hidden = 'param'
                if self.iv == 'pointer-init':
                    self.iv = 'pointer'
                    self.labels.discard('iv-pointer-init')
                    self.L('iv-pointer')
                self.L('alias-' + s.alias)
                self.L('alias-hidden' if s.hidden else 'alias-visible')
                if s.hidden:
                    s.annotate = r.random() < 0.5
                    self.L('noalias-annotated' if s.annotate else 'noalias-assumed')
                s.base_form = 'lin'
        # A store only some architectures compile (tilepipe parses for sm_90; the rewrite runs from
        # sm_80): the tool must refuse every such loop (arch-dependent). Drawn from a generator of
        # its own, so that the kernels of every seed stay as they were without it.
        self.store_arch = None
        if self.store and random.Random(self.id + ':arch').random() < 0.12:
            self.store_arch = random.Random(self.id + ':arch-form').choice(
                ['defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800', '__CUDA_ARCH__ < 900'])
            self.L('store-arch')
        self.red = r.random() < 0.15
        if self.red:
            self.L('post-red')
        self.nested = r.random() < 0.06
        if self.nested:
            self.L('nested')
        self.devfn_loop = r.random() < 0.1
        self.template = not self.devfn_loop and r.random() < 0.08
        if self.template:
            self.L('template')
        self.stages = r.choice([2, 4, 5, 8]) if r.random() < 0.12 else 0
        if self.stages:
            self.L('stages-annotated')
        self.helper_index = r.random() < 0.08
        if self.helper_index:
            self.L('helper-index')
        self.peek = r.random() < 0.04 and any(t.dims == 1 for t in self.tiles)
        if self.peek:
            self.L('tile-to-devfn')
        self.shfl = self.T in ('float', 'double', 'int') and r.random() < 0.08
        if self.shfl:
            self.L('post-shfl')
        for t in self.tiles:
            t.bdim_step = (t.dims == 1 and not t.linear and t.xs == 'exact' and t.walk == 'x'
                           and r.random() < 0.25)
            if t.bdim_step:
                self.L('blockdim')
        if self.devfn_loop:
            self.L('devfn-loop')
        self.tile_in_body = r.random() < 0.12
        if self.tile_in_body:
            self.L('tile-in-body')
        self.barrier = pick(r, {'sync': 66, 'block': 10, 'cgsync': 8, 'ttb': 6, 'macro': 10})
        if self.barrier != 'sync':
            self.L('barrier-' + self.barrier)
        self.restrict = r.random() < 0.3 and not any(s.hidden for s in self.srcs)
        if self.restrict:
            self.L('restrict')
        self.macros = set()
        for m, p in (('size', 0.25), ('copy', 0.05), ('loop', 0.05), ('index', 0.08)):
            if r.random() < p:
                self.macros.add(m)
                self.L('macro-' + m)
        if 'loop' in self.macros and (self.iv != 'counter' or self.offv):
            self.macros.discard('loop')
            self.labels.discard('macro-loop')
        if 'loop' in self.macros and self.inc != 'plain':
            self.labels.discard('inc-' + self.inc)
            self.inc = 'plain'
        esz = self.ty['size']
        if self.red and sum(t.bytes for t in self.tiles) + self.NT * esz > 46000:
            self.red = False
            self.labels.discard('post-red')
        self.comments = set()
        for c, p in (('backslash', 0.12), ('block', 0.12), ('inline', 0.1)):
            if r.random() < p:
                self.comments.add(c)
                self.L('comment-' + c)

    def make_tile(self, i, budget, force_small=False):
        r = self.r
        T = Tile()
        T.i = i
        T.name = r.choice(['s', 'tile', 'sh', 'buf', 'As', 'Bs']) + str(i)
        bx, by, bz = self.B
        T.linear = self.dims >= 2 and r.random() < 0.1
        T.dims = 1 if T.linear else self.dims
        if T.linear:
            self.L('linear-copy')
        cx_span = self.NT if T.linear else bx
        T.cspan = cx_span
        esz = self.ty['size']
        for _ in range(12):
            xs = pick(r, {'exact': 45, 'multi': 15, 'halo': 15, 'smaller': 10, 'loop': 15})
            if force_small:
                xs = 'exact'
            m = H = 0
            if xs == 'exact':
                ex = cx_span
            elif xs == 'multi':
                m = r.choice([2, 2, 3, 4])
                ex = m * cx_span
            elif xs == 'halo':
                H = r.choice([1, 2, 3, cx_span // 4 or 1, cx_span // 2 or 1, cx_span])
                H = max(1, min(H, cx_span))
                ex = cx_span + H
            elif xs == 'smaller':
                ex = r.choice([cx_span // 2, cx_span - 1, cx_span // 4, 3])
                if ex < 1:
                    ex = 1
            else:
                ex = r.choice([cx_span + 5, 2 * cx_span, 2 * cx_span + 3, cx_span * 3 // 2 + 1,
                               cx_span - 3 if cx_span > 8 else cx_span + 1])
            ys, ey = 'exact', 1
            if T.dims >= 2:
                ys = pick(r, {'exact': 70, 'loop': 20, 'smaller': 10})
                if ys == 'exact':
                    ey = by
                elif ys == 'loop':
                    ey = r.choice([2 * by, by + 3, by * 3 // 2 + 1])
                else:
                    ey = max(1, by // 2)
            ez = bz if T.dims == 3 else 1
            nbytes = ex * ey * ez * esz
            if force_small or nbytes <= budget:
                break
        else:
            return None
        T.xs, T.m, T.H, T.ex, T.ys, T.ey, T.ez = xs, m, H, ex, ys, ey, ez
        T.bytes = ex * ey * ez * esz
        self.L('x-' + xs)
        if T.dims >= 2 and ys != 'exact':
            self.L('y-' + ys)
        # Row and plane pitches: at least a row (a plane); odd, multiples of 4, padded.
        T.ld = ex if T.dims >= 2 else 1
        if T.dims >= 2:
            T.ld = pick(r, {ex: 20, ex + 1: 10, ex + 3: 10, (ex + 3) // 4 * 4 + 4: 15,
                            ex * 2 + 1: 10, ex + 32: 10, (ex | 1) + 2: 10, 'wide': 15})
            T.ld_param = r.random() < 0.6
        else:
            T.ld_param = False
        T.pl = 0
        if T.dims == 3:
            T.pl = pick(r, {'tight': 50, 'pad': 50})
        # The walk: along rows (x), down the rows (y) or through planes (z).
        T.walk = 'x'
        if T.dims >= 2 and r.random() < 0.35:
            T.walk = 'y'
        if T.dims == 3 and r.random() < 0.3:
            T.walk = 'z'
        if T.xs == 'halo' and T.walk == 'x' and r.random() < 0.6:
            T.gap = -T.H            # overlapping tiles, a stencil
            self.L('overlap')
        else:
            T.gap = pick(r, {0: 80, 1: 10, 4: 10})
        self.L('walk-' + T.walk)
        return T

    # ---------------------------------------------------------------- sizes
    def finish_geometry(self):
        """Fixes pitches (which for 'wide' rows depend on the tile count) once per kernel."""
        r = self.r
        for t in self.tiles:
            if t.ld == 'wide':
                t.ld = t.ex * r.choice([8, 16, 33]) + r.choice([0, 1, 4])
                if t.src.alias:   # every block owns its region: keep it small
                    t.ld = t.ex + 1
            if t.dims == 3:
                base = (t.ey - 1) * t.ld + t.ex
                t.pl = base if t.pl == 'tight' else base + r.choice([1, 4, 7, 32])
            if t.walk == 'x':
                t.step = t.ex + t.gap
            elif t.walk == 'y':
                t.step = (t.ey + max(t.gap, 0)) * t.ld
            else:
                t.step = t.ez * t.pl
            t.step = max(t.step, 1)

    def span(self, t, ntl):
        """1 + the largest index a block reads of tile t over ntl tiles (its own region)."""
        extra = 1 if t.src.alias == 'next' else 0
        local = (t.ez - 1) * t.pl + (t.ey - 1) * t.ld + (t.ex - 1) + t.delta + self.offmax()
        return local + max(ntl - 1 + extra, 0) * t.step + 1

    def offmax(self):
        return getattr(self, 'offval', 0)

    # ---------------------------------------------------------------- text helpers
    def sz(self, v, what):
        """A tile extent: a literal, the kernel's macro or its template parameter."""
        if what in self.size_macros:
            return self.size_macros[what]
        return str(v)

    def bar(self):
        b = self.barrier
        if b == 'sync':
            return '__syncthreads();'
        if b == 'block':
            return 'block.sync();'
        if b == 'cgsync':
            return 'cg::sync(block);'
        if b == 'ttb':
            return 'cg::this_thread_block().sync();'
        return self.P + 'SYNC();'

    def cx(self, t):
        return 'tid' if t.linear else 'tx'

    def tile_ref(self, t, z, y, x):
        if t.dims == 1:
            return '%s[%s]' % (t.name, x)
        if t.dims == 2:
            return '%s[%s][%s]' % (t.name, y, x)
        return '%s[%s][%s][%s]' % (t.name, z, y, x)

    def local_index(self, t, z, y, x):
        """The element (z, y, x) of the tile relative to the tile's first element."""
        parts = []
        if t.dims == 3:
            parts.append('%s * %s' % (z, self.pitch(t, 'pl')))
        if t.dims >= 2:
            if 'index' in self.macros:
                parts.append('%sIDX%d(%s, %s)' % (self.P, t.i, y, x))
                return ' + '.join(parts)
            if self.helper_index:
                parts.append('fz_mul(%s, %s)' % (y, self.pitch(t, 'ld')))
            else:
                parts.append('%s * %s' % (y, self.pitch(t, 'ld')))
        parts.append(x)
        return ' + '.join(parts)

    def pitch(self, t, which):
        if which == 'ld':
            return 'ld%d' % t.i if t.ld_param else str(t.ld)
        return str(t.pl)

    def step_expr(self, t):
        if t.walk == 'y' and t.ld_param:
            return '%d * ld%d' % (t.ey + max(t.gap, 0), t.i)
        if t.walk == 'x' and t.gap == 0 and ('ex', t.i) in self.size_macros:
            return self.size_macros[('ex', t.i)]
        if t.walk == 'x' and t.gap == 0 and t.bdim_step:
            return 'blockDim.x'
        return str(t.step)

    def gaddr(self, t, local, next_tile=False):
        """The global index of tile-local element `local` of tile t in this iteration."""
        s = t.src
        delta = (' + %d' % t.delta) if t.delta else ''
        off = ''
        if t.i == 0 and self.offi:
            off = ' + ' + self.offi_expr
        nxt = (' + %s' % self.step_expr(t)) if next_tile else ''
        iv = self.iv
        if t.i == 0 and self.offv:
            return '%s + offv%s%s + %s%s' % (self.base_name(s), delta, off, local, nxt)
        if iv in ('counter', 'while', 'down'):
            return '%s + %s * %s%s%s + %s%s' % (self.base_name(s), self.tvar, self.step_expr(t),
                                                delta, off, local, nxt)
        if iv == 'twoiv':
            if t.i == 0:
                return 'o0%s%s + %s%s' % (delta, off, local, nxt)
            return '%s + t * %s%s%s + %s%s' % (self.base_name(s), self.step_expr(t), delta, off,
                                               local, nxt)
        if iv == 'multi':
            return 'o%d%s%s + %s%s' % (t.i, delta, off, local, nxt)
        if iv == 'gridstride':
            return 'tile * %s%s%s + %s' % (self.rs_name(s), delta, off, local)
        if iv in ('pointer', 'pointer-init'):
            # Relative to the source parameter: where the moving pointer points now.
            return '(int)(p%d - %s)%s%s + %s%s' % (t.i, s.name, delta, off, local, nxt)
        raise AssertionError(iv)

    def base_name(self, s):
        return 'base_' + s.name

    def rs_name(self, s):
        return 'rs_' + s.name

    # ---------------------------------------------------------------- emission
    def emit(self):
        self.choose()
        self.finish_geometry()
        self.plan_cases()
        P = self.P
        T = self.T
        out = []
        out.append('// ==== BEGIN KERNEL %s @LABELS@' % self.id)
        # Macros (and the template parameter that sizes the first tile).
        self.size_macros = {}
        if 'size' in self.macros:
            for t in self.tiles:
                nm = '%sTS%d' % (P, t.i)
                out.append('#define %s %d' % (nm, t.ex))
                self.size_macros[('ex', t.i)] = nm
        if self.template:
            self.size_macros[('ex', 0)] = 'EX0'
        if self.barrier == 'macro':
            out.append('#define %sSYNC() __syncthreads()' % P)
        if 'copy' in self.macros:
            out.append('#define %sCOPY(dst, src, i) dst = src[i]' % P)
        if 'loop' in self.macros:
            out.append('#define %sFOR(t, n) for (int t = 0; t < (n); ++t)' % P)
        if 'index' in self.macros:
            for t in self.tiles:
                if t.dims >= 2:
                    out.append('#define %sIDX%d(y, x) ((y) * (%s) + (x))' % (P, t.i, self.pitch(t, 'ld')))
        if self.bound == 'macro':
            out.append('#define %sTILES(n) (n)' % P)
        # Device-side helpers of this kernel.
        if self.store == 'devfn':
            out.append('__device__ void put_%s(%s* p, int i, %s v) { p[i] = v; }' % (self.id, T, T))
        if self.store == 'devglobal':
            out.append('__device__ %s* g_%s;' % (T, self.id))
        if self.peek:
            out.append('__device__ %s peek_%s(const %s* p, int i) { return p[i]; }' % (T, self.id, T))
        # Kernel text.
        body = self.kernel_body()
        params = ', '.join(d for d, _ in self.params)
        if self.devfn_loop:
            out.append('__device__ void body_%s(%s) {' % (self.id, params))
            out.extend('  ' + l if l else '' for l in body)
            out.append('}')
            out.append('%s %s(%s) {' % (self.kernel_head(), self.fn, params))
            out.append('  body_%s(%s);' % (self.id, ', '.join(n for _, n in self.params)))
            out.append('}')
        else:
            if self.template:
                out.append('template <int EX0>')
            out.append('%s %s(%s) {' % (self.kernel_head(), self.fn, params))
            out.extend('  ' + l if l else '' for l in body)
            out.append('}')
        out.extend(self.host_text())
        out.append('// ==== END KERNEL %s' % self.id)
        out[0] = out[0].replace('@LABELS@', ','.join(sorted(self.labels)))
        return '\n'.join(out) + '\n'

    def kernel_body(self):
        r = self.r
        T, ty = self.T, self.ty
        bx, by, bz = self.B
        B = []
        params = []
        c_out = '%s* %sout' % (T, '__restrict__ ' if self.restrict else '')
        params.append((c_out, 'out'))
        if self.store and self.store_target == 'out':
            params.append(('%s* %sout2' % (T, '__restrict__ ' if self.restrict else ''), 'out2'))
        if self.red:
            params.append(('%s* outr' % T, 'outr'))
        if self.shfl:
            params.append(('%s* outw' % T, 'outw'))
        for s in self.srcs:
            const = '' if s.alias else 'const '
            rq = '__restrict__ ' if self.restrict else ''
            params.append(('%s%s* %s%s' % (const, T, rq, s.name), s.name))
            if s.hidden == 'param':
                params.append(('%s* %s_w' % (T, s.name), s.name + '_w'))
        for t in self.tiles:
            if t.ld_param:
                params.append(('int ld%d' % t.i, 'ld%d' % t.i))
        for s in self.srcs:
            if self.iv == 'gridstride':
                params.append(('int %s' % self.rs_name(s), self.rs_name(s)))
            elif s.base_form in ('mod', 'lin'):
                if s.base_form == 'mod':
                    params.append(('int nr_%s' % s.name, 'nr_' + s.name))
                params.append(('int %s' % self.rs_name(s), self.rs_name(s)))
            if s.guard_n:
                params.append(('int %s' % s.guard_n, s.guard_n))
        if self.bound == 'mem-param':
            params.append(('const int* ntp', 'ntp'))
        else:
            params.append(('int numTiles', 'numTiles'))
        if self.offi == 'param':
            params.append(('int off', 'off'))
        if self.exit_rows:
            params.append(('int rows_out', 'rows_out'))
        stencil_w = any(t.xs == 'halo' for t in self.tiles) and T != 'int' and r.random() < 0.5
        if stencil_w:
            params.append(('const %s* w' % T, 'w'))
        self.stencil_w = stencil_w
        self.params = params

        # Thread coordinates.
        B.append('const int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;')
        B.append('const int tid = (tz * %d + ty) * %d + tx;' % (by, bx))
        if self.barrier in ('block', 'cgsync'):
            B.append('cg::thread_block block = cg::this_thread_block();')
        # Tile declarations.
        decls = []
        for t in self.tiles:
            ex = self.sz(t.ex, ('ex', t.i))
            if t.dims == 1:
                decls.append('__shared__ %s %s[%s];' % (T, t.name, ex))
            elif t.dims == 2:
                decls.append('__shared__ %s %s[%d][%s];' % (T, t.name, t.ey, ex))
            else:
                decls.append('__shared__ %s %s[%d][%d][%s];' % (T, t.name, t.ez, t.ey, ex))
        if not self.tile_in_body:
            B.extend(decls)
        if self.red:
            B.append('__shared__ %s red[%d];' % (T, self.NT))
        # Early exit.
        if self.exit_rows:
            B.append('if (threadIdx.y < rows_out) return;')
        if self.red:
            B.append('red[tid] = %s;' % ty['zero'])
            B.append(self.bar())
        # Block bases.
        for s in self.srcs:
            if self.iv == 'gridstride':
                continue
            if s.base_form == 'mod':
                B.append('const int %s = (blockIdx.x %% nr_%s) * %s;' % (self.base_name(s), s.name,
                                                                         self.rs_name(s)))
            elif s.base_form == 'lin':
                B.append('const int %s = blockIdx.x * %s;' % (self.base_name(s), self.rs_name(s)))
            else:
                B.append('const int %s = (blockIdx.x %% %d) * %d;' % (self.base_name(s), s.lit_nr,
                                                                      s.lit_rs))
        # Invariant offset.
        self.offi_expr = None
        if self.offi:
            o = self.offi
            if o == 'param':
                self.offi_expr = 'off'
            elif o == 'local':
                B.append('const int lo = %d;' % self.offval)
                self.offi_expr = 'lo'
            elif o == 'ref':
                B.append('int lo = %d;' % self.offval)
                B.append('int& lor = lo;')
                self.offi_expr = 'lor'
            elif o == 'ptr':
                B.append('int lo = %d;' % self.offval)
                B.append('const int* pc = &lo;')
                self.offi_expr = '*pc'
            elif o == 'constexpr':
                B.append('int lo = %d;' % self.offval)
                self.offi_expr = 'fz_deref(&lo)'
            elif o == 'array':
                B.append('int offs[3] = {%d, %d, %d};' % (self.offval, self.offval + 1, 0))
                B.append('int ko = 0;')
                self.offi_expr = 'offs[ko]'
            elif o == 'minmax':
                B.append('const int lo = %d;' % self.offval)
                self.offi_expr = r.choice(['min(lo, %d)' % self.offval, 'max(lo, 0)'])
        acc_t = T
        B.append('%s acc = %s;' % (acc_t, ty['zero']))
        # Store setup.
        self.setup_store(B)
        # Loop bound.
        bound = self.bound_expr(B)
        if self.nested:
            B.append('for (int rep = 0; rep < 2; ++rep) {')
            inner = []
        else:
            inner = B
        self.loop(inner, bound, decls)
        if self.nested:
            B.extend('  ' + l for l in inner)
            B.append('}')
        # After the loop.
        if self.red:
            if self.form == 'rotated' or self.r.random() < 0.5:
                B.append(self.bar())
            first = self.exit_rows * bx
            B.append('if (tid == %d) {' % first)
            B.append('  %s sum = %s;' % (T, ty['zero']))
            if self.exit_rows and bz > 1:
                # Only the slots of the threads that stayed (rows >= rows_out of every plane).
                B.append('  for (int i = 0; i < %d; ++i)' % self.NT)
                B.append('    if ((i / %d) %% %d >= %d) sum += red[i];' % (bx, by, self.exit_rows))
            else:
                B.append('  for (int i = %d; i < %d; ++i) sum += red[i];' % (first, self.NT))
            B.append('  outr[blockIdx.x] = sum;')
            B.append('}')
        if self.shfl:
            # A warp reduction after the loop (whole warps only ever leave early).
            B.append('for (int o = 16; o > 0; o >>= 1)')
            B.append('  acc += __shfl_down_sync(0xffffffffu, acc, o);')
            B.append('if ((tid & 31) == 0) outw[blockIdx.x * %d + (tid >> 5)] = acc;' % (self.NT // 32))
        B.append('out[blockIdx.x * %d + tid] = acc;' % self.NT)
        return B

    def setup_store(self, B):
        self.store_ptr = None
        if not self.store:
            return
        T = self.T
        tgt = self.store_target
        if tgt == 'out':
            name = 'out2'
        else:
            name = tgt.name + '_w' if tgt.hidden == 'param' else tgt.name
        st = self.store
        if st == 'devglobal':
            self.store_ptr = 'g_' + self.id
        elif st == 'ptrcopy':
            B.append('%s* wp;' % T)
            B.append('wp = %s;' % name)
            self.store_ptr = 'wp'
        else:
            self.store_ptr = name
        if st == 'lambda':
            B.append('auto put = [&](int i, %s v) { %s[i] = v; };' % (T, self.store_ptr))

    def store_stmt(self, idx, val):
        st = self.store
        if st == 'lambda':
            return ['put(%s, %s);' % (idx, val)]
        if st == 'devfn':
            return ['put_%s(%s, %s, %s);' % (self.id, self.store_ptr, idx, val)]
        if st == 'ref':
            return ['%s& rr = %s[%s];' % (self.T, self.store_ptr, idx), 'rr = %s;' % val]
        return ['%s[%s] = %s;' % (self.store_ptr, idx, val)]

    def bound_expr(self, B):
        b = self.bound
        n = 'numTiles'
        if b == 'param':
            return n
        if b == 'local':
            B.append('const int lim = numTiles;')
            return 'lim'
        if b == 'ref':
            B.append('int lim = numTiles;')
            B.append('int& lr = lim;')
            return 'lr'
        if b == 'mem-param':
            return '*ntp'
        if b == 'mem-array':
            B.append('int lims[2] = {numTiles, 0};')
            B.append('int kl = 0;')
            return 'lims[kl]'
        if b == 'devfn':
            return 'fz_lim(numTiles)'
        if b == 'constexpr':
            B.append('int lim = numTiles;')
            return 'fz_deref(&lim)'
        if b == 'macro':
            return '%sTILES(numTiles)' % self.P
        raise AssertionError(b)

    def loop(self, B, bound, decls):
        r = self.r
        T = self.T
        iv = self.iv
        self.tvar = 't'
        self.has_t = True
        tail = []
        if self.offv:
            B.append('int offv = 0;')
            if self.offv == 'ptr':
                B.append('int* po = &offv;')
            elif self.offv == 'lambda':
                B.append('auto bump = [&] { offv += %s; };' % self.step_expr(self.tiles[0]))
        if iv == 'counter':
            if 'loop' in self.macros:
                head = '%sFOR(t, %s) {' % (self.P, bound)
            elif self.inc == 'lambda':
                B.append('int t = 0;')
                B.append('auto next = [&] { ++t; };')
                head = 'for (; t < %s; next()) {' % bound
            elif self.inc == 'devfn':
                head = 'for (int t = 0; t < %s; fz_adv(t, 1)) {' % bound
            else:
                head = 'for (int t = 0; t < %s; %s) {' % (bound, r.choice(['++t', 't++', 't += 1', 't = t + 1']))
        elif iv == 'down':
            head = 'for (int t = %s - 1; t >= 0; --t) {' % bound
        elif iv == 'while':
            B.append('int t = 0;')
            head = 'while (t < %s) {' % bound
            if self.inc == 'lambda':
                B.append('auto next = [&] { ++t; };')
                tail.append('next();')
            elif self.inc == 'devfn':
                tail.append('fz_adv(t, 1);')
            else:
                tail.append(r.choice(['++t;', 't += 1;', 't++;']))
        elif iv == 'twoiv':
            t0 = self.tiles[0]
            head = 'for (int t = 0, o0 = %s; t < %s; ++t, o0 += %s) {' % (
                self.base_name(t0.src), bound, self.step_expr(t0))
        elif iv == 'multi':
            self.has_t = False
            inits = []
            incs = []
            for t in self.tiles:
                inits.append('o%d = %s' % (t.i, self.base_name(t.src)))
                incs.append('o%d += %s' % (t.i, self.step_expr(t)))
            t0 = self.tiles[0]
            B.append('const int end0 = %s + %s * %s;' % (self.base_name(t0.src), bound,
                                                         self.step_expr(t0)))
            head = 'for (int %s; o0 < end0; %s) {' % (', '.join(inits), ', '.join(incs))
            B.append('int cnt = 0;')
        elif iv == 'pointer':
            for t in self.tiles:
                const = '' if t.src.alias else 'const '
                B.append('%s%s* p%d = %s + %s;' % (const, T, t.i, t.src.name,
                                                   self.base_name(t.src)))
            incs = ', '.join('p%d += %s' % (t.i, self.step_expr(t)) for t in self.tiles)
            head = 'for (int t = 0; t < %s; ++t, %s) {' % (bound, incs)
        elif iv == 'pointer-init':
            self.has_t = False
            t0 = self.tiles[0]
            B.append('const %s* const end0 = %s + %s + %s * %s;' % (
                T, t0.src.name, self.base_name(t0.src), bound, self.step_expr(t0)))
            inits = ', '.join('%sp%d = %s + %s' % ('' if t.i == 0 else '*', t.i, t.src.name,
                                                    self.base_name(t.src)) for t in self.tiles)
            incs = ', '.join('p%d += %s' % (t.i, self.step_expr(t)) for t in self.tiles)
            head = 'for (const %s *%s; p0 != end0; %s) {' % (T, inits, incs)
            B.append('int cnt = 0;')
        elif iv == 'gridstride':
            self.tvar = 'tile'
            head = 'for (int tile = blockIdx.x; tile < numTiles; tile += gridDim.x) {'
        if 'backslash' in self.comments and r.random() < 0.5:
            B.append('// the tiled loop below walks the tiles one by one \\')
            B.append('   (this line continues the comment above: __syncthreads(); t = 0;)')
        if any(s.hidden and s.annotate for s in self.srcs):
            B.append('// tilepipe: assume-noalias=false')
        if self.stages:
            B.append('// tilepipe: stages=%d' % self.stages)
        B.append(head)
        body = []
        if self.form == 'rotated':
            body.append(self.bar())
        if self.tile_in_body:
            body.extend(decls)
        body.extend(self.copy_phase())
        if 'block' in self.comments:
            body.append('/* copy phase done; the compute phase reads the tiles:')
            body.append('   acc += s[0]; __syncthreads(); */')
        body.append(self.bar() if 'inline' not in self.comments else
                    self.bar()[:-1] + ' /* publish the tiles */;')
        body.extend(self.compute_phase())
        if self.form == 'trailing':
            body.append(self.bar())
        if 'backslash' in self.comments and r.random() < 0.7:
            pos = r.randrange(1, len(body))
            body[pos:pos] = ['// next statement \\', '   continued comment line']
        body.extend(tail)
        B.extend('  ' + l for l in body)
        B.append('}')

    # ---------------------------------------------------------------- copy phase
    def copy_phase(self):
        out = []
        for t in self.tiles:
            out.extend(self.copy_tile(t))
        return out

    def copy_tile(self, t):
        """Statements that copy tile t (each thread its elements)."""
        r = self.r
        cx = self.cx(t)
        span = t.cspan
        xs_list = []   # (x expression, condition or None)
        loop_x = None
        if t.xs == 'exact':
            xs_list = [(cx, None)]
        elif t.xs == 'multi':
            xs_list = [(cx if j == 0 else '%s + %d' % (cx, j * span), None) for j in range(t.m)]
        elif t.xs == 'halo':
            xs_list = [(cx, None), ('%d + %s' % (span, cx), '%s < %d' % (cx, t.H))]
        elif t.xs == 'smaller':
            xs_list = [(cx, '%s < %d' % (cx, t.ex))]
        else:
            loop_x = 'i'
            xs_list = [('i', None)]
        by = self.B[1]
        ys = 'ty'
        loop_y = None
        ycond = None
        if t.dims >= 2:
            if t.ys == 'loop':
                loop_y = 'r'
                ys = 'r'
            elif t.ys == 'smaller':
                ycond = 'ty < %d' % t.ey
        zs = 'tz'
        in_loop = bool(loop_x or loop_y)
        # Index variables: before the statements (and their conditions) at the top of the copy
        # phase, or, rarely, right beside the store inside a condition or an inner copy loop.
        use_var = r.random() < 0.25 or (t.guard in ('ternary', 'ifelse') and r.random() < 0.5)
        beside = use_var and (in_loop or r.random() < 0.15)
        if in_loop and not beside:
            use_var = False
        top, lines = [], []
        for k, (x, cond) in enumerate(xs_list):
            local = self.local_index(t, zs, ys, x)
            dst = self.tile_ref(t, zs, ys, x)
            pre, body = self.copy_stmt(t, dst, local, k, use_var)
            if beside or ycond:
                body = pre + body
            else:
                top.extend(pre)
            if cond:
                if len(body) == 1:
                    body = ['if (%s) %s' % (cond, body[0])]
                else:
                    body = ['if (%s) {' % cond] + ['  ' + l for l in body] + ['}']
            lines.extend(body)
        if beside and use_var and not in_loop and not any(c for _, c in xs_list):
            self.L('index-var')
        elif beside:
            self.L('index-var-nested')
        elif use_var:
            self.L('index-var')
        if loop_x:
            inc = span
            if not t.linear and r.random() < 0.3:
                inc = 'blockDim.x'
                self.L('blockdim')
            hdr = 'for (int i = %s; i < %d; i += %s)' % (cx, t.ex, inc)
            lines = self.wrap(hdr, lines)
        if loop_y:
            hdr = 'for (int r = ty; r < %d; r += %d)' % (t.ey, by)
            lines = self.wrap(hdr, lines)
        if ycond:
            lines = self.wrap('if (%s)' % ycond, lines)
        return top + lines

    def wrap(self, hdr, lines):
        if len(lines) == 1 and self.r.random() < 0.5:
            return [hdr, '  ' + lines[0]]
        return [hdr + ' {'] + ['  ' + l for l in lines] + ['}']

    def copy_stmt(self, t, dst, local, k, use_var):
        """One tile store: (index declarations, statements)."""
        r = self.r
        src = t.src.name
        g = self.gaddr(t, local)
        if self.iv in ('pointer', 'pointer-init'):
            g = '%s%s' % (local, (' + %d' % t.delta) if t.delta else '')
            if t.i == 0 and self.offi:
                g += ' + ' + self.offi_expr
            src = 'p%d' % t.i
        pre = []
        if use_var:
            v = 'g%d_%d' % (t.i, k)
            if r.random() < 0.2:
                pre.append('const unsigned %s = %s;' % (v, g))
                self.L('unsigned-index')
            else:
                pre.append('const int %s = %s;' % (v, g))
            g = v
        n = t.src.guard_n
        if t.guard == 'clamp':
            # Clamped index: every read stays below the bound.
            g = 'min(%s, %s - 1)' % (g, n)
            self.L('minmax')
        read = '%s[%s]' % (src, g)
        gi = g if use_var else '(%s)' % g
        if self.iv in ('pointer', 'pointer-init'):
            # The bound is on the index into the source, not into the moving pointer.
            gi = '(%s - %s) + %s' % (src, t.src.name, gi)
        if 'copy' in self.macros and not t.guard:
            body = ['%sCOPY(%s, %s, %s);' % (self.P, dst, src, g)]
        elif t.guard == 'ternary':
            body = ['%s = %s < %s ? %s : %s;' % (dst, gi, n, read, t.fill)]
        elif t.guard == 'ifelse':
            if r.random() < 0.5:
                body = ['if (%s < %s)' % (gi, n), '  %s = %s;' % (dst, read), 'else',
                        '  %s = %s;' % (dst, t.fill)]
            else:
                body = ['if (%s < %s) {' % (gi, n), '  %s = %s;' % (dst, read), '} else {',
                        '  %s = %s;' % (dst, t.fill), '}']
        else:
            body = ['%s = %s;' % (dst, read)]
        return pre, body

    # ---------------------------------------------------------------- compute phase
    def read(self, t, kvar=None, kind=None):
        """A read of tile t by this thread in the compute phase (always within the tile)."""
        r = self.r
        cx = self.cx(t)
        full_x = t.xs in ('exact', 'multi', 'halo', 'loop') and t.ex >= t.cspan
        kind = kind or r.choice(['own', 'shift', 'rev', 'mul', 't'] + (['k', 'k'] if kvar else []))
        if kind == 'own' and not full_x:
            kind = 'shift'
        if kind == 't' and not self.has_t:
            kind = 'shift'
        ex = t.ex
        if kind == 'own':
            x = cx
        elif kind == 'shift':
            x = '(%s + %d) %% %d' % (cx, r.randrange(1, ex + 1), ex)
        elif kind == 'rev':
            x = '%d - %s %% %d' % (ex - 1, cx, ex)
        elif kind == 'mul':
            x = '(%s * %d + %d) %% %d' % (cx, r.choice([3, 5, 7]), r.randrange(ex), ex)
        elif kind == 't':
            x = '(%s + %s) %% %d' % (cx, self.tvar, ex)
        else:
            x = '(%s + %s) %% %d' % (kvar, cx, ex)
        y = z = None
        if t.dims >= 2:
            ey = t.ey
            k0 = self.exit_rows
            if k0:
                y = '%d + (ty - %d + %d) %% %d' % (k0, k0, r.randrange(ey - k0), ey - k0)
            elif kind in ('own',) and t.ys in ('exact', 'loop'):
                y = 'ty'
            elif kvar and r.random() < 0.5:
                y = '(%s + ty) %% %d' % (kvar, ey)
            else:
                y = '(ty + %d) %% %d' % (r.randrange(ey), ey)
        if t.dims == 3:
            z = 'tz' if r.random() < 0.6 else '(tz + 1) %% %d' % t.ez
        return self.tile_ref(t, z, y, x)

    def compute_phase(self):
        r = self.r
        T, ty = self.T, self.ty
        isint = T == 'int'
        out = []
        tiles = self.tiles

        def rd(**kw):
            return self.read(r.choice(tiles), **kw)

        def m(e):
            return '(%s & 63)' % e if isint else e

        nstmt = r.choice([1, 2, 2, 3])
        for _ in range(nstmt):
            form = pick(r, {'kloop': 30, 'mix': 25, 'plain': 20, 'temp': 15, 'branch': 10,
                            'stencil': 25 if any(t.xs == 'halo' for t in tiles) else 0})
            if form == 'kloop':
                kl = r.choice([8, 16, max(t.ex for t in tiles)])
                kl = min(kl, 256)
                out.append('for (int k = 0; k < %d; ++k)' % kl)
                out.append('  acc += %s * %s;' % (m(rd(kvar='k')), m(rd(kvar='k'))))
                self.L('compute-kloop')
            elif form == 'mix':
                if isint:
                    out.append('acc = (acc ^ %s) + %s;' % (rd(), m(rd())))
                else:
                    out.append('acc = acc * %s + %s * %s;' % (ty['half'], rd(), rd()))
            elif form == 'plain':
                out.append('acc += %s;' % m(rd()))
            elif form == 'temp':
                out.append('const %s v%d = %s;' % (T, len(out), m(rd())))
                out.append('acc += v%d * %s;' % (len(out) - 1, m(rd())))
            elif form == 'branch':
                out.append('if ((tx + ty) % 2 == 0)')
                out.append('  acc += %s;' % m(rd()))
                out.append('else')
                out.append('  acc = acc - %s;' % m(rd()))
            elif form == 'stencil':
                t = r.choice([t for t in tiles if t.xs == 'halo'])
                cx = self.cx(t)
                y = 'ty' if t.dims >= 2 and t.ys != 'smaller' and not self.exit_rows else None
                if t.dims >= 2 and y is None:
                    k0 = self.exit_rows
                    y = '%d + (ty - %d) %% %d' % (k0, k0, t.ey - k0) if k0 else '(ty %% %d)' % t.ey
                z = 'tz' if t.dims == 3 else None
                ref = self.tile_ref(t, z, y, '%s + j' % cx)
                if self.stencil_w:
                    coef = 'w[j]'
                elif isint:
                    coef = '(j + 1)'
                else:
                    coef = None
                out.append('for (int j = 0; j <= %d; ++j)' % t.H)
                if coef:
                    out.append('  acc += %s * %s;' % (coef, m(ref)))
                else:
                    out.append('  acc += %s * %s;' % (ref, ty['half']))
                self.L('compute-stencil')
        if self.peek:
            t = r.choice([t for t in tiles if t.dims == 1])
            out.append('acc += %s;' % m('peek_%s(%s, (%s + %d) %% %d)' % (
                self.id, t.name, self.cx(t), r.randrange(t.ex), t.ex)))
        # Every tile is read (a copy nobody reads could be dropped by the compiler).
        text = '\n'.join(out)
        for t in tiles:
            if t.name + '[' not in text:
                out.append('acc += %s;' % m(self.read(t)))
        # Shared memory other than tiles, read after the loop.
        if self.red:
            out.append('red[tid] += %s;' % m(rd()))
        # Stores into global memory.
        if self.store:
            stmts = self.compute_store()
            if self.store_arch:
                stmts = ['#if ' + self.store_arch] + stmts + ['#endif']
            out.extend(stmts)
        if self.offv:
            t0 = self.tiles[0]
            if self.offv == 'ptr':
                tv = self.tvar
                out.append('*po = (%s + 1) * %s;' % (tv, self.step_expr(t0)))
            elif self.offv == 'lambda':
                out.append('bump();')
            elif self.offv == 'devfn':
                out.append('fz_adv(offv, %s);' % self.step_expr(t0))
            else:
                out.append('offv += %s;' % self.step_expr(t0))
        if not self.has_t:
            out.append('++cnt;')
        return out

    def compute_store(self):
        r = self.r
        tgt = self.store_target
        if tgt == 'out':
            c = self.tvar if self.has_t else 'cnt'
            idx = '(blockIdx.x * 2 + (%s & 1)) * %d + tid' % (c, self.NT)
            if self.iv == 'gridstride':
                idx = '(blockIdx.x * 2 + ((tile / gridDim.x) & 1)) * %d + tid' % self.NT
            val = 'acc' if r.random() < 0.5 else self.store_value()
            return self.store_stmt(idx, val)
        # A write into the source: the element this thread copies of this tile (cur) or of the
        # next tile (next), inside this block's own region.
        cand = [t for t in tgt.tiles]
        t = r.choice(cand)
        cx = self.cx(t)
        x = cx
        y = 'ty' if t.dims >= 2 else None
        z = 'tz' if t.dims == 3 else None
        local = self.local_index(t, z, y, x)
        g = self.gaddr(t, local, next_tile=(tgt.alias == 'next'))
        if self.iv in ('pointer', 'pointer-init') and self.store == 'direct':
            # The pointer walks the source: write through it.
            g = local + ((' + %d' % t.delta) if t.delta else '')
            if t.i == 0 and self.offi:
                g += ' + ' + self.offi_expr
            if tgt.alias == 'next':
                g += ' + %s' % self.step_expr(t)
            ptr_stmt = 'p%d[%s] = %s;' % (t.i, g, self.store_value())
            conds = self.own_conds(t)
            self.labels.add('store-through-iv-pointer')
            if conds:
                return ['if (%s)' % ' && '.join(conds), '  ' + ptr_stmt]
            return [ptr_stmt]
        stmts = self.store_stmt(g, self.store_value())
        conds = self.own_conds(t)
        if conds:
            return ['if (%s) {' % ' && '.join(conds)] + ['  ' + s for s in stmts] + ['}']
        return stmts

    def own_conds(self, t):
        conds = []
        cx = self.cx(t)
        if t.ex < t.cspan:
            conds.append('%s < %d' % (cx, t.ex))
        if t.dims >= 2 and t.ey < self.B[1]:
            conds.append('ty < %d' % t.ey)
        return conds

    def store_value(self):
        r = self.r
        if self.T == 'int':
            return '(%s ^ %s) & 63' % (self.read(r.choice(self.tiles)), self.read(r.choice(self.tiles)))
        return '%s + %s * %s' % (self.read(r.choice(self.tiles)), self.read(r.choice(self.tiles)),
                                 self.ty['half'])

    # ---------------------------------------------------------------- host
    def plan_cases(self):
        """Launch cases: a main case (thousands of blocks, 16-64 tiles), a mini case, and on some
        kernels trip counts 0..3."""
        r = self.r
        self.offval = r.randrange(0, 6) if self.offi else 0
        if self.offi == 'param':
            self.offval = r.randrange(0, 6)
        cases = []
        grid = r.choice([2048, 2048, 2560, 3000, 4096])
        ntl = r.choice([16, 17, 24, 32, 33, 48, 64])
        cases.append(dict(name='main', grid=grid, ntl=ntl, small=False))
        cases.append(dict(name='mini', grid=r.randrange(5, 40), ntl=r.randrange(4, 9), small=True))
        if r.random() < 0.4:
            for n in r.sample([0, 1, 2, 3], r.randrange(1, 5)):
                cases.append(dict(name='trip%d' % n, grid=r.randrange(3, 300), ntl=n, small=True))
            self.L('tripcounts')
        for s in self.srcs:
            if s.base_form == 'lit':
                s.lit_nr = r.choice([1, 3, 16, 37])
                s.lit_rs = max(self.region(s, c['ntl']) for c in cases)
        # Memory: read-only sources share regions between blocks where one each would be too big;
        # then shrink the main case until the buffers fit.
        esz = self.ty['size']
        for s in self.srcs:
            c = cases[0]
            if s.base_form == 'lin' and not s.alias:
                if c['grid'] * self.region(s, c['ntl']) * esz > SRC_BYTES:
                    s.base_form = 'mod'
            if s.base_form == 'lit' and min(s.lit_nr, c['grid']) * s.lit_rs * esz > SRC_BYTES:
                s.base_form = 'mod'
        for _ in range(20):
            if self.case_bytes(cases[0]) <= self.byte_limit():
                break
            c = cases[0]
            if c['ntl'] > 16:
                c['ntl'] = max(16, c['ntl'] // 2)
            elif c['grid'] > 512:
                c['grid'] = max(512, c['grid'] // 2)
            else:
                break
        self.cases = cases
        self.manifest_case = '%s grid=%d tiles=%d block=%dx%dx%d' % (
            cases[0]['name'], cases[0]['grid'], cases[0]['ntl'], *self.B)

    def byte_limit(self):
        return ALIAS_BYTES if any(s.alias for s in self.srcs) else 6 * SRC_BYTES

    def region(self, s, ntl):
        """Elements of one block's region of source s (all its tiles) for ntl tiles."""
        return max(self.span(t, ntl) for t in s.tiles)

    def src_layout(self, s, c):
        """(nr, rs, alloc elements, guard bound) of source s in case c."""
        r = self.r
        ntl, grid = c['ntl'], c['grid']
        esz = TYPES[self.T]['size']
        if self.iv == 'gridstride':
            # The loop walks tiles blockIdx.x, +gridDim.x, ... < numTiles (the total).
            one = max((t.ez - 1) * t.pl + (t.ey - 1) * t.ld + t.ex + t.delta + self.offmax()
                      for t in s.tiles)
            total = c['total']
            esz = self.ty['size']
            # Read-only: tiles may overlap (a stride under a tile) to keep the buffer small.
            rs = one if s.alias else max(1, min(one, SRC_BYTES // esz // max(total, 1)))
            alloc = max(total - 1, 0) * rs + one
            return None, rs, alloc
        reg = self.region(s, ntl)
        if s.base_form == 'lit':
            nr, rs = s.lit_nr, s.lit_rs
            return nr, rs, (min(nr, grid) - 1) * rs + reg
        if s.base_form == 'lin':
            rs = reg
            return grid, rs, (grid - 1) * rs + reg
        # 'mod': as many regions as fit the budget, disjoint or overlapping.
        rs = reg if c.setdefault('overlap_' + s.name, r.random() < 0.7) else max(1, reg // 3)
        cap = max(1, SRC_BYTES // max(1, rs * esz))
        nr = min(grid, c.setdefault('nr_' + s.name, r.choice([1, 7, 64, 256, 4096])), cap)
        nr = max(nr, 1)
        return nr, rs, (min(nr, grid) - 1) * rs + reg

    def case_bytes(self, c):
        total = 0
        esz = self.ty['size']
        if self.iv == 'gridstride':
            c['total'] = c['grid'] * c['ntl'] - (c['grid'] // 3 if c['ntl'] else 0)
        for s in self.srcs:
            lay = self.src_layout(s, c)
            total += lay[2] * esz
        total += c['grid'] * self.NT * esz * (3 if self.store else 1)
        return total

    def host_text(self):
        r = self.r
        T = self.T
        H = []
        H.append('static void run_%s(FzRun& run) {' % self.id)
        seed_base = self.r.randrange(1, 1 << 40)
        for ci, c in enumerate(self.cases):
            if self.iv == 'gridstride':
                c['total'] = c['grid'] * c['ntl'] - (c['grid'] // 3 if c['ntl'] else 0)
            if c['small']:
                H.append('  {  // case %s: %d blocks, %d tiles' % (c['name'], c['grid'], c['ntl']))
            else:
                H.append('  if (!fz_small) {  // case %s: %d blocks, %d tiles' % (
                    c['name'], c['grid'], c['ntl']))
            grid = c['grid']
            args = {}
            written = []
            for si, s in enumerate(self.srcs):
                nr, rs, alloc = self.src_layout(s, c)
                alloc_total = alloc + s.mis
                if s.guard_n:
                    # The bound cuts the source short: the last tiles are partly outside.
                    cut = r.choice([1, 7, max(1, alloc // 5), max(1, alloc // 2), s.tiles[0].ex + 3])
                    n = max(0, alloc - cut) if c['ntl'] else alloc
                    args[s.guard_n] = str(n - 0)
                    # The buffer ends at the bound: nothing past it may be read.
                    alloc_total = max(n, 0) + s.mis
                    # A clamp needs at least one element.
                    if any(t.guard == 'clamp' for t in s.tiles) and n < 1:
                        args[s.guard_n] = '1'
                        alloc_total = 1 + s.mis
                H.append('    %s* b_%s = fz_in<%s>(run, %d, %dULL);' % (T, s.name, T, alloc_total,
                                                                       seed_base + 16 * ci + si))
                args[s.name] = 'b_%s + %d' % (s.name, s.mis) if s.mis else 'b_%s' % s.name
                if s.hidden == 'param':
                    args[s.name + '_w'] = args[s.name]
                if self.iv == 'gridstride' or s.base_form in ('mod', 'lin'):
                    args[self.rs_name(s)] = str(rs)
                if s.base_form == 'mod' and self.iv != 'gridstride':
                    args['nr_' + s.name] = str(nr)
                if s.alias:
                    written.append(('b_%s' % s.name, alloc_total))
            for t in self.tiles:
                if t.ld_param:
                    args['ld%d' % t.i] = str(t.ld)
            nout = grid * self.NT
            H.append('    %s* b_out = fz_out<%s>(run, %d);' % (T, T, nout))
            args['out'] = 'b_out'
            outs = [('b_out', nout)]
            if self.store and self.store_target == 'out':
                n2 = grid * 2 * self.NT
                H.append('    %s* b_out2 = fz_out<%s>(run, %d);' % (T, T, n2))
                args['out2'] = 'b_out2'
                outs.append(('b_out2', n2))
            if self.red:
                H.append('    %s* b_outr = fz_out<%s>(run, %d);' % (T, T, grid))
                args['outr'] = 'b_outr'
                outs.append(('b_outr', grid))
            if self.shfl:
                nw = grid * (self.NT // 32)
                H.append('    %s* b_outw = fz_out<%s>(run, %d);' % (T, T, nw))
                args['outw'] = 'b_outw'
                outs.append(('b_outw', nw))
            if self.store == 'devglobal':
                tgt = self.store_target
                p = 'b_out2' if tgt == 'out' else args[tgt.name]
                H.append('    { %s* p = %s; FZ_CK(cudaMemcpyToSymbol(g_%s, &p, sizeof(p))); }' % (
                    T, p, self.id))
            ntl_arg = c['total'] if self.iv == 'gridstride' else c['ntl']
            if self.bound == 'mem-param':
                H.append('    int* b_nt = fz_int(run, %d);' % ntl_arg)
                args['ntp'] = 'b_nt'
            else:
                args['numTiles'] = str(ntl_arg)
            if self.offi == 'param':
                args['off'] = str(self.offval)
            if self.exit_rows:
                args['rows_out'] = str(self.exit_rows)
            if self.stencil_w:
                nw = max([1024] + [t.H + 1 for t in self.tiles if t.xs == 'halo'])
                H.append('    %s* b_w = fz_in<%s>(run, %d, %dULL);' % (T, T, nw, seed_base + 999))
                args['w'] = 'b_w'
            call = ', '.join(args[n] for _, n in self.params)
            fn = self.fn + ('<%d>' % self.tiles[0].ex if self.template else '')
            H.append('    %s<<<%d, dim3(%d, %d, %d)>>>(%s);' % (fn, grid, *self.B, call))
            H.append('    fz_launched();')
            for b, n in outs + written:
                H.append('    fz_hash(run, %s, %d);' % (b, n))
            H.append('    fz_free(run);')
            H.append('  }')
        H.append('}')
        return H


class MatmulKernel(Kernel):
    """The classic shared-memory matmul C = A * B on a 2-D grid: two tiles that walk along a row
    of A and down a column of B, optionally guarded for ragged M, N, K."""

    def emit(self):
        r = self.r
        P = self.P
        self.T = T = pick(r, {'float': 50, 'double': 15, 'int': 15, 'float2': 12, 'float4': 8})
        self.ty = ty = TYPES[T]
        TS = pick(r, {8: 20, 16: 50, 32: 30})
        if T == 'float4' and TS == 32:
            TS = 16
        self.B = (TS, TS, 1)
        self.NT = TS * TS
        self.L('matmul', '2d', 'grid2d', T, 'multi-tile', 'compute-kloop')
        form = pick(r, {'trailing': 75, 'rotated': 25})
        self.form = form
        self.L(form)
        iv = pick(r, {'k0': 40, 'ab': 30, 'counter': 20, 'while': 10})
        self.L('iv-mm-' + iv)
        guard = pick(r, {None: 55, 'ternary': 25, 'ifelse': 20})
        if guard:
            self.L('guard-' + guard)
        fill = r.choice(ty['fills']) if guard else None
        self.barrier = pick(r, {'sync': 75, 'block': 10, 'ttb': 5, 'macro': 10})
        if self.barrier != 'sync':
            self.L('barrier-' + self.barrier)
        amacro = r.random() < 0.3
        if amacro:
            self.L('macro-access')
        unroll = r.random() < 0.4
        r.random()   # a draw kept so that existing seeds give the same kernels
        pads = [r.choice([0, 0, 1, 3, 4, 16]) for _ in range(3)]
        if any(pads):
            self.L('padded')
        isint = T == 'int'

        def m(e):
            return '(%s & 63)' % e if isint else e

        out = ['// ==== BEGIN KERNEL %s @LABELS@' % self.id]
        if self.barrier == 'macro':
            out.append('#define %sSYNC() __syncthreads()' % P)
        out.append('#define %sT %d' % (P, TS))
        if amacro:
            out.append('#define %sAS(i, j) As[i][j]' % P)
            out.append('#define %sBS(i, j) Bs[i][j]' % P)
        ts = P + 'T'
        sig = '%s* C, const %s* A, const %s* B, int M, int N, int K, int lda, int ldb, int ldc' % (T, T, T)
        if iv == 'counter':
            sig += ', int numTiles'
        out.append('%s %s(%s) {' % (self.kernel_head(), self.fn, sig))
        b = []
        b.append('__shared__ %s As[%s][%s];' % (T, ts, ts))
        b.append('__shared__ %s Bs[%s][%s];' % (T, ts, ts))
        b.append('const int tx = threadIdx.x, ty = threadIdx.y;')
        b.append('const int row = blockIdx.y * %s + ty, col = blockIdx.x * %s + tx;' % (ts, ts))
        if self.barrier == 'block':
            b.append('cg::thread_block block = cg::this_thread_block();')
        b.append('%s acc = %s;' % (T, ty['zero']))

        def loads(acol, brow, aidx, bidx):
            res = []
            for (dst, idx, conds) in (('As[ty][tx]', aidx, 'row < M && %s < K' % acol),
                                      ('Bs[ty][tx]', bidx, '%s < K && col < N' % brow)):
                if guard == 'ternary':
                    res.append('%s = (%s) ? %s : %s;' % (dst, conds, idx, fill))
                elif guard == 'ifelse':
                    res += ['if (%s)' % conds, '  %s = %s;' % (dst, idx), 'else',
                            '  %s = %s;' % (dst, fill)]
                else:
                    res.append('%s = %s;' % (dst, idx))
            return res

        tail = []
        if iv == 'k0':
            head = 'for (int k0 = 0; k0 < K; k0 += %s) {' % ts
            cp = loads('k0 + tx', 'k0 + ty', 'A[row * lda + k0 + tx]', 'B[(k0 + ty) * ldb + col]')
        elif iv == 'ab':
            b.append('const int aBegin = lda * %s * blockIdx.y, aEnd = aBegin + K;' % ts)
            b.append('const int bBegin = %s * blockIdx.x, bStep = %s * ldb;' % (ts, ts))
            head = 'for (int a = aBegin, bb = bBegin; a < aEnd; a += %s, bb += bStep) {' % ts
            cp = loads('a - aBegin + tx', '(a - aBegin) + ty', 'A[a + lda * ty + tx]',
                       'B[bb + ldb * ty + tx]')
        elif iv == 'counter':
            head = 'for (int t = 0; t < numTiles; ++t) {'
            cp = loads('t * %s + tx' % ts, 't * %s + ty' % ts, 'A[row * lda + t * %s + tx]' % ts,
                       'B[(t * %s + ty) * ldb + col]' % ts)
        else:
            b.append('int k0 = 0;')
            head = 'while (k0 < K) {'
            cp = loads('k0 + tx', 'k0 + ty', 'A[row * lda + k0 + tx]', 'B[(k0 + ty) * ldb + col]')
            tail = ['k0 += %s;' % ts]
        b.append(head)
        body = []
        if form == 'rotated':
            body.append(self.bar())
        body += cp
        body.append(self.bar())
        if unroll:
            body.append('#pragma unroll')
        a_ = '%sAS(ty, k)' % P if amacro else 'As[ty][k]'
        b_ = '%sBS(k, tx)' % P if amacro else 'Bs[k][tx]'
        body.append('for (int k = 0; k < %s; ++k)' % ts)
        body.append('  acc += %s * %s;' % (m(a_), m(b_)))
        if form == 'trailing':
            body.append(self.bar())
        body += tail
        b += ['  ' + l for l in body]
        b.append('}')
        b.append('if (row < M && col < N) C[row * ldc + col] = acc;')
        out += ['  ' + l for l in b]
        out.append('}')
        # Host: a main case of thousands of blocks and 16-64 tiles, a mini case, trip counts.
        cases = []
        gx, gy = pick(r, {(64, 32): 30, (32, 64): 20, (128, 16): 15, (48, 48): 15, (96, 32): 20})
        if TS == 32:
            gx, gy = gx // 2, gy // 2   # 1024 threads a block: fewer blocks, as many threads
        ntl = r.choice([16, 24, 32, 48, 64])
        cases.append(('main', gx, gy, ntl, False))
        cases.append(('mini', r.randrange(1, 6), r.randrange(1, 6), r.randrange(4, 8), True))
        if r.random() < 0.4:
            self.L('tripcounts')
            for n in r.sample([0, 1, 2, 3], r.randrange(1, 5)):
                cases.append(('trip%d' % n, r.randrange(1, 9), r.randrange(1, 9), n, True))
        H = ['static void run_%s(FzRun& run) {' % self.id]
        seed_base = r.randrange(1, 1 << 40)
        for ci, (name, gx_, gy_, nt, small) in enumerate(cases):
            M, N, K = gy_ * TS, gx_ * TS, nt * TS
            if guard and nt:
                # Ragged edges: the last tiles and the last blocks are partly outside.
                M -= r.randrange(0, TS)
                N -= r.randrange(0, TS)
                K -= r.randrange(0, TS)
            M, N = max(M, 1), max(N, 1)
            lda, ldb, ldc = K + pads[0], N + pads[1], N + pads[2]
            nA = max((M - 1) * lda + K, 1) if guard else gy_ * TS * lda
            nB = max((K - 1) * ldb + N, 1) if guard else max(K, 1) * ldb
            if not guard:
                nA = max((gy_ * TS - 1) * lda + K, 1)
                nB = max((K - 1) * ldb + gx_ * TS, 1)
            nC = (M - 1) * ldc + N
            H.append('  %s{  // case %s: %dx%d blocks, %d tiles, M=%d N=%d K=%d' % (
                '' if small else 'if (!fz_small) ', name, gx_, gy_, nt, M, N, K))
            H.append('    %s* b_A = fz_in<%s>(run, %d, %dULL);' % (T, T, nA, seed_base + 4 * ci))
            H.append('    %s* b_B = fz_in<%s>(run, %d, %dULL);' % (T, T, nB, seed_base + 4 * ci + 1))
            H.append('    %s* b_C = fz_out<%s>(run, %d);' % (T, T, nC))
            args = 'b_C, b_A, b_B, %d, %d, %d, %d, %d, %d' % (M, N, K, lda, ldb, ldc)
            if iv == 'counter':
                args += ', %d' % nt
            H.append('    %s<<<dim3(%d, %d), dim3(%d, %d)>>>(%s);' % (self.fn, gx_, gy_, TS, TS, args))
            H.append('    fz_launched();')
            H.append('    fz_hash(run, b_C, %d);' % nC)
            H.append('    fz_free(run);')
            H.append('  }')
        H.append('}')
        out += H
        out.append('// ==== END KERNEL %s' % self.id)
        out[0] = out[0].replace('@LABELS@', ','.join(sorted(self.labels)))
        self.manifest_case = 'main grid=%dx%d tiles=%d block=%dx%dx1' % (gx, gy, ntl, TS, TS)
        return '\n'.join(out) + '\n'


def batch(seed, indices):
    with open(os.path.join(HERE, 'prelude.cu.in')) as f:
        prelude = f.read().replace('@SEED@', str(seed))
    parts = [prelude]
    entries = []
    manifest = []
    for i in indices:
        k = Kernel(seed, i)
        if k.r.random() < 0.12:
            k = MatmulKernel(seed, i)
            k.r.random()
        text = k.emit()
        parts.append(text)
        labels = ','.join(sorted(k.labels))
        entries.append('  {"%s", "%s", run_%s},' % (k.id, labels, k.id))
        manifest.append('%s\t%s\t%s' % (k.id, labels, k.manifest_case))
    main = MAIN.replace('@ENTRIES@', '\n'.join(entries))
    parts.append(main)
    return '\n'.join(parts), manifest


MAIN = r'''// ==== BEGIN MAIN
struct FzEntry {
  const char* id;
  const char* labels;
  void (*run)(FzRun&);
};
static const FzEntry fz_entries[] = {
@ENTRIES@
};

int main(int argc, char** argv) {
  const char* dump = nullptr;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
    else if (!strcmp(argv[i], "--small")) fz_small = true;
    else if (!strcmp(argv[i], "--list")) {
      for (const FzEntry& e : fz_entries) printf("%s %s\n", e.id, e.labels);
      return 0;
    } else only.push_back(argv[i]);
  }
  for (const std::string& id : only) {
    bool found = false;
    for (const FzEntry& e : fz_entries) found |= id == e.id;
    if (!found) { fprintf(stderr, "no kernel %s\n", id.c_str()); return 2; }
  }
  for (const FzEntry& e : fz_entries) {
    if (!only.empty()) {
      bool want = false;
      for (const std::string& id : only) want |= id == e.id;
      if (!want) continue;
    }
    FzRun run;
    if (dump) {
      std::string b = std::string(dump) + "/" + e.id;
      run.bin = fopen((b + ".bin").c_str(), "wb");
      run.layout = fopen((b + ".layout").c_str(), "w");
      if (!run.bin || !run.layout) { perror(b.c_str()); return 1; }
    }
    e.run(run);
    if (run.bin) { fclose(run.bin); fclose(run.layout); }
    printf("%s %s %016llx\n", e.id, e.labels, (unsigned long long)run.hash);
    fflush(stdout);
  }
  return 0;
}
// ==== END MAIN
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--seed', type=int, required=True)
    ap.add_argument('--kernels', type=int, default=100, help='kernels in the batch (default 100)')
    ap.add_argument('--only', help='comma-separated kernel indices: only these')
    ap.add_argument('-o', '--output', required=True)
    ap.add_argument('--manifest', help='one line per kernel: id, labels, main case')
    a = ap.parse_args()
    idx = [int(x) for x in a.only.split(',')] if a.only else list(range(a.kernels))
    text, manifest = batch(a.seed, idx)
    with open(a.output, 'w') as f:
        f.write(text)
    if a.manifest:
        with open(a.manifest, 'w') as f:
            f.write('\n'.join(manifest) + '\n')


if __name__ == '__main__':
    main()
